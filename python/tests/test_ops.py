"""cuda_course against PyTorch on the GPU: every kernel, the layer, the caller's stream and the
trace. References are computed in float64 on the GPU from the same bfloat16 inputs, rounding to
bfloat16 where the course's kernels store bfloat16. Skipped (saying why) without PyTorch, a GPU
or the library."""

import json
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import cuda_course  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def _skip_reason():
    if torch is None:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU (torch.cuda.is_available() is False)"
    if not cuda_course.library_path().is_file():
        return (f"{cuda_course.library_path()} does not exist: build the course_py target and set "
                "CUDA_COURSE_LIB")
    return None


SKIP = _skip_reason()


def bf16(t):
    """float64 -> bfloat16 -> float64: the rounding the kernels do when they store."""
    return t.to(torch.bfloat16).to(torch.float64)


def rmsnorm_ref(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_ref(qkv, positions, heads, kv_heads, theta):
    t, width = qkv.shape
    dim = width // (heads + 2 * kv_heads)
    half = dim // 2
    inv = torch.tensor(cuda_course.rope_inv_freq(dim, theta), dtype=torch.float64,
                       device=qkv.device)
    angle = positions.to(torch.float64)[:, None] * inv[None, :]  # [T, half]
    cos, sin = torch.cos(angle)[:, None, :], torch.sin(angle)[:, None, :]
    x = qkv.view(t, heads + 2 * kv_heads, dim)
    rot = x[:, : heads + kv_heads]
    x1, x2 = rot[..., :half], rot[..., half:]
    rotated = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    return rotated[:, :heads], rotated[:, heads:], x[:, heads + kv_heads:]


def attention_ref(q, k, v, cu, causal, scale):
    """q [T, H, D], k, v [T, Hkv, D] float64 -> o [T, H, D], lse [H, T]."""
    heads, kv_heads = q.shape[1], k.shape[1]
    o = torch.zeros_like(q)
    lse = torch.full((heads, q.shape[0]), -math.inf, dtype=torch.float64, device=q.device)
    for b in range(len(cu) - 1):
        s0, s1 = cu[b], cu[b + 1]
        if s1 == s0:
            continue
        qb = q[s0:s1].transpose(0, 1)  # [H, L, D]
        kb = k[s0:s1].transpose(0, 1).repeat_interleave(heads // kv_heads, 0)
        vb = v[s0:s1].transpose(0, 1).repeat_interleave(heads // kv_heads, 0)
        s = scale * qb @ kb.transpose(1, 2)
        if causal:
            n = s1 - s0
            mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
            s = s.masked_fill(mask, -math.inf)
        lse[:, s0:s1] = torch.logsumexp(s, -1)
        o[s0:s1] = (torch.softmax(s, -1) @ vb).transpose(0, 1)
    return o, lse


def assert_close(test, got, want, rtol, atol, what):
    got = got.to(torch.float64)
    test.assertFalse(torch.isnan(got).any().item(), f"{what}: NaN in the output")
    rel = (got - want).norm() / want.norm().clamp_min(1e-30)
    test.assertLess(rel.item(), rtol, f"{what}: relative L2 error {rel.item():.3g}")
    bad = (got - want).abs() > atol + rtol * want.abs()
    test.assertFalse(bad.any().item(),
                     f"{what}: {int(bad.sum())} of {bad.numel()} elements differ, the worst by "
                     f"{(got - want).abs().max().item():.3g}")


# bfloat16 keeps 8 significant bits: one rounding is 2^-9 relative; 1.6e-2 (4 steps) per element
# and 8e-3 in norm, as the C++ tests' default for bfloat16.
RTOL, ATOL = 8e-3, 1.6e-2


@unittest.skipIf(SKIP, SKIP or "")
class Kernels(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(1234)
        self.dev = torch.device("cuda")

    def rand(self, *shape, lo=-1.0, hi=1.0):
        return (torch.rand(*shape, device=self.dev, dtype=torch.float64) * (hi - lo) + lo).to(
            torch.bfloat16)

    def test_rmsnorm_matches_pytorch(self):
        for rows, hidden in [(1, 8), (7, 4096), (33, 1000)]:
            x, w = self.rand(rows, hidden), self.rand(hidden, lo=0.5, hi=1.5)
            got = cuda_course.rmsnorm(x, w, 1e-5)
            want = rmsnorm_ref(x.double(), w.double(), 1e-5)
            assert_close(self, got, want, RTOL, ATOL, f"rmsnorm {rows}x{hidden}")

    def test_fused_add_rmsnorm_updates_the_residual(self):
        x, r, w = self.rand(5, 256), self.rand(5, 256), self.rand(256, lo=0.5, hi=1.5)
        total = x.double() + r.double()
        got = cuda_course.fused_add_rmsnorm(x, r, w, 1e-5)
        assert_close(self, r, total, RTOL, ATOL, "residual")
        assert_close(self, got, rmsnorm_ref(total, w.double(), 1e-5), RTOL, ATOL, "y")

    def test_gemm_matches_pytorch(self):
        for m, n, k in [(1, 8, 8), (77, 130, 256), (256, 512, 1024)]:
            a, b = self.rand(m, k), self.rand(n, k)
            got = cuda_course.gemm(a, b)
            want = a.double() @ b.double().T
            # K products of bfloat16 values summed in float32: the output rounding dominates.
            assert_close(self, got, want, RTOL, ATOL * math.sqrt(k / 8), f"gemm {m}x{n}x{k}")

    def check_prefill(self, lengths, heads, kv_heads, dim, causal, kernel):
        """One packed batch of `lengths` through prefill_attention(kernel=...) against the
        float64 reference."""
        total = sum(lengths)
        q = self.rand(total, heads, dim, lo=-3, hi=3)
        k, v = self.rand(total, kv_heads, dim), self.rand(total, kv_heads, dim)
        cu = [0]
        for n in lengths:
            cu.append(cu[-1] + n)
        cu_t = torch.tensor(cu, dtype=torch.int32, device=self.dev)
        o, lse = cuda_course.prefill_attention(q, k, v, cu_t, max(lengths), causal=causal,
                                               kernel=kernel)
        if kernel == "hopper":
            cuda_course.check_mbarrier_timeouts()
        want_o, want_lse = attention_ref(q.double(), k.double(), v.double(), cu, causal,
                                         1 / math.sqrt(dim))
        what = f"{kernel} attention, dim {dim}, causal {causal}"
        assert_close(self, o, want_o, RTOL, ATOL, f"o of the {what}")
        assert_close(self, lse, want_lse, 2e-5, 2e-4, f"lse of the {what}")

    def test_prefill_attention_matches_pytorch(self):
        for dim in (64, 128):
            self.check_prefill([33, 1, 200], 4, 2, dim, True, "mma")

    def test_prefill_attention_hopper_matches_pytorch(self):
        """Exercise 6's kernel (TMA + wgmma), reached from Python: head dim 128, sm_90a only."""
        if torch.cuda.get_device_capability(self.dev) != (9, 0):
            self.skipTest("the Hopper kernel needs compute capability 9.0")
        for causal in (True, False):
            self.check_prefill([33, 1, 200, 129], 4, 2, 128, causal, "hopper")

    def test_prefill_attention_refuses_a_kernel_it_does_not_have(self):
        q = self.rand(4, 2, 64)
        cu_t = torch.tensor([0, 4], dtype=torch.int32, device=self.dev)
        with self.assertRaisesRegex(ValueError, r"^kernel: one of mma, hopper, got 'wgmma'"):
            cuda_course.prefill_attention(q, q, q, cu_t, 4, kernel="wgmma")
        with self.assertRaisesRegex(ValueError, r"^q: head_dim must be 128 for the hopper"):
            cuda_course.prefill_attention(q, q, q, cu_t, 4, kernel="hopper")

    def test_rope_qkv_matches_pytorch(self):
        for tokens, heads, kv_heads, dim in [(1, 1, 1, 64), (37, 4, 2, 128), (300, 8, 8, 64)]:
            qkv = self.rand(tokens, (heads + 2 * kv_heads) * dim, lo=-2, hi=2)
            pos = torch.randint(0, 8192, (tokens,), dtype=torch.int32, device=self.dev)
            q, k, v = cuda_course.rope_qkv(qkv, pos, heads, kv_heads, theta=500000.0)
            wq, wk, wv = rope_ref(qkv.double(), pos, heads, kv_heads, 500000.0)
            for got, want, name in [(q, wq, "q"), (k, wk, "k"), (v, wv, "v")]:
                assert_close(self, got, want, RTOL, ATOL, f"rope {name}, {tokens} tokens")

    def test_silu_and_mul_matches_pytorch(self):
        for tokens, inter in [(1, 1), (9, 344), (64, 14336), (3, 1001)]:
            gu = self.rand(tokens, 2 * inter, lo=-6, hi=6)
            got = cuda_course.silu_and_mul(gu)
            g, u = gu.double()[:, :inter], gu.double()[:, inter:]
            assert_close(self, got, torch.nn.functional.silu(g) * u, RTOL, ATOL,
                         f"silu_and_mul {tokens}x{inter}")

    def test_argument_errors_name_the_argument(self):
        x = self.rand(4, 64)
        with self.assertRaisesRegex(TypeError, r"^x: expected dtype bfloat16, got float32"):
            cuda_course.rmsnorm(x.float(), self.rand(64))
        with self.assertRaisesRegex(ValueError, r"^weight: expected shape \(64,\)"):
            cuda_course.rmsnorm(x, self.rand(63))
        with self.assertRaisesRegex(ValueError, r"^a: must be contiguous"):
            cuda_course.gemm(self.rand(64, 16).T, self.rand(8, 64), out=self.rand(16, 8))
        with self.assertRaisesRegex(ValueError, r"^x: must be on a CUDA device"):
            cuda_course.rmsnorm(x.cpu(), self.rand(64))


def make_layer(dev, hidden, heads, kv_heads, dim, inter, seed):
    g = torch.Generator(device=dev).manual_seed(seed)

    def uni(shape, lo, hi):
        t = torch.rand(*shape, device=dev, dtype=torch.float64, generator=g)
        return (t * (hi - lo) + lo).to(torch.bfloat16)

    def lin(out_features, in_features):  # unit-size outputs: uniform in +-sqrt(3 / fan_in)
        a = math.sqrt(3.0 / in_features)
        return uni((out_features, in_features), -a, a)

    return {
        "attn_norm": uni((hidden,), 0.5, 1.5), "mlp_norm": uni((hidden,), 0.5, 1.5),
        "w_qkv": lin((heads + 2 * kv_heads) * dim, hidden), "w_o": lin(hidden, heads * dim),
        "w_gate_up": lin(2 * inter, hidden), "w_down": lin(hidden, inter),
    }


def layer_ref(x, residual, w, batch, seq_len, heads, kv_heads, eps, theta):
    """The layer in float64, rounding to bfloat16 where the course's layer stores bfloat16."""
    d = {k: t.double() for k, t in w.items()}
    total = x.double() + residual.double()
    res1 = bf16(total)
    h = bf16(rmsnorm_ref(total, d["attn_norm"], eps))
    qkv = bf16(h @ d["w_qkv"].T)
    dim = qkv.shape[1] // (heads + 2 * kv_heads)
    pos = torch.arange(batch * seq_len, device=x.device) % seq_len
    q, k, v = rope_ref(qkv, pos, heads, kv_heads, theta)
    q, k = bf16(q), bf16(k)
    cu = [b * seq_len for b in range(batch + 1)]
    scale = float(torch.tensor(1.0 / math.sqrt(dim), dtype=torch.float32))
    o, _ = attention_ref(q, k, v, cu, True, scale)
    attn = bf16(o.reshape(batch * seq_len, heads * dim))
    proj = bf16(attn @ d["w_o"].T)
    total2 = res1 + proj
    h2 = bf16(rmsnorm_ref(total2, d["mlp_norm"], eps))
    gu = bf16(h2 @ d["w_gate_up"].T)
    inter = gu.shape[1] // 2
    act = bf16(torch.nn.functional.silu(gu[:, :inter]) * gu[:, inter:])
    return bf16(act @ d["w_down"].T), bf16(total2)


# The layer after nine bfloat16 stages: as the C++ test's kLayerTolerance (1.5x the defaults).
LAYER_RTOL, LAYER_ATOL = 1.2e-2, 2.4e-2


@unittest.skipIf(SKIP, SKIP or "")
class Layer(unittest.TestCase):
    def run_layer(self, hidden, heads, kv_heads, dim, inter, batch, seq_len, stream=None,
                  trace_path=None):
        dev = torch.device("cuda")
        w = make_layer(dev, hidden, heads, kv_heads, dim, inter, seed=7)
        x = (torch.rand(batch * seq_len, hidden, device=dev) * 2 - 1).to(torch.bfloat16)
        residual = (torch.rand(batch * seq_len, hidden, device=dev) * 2 - 1).to(torch.bfloat16)
        want_out, want_res = layer_ref(x, residual, w, batch, seq_len, heads, kv_heads, 1e-5,
                                       10000.0)
        res = residual.clone()
        if stream is None:
            out = cuda_course.decoder_layer(x, res, w, batch, seq_len, heads, kv_heads,
                                            trace_path=trace_path)
        else:
            # The side stream must not run ahead of the default stream's work that made x and
            # residual (PyTorch's rule for every side stream: the caller orders them).
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                out = cuda_course.decoder_layer(x, res, w, batch, seq_len, heads, kv_heads)
                out = out.clone()  # queued on the side stream, after the layer
            torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        assert_close(self, res, want_res, LAYER_RTOL, LAYER_ATOL, "residual")
        assert_close(self, out, want_out, LAYER_RTOL, LAYER_ATOL, "out")

    def test_small_layer_matches_pytorch(self):
        self.run_layer(256, 2, 2, 128, 344, batch=2, seq_len=33)

    def test_grouped_query_layer_matches_pytorch(self):
        self.run_layer(256, 4, 2, 64, 344, batch=3, seq_len=70)

    def test_layer_honours_the_current_stream(self):
        self.run_layer(256, 2, 1, 128, 256, batch=2, seq_len=47, stream=torch.cuda.Stream())

    def test_trace_is_chrome_json_with_every_stage(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "layer.json")
            self.run_layer(256, 2, 2, 128, 344, batch=2, seq_len=33, trace_path=path)
            with open(path) as f:
                trace = json.load(f)
        events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
        self.assertEqual([e["name"] for e in events], list(cuda_course.STAGES))
        for e in events:
            self.assertGreaterEqual(e["dur"], 0.0, e["name"])
            self.assertGreaterEqual(e["ts"], 0.0, e["name"])


if __name__ == "__main__":
    unittest.main()
