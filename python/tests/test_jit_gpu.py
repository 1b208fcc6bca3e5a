"""cuda_course.jit on the GPU, against float64 references computed by PyTorch from the same
inputs, with the course's tolerances (common/course/dtype.h: a bound on the relative L2 error
and one per element, |got - ref| <= elem * (|ref| + rms(ref))). Also: the caller's stream is
honoured, a second call compiles nothing, an unaligned tensor gets (and passes with) the
1-element specialisation. Skipped, saying why, without PyTorch, a GPU, nvcc or the JIT's
packages. The modules are compiled into a fresh cache folder, side by side before each class's
tests (jit.compile_all)."""

import math
import unittest

from jit_support import FreshCacheTest, gpu_missing

from cuda_course import jit

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

SKIP = gpu_missing()

LSE_TOLERANCE = (1e-5, 1e-5)  # Day 11's kLseTolerance


def assert_close(test, got, ref, dtype, what, tolerance=None):
    """The course's comparison (cuda_course.reference.compare, course/compare.h's rules) of a
    `dtype` output with its float64 reference, on the host (numpy: there with PyTorch)."""
    from cuda_course import reference  # noqa: PLC0415

    problem = reference.compare(got.double().flatten().cpu().numpy(),
                                ref.double().flatten().cpu().numpy(), dtype, what, tolerance)
    if problem:
        test.fail(problem)


DT = {"float32": None, "float16": None, "bfloat16": None}
if torch is not None:
    DT = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@unittest.skipIf(SKIP, SKIP or "")
class GpuRmsNorm(FreshCacheTest):
    CACHE_PREFIX = "cuda_course_jit_gpu_"
    SIZES = ((37, 4096), (5, 1000), (9, 128), (3, 16384), (64, 5120), (2, 1))

    @classmethod
    def setUpClass(cls):
        # The specialisations the tests below call, compiled side by side first (each call then
        # loads its entry from disk; one the list misses is compiled at its call, as usual).
        super().setUpClass()
        specs = [jit.rmsnorm_spec(d, h) for d in DT for _, h in cls.SIZES]
        specs += [jit.rmsnorm_spec(d, 2048, fused_add=True) for d in DT]
        specs += [jit.rmsnorm_spec("bfloat16", 4096, 1), jit.rmsnorm_spec("bfloat16", 3072)]
        jit.compile_all(cache=cls.cache, specs=specs)

    def inputs(self, dtype, rows, hidden, offset=0):
        g = torch.Generator(device="cuda").manual_seed(rows * 7 + hidden)
        buf = (torch.rand(rows * hidden + offset, device="cuda", generator=g) * 4 - 2)
        x = buf.to(DT[dtype])[offset:].view(rows, hidden)
        w = (torch.rand(hidden, device="cuda", generator=g) + 0.5).to(DT[dtype])
        return x, w

    @staticmethod
    def ref(x64, w64, eps):
        return x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w64

    def test_rmsnorm_every_dtype_and_size_class(self):
        for dtype in ("bfloat16", "float16", "float32"):
            for rows, hidden in self.SIZES:
                with self.subTest(dtype=dtype, rows=rows, hidden=hidden):
                    x, w = self.inputs(dtype, rows, hidden)
                    y = jit.rmsnorm(x, w, 1e-5, cache=self.cache)
                    self.assertEqual((y.dtype, y.shape), (x.dtype, x.shape))
                    assert_close(self, y, self.ref(x.double(), w.double(), 1e-5),
                                 dtype, f"rmsnorm {dtype} {rows}x{hidden}")

    def test_an_unaligned_tensor_gets_the_one_element_variant(self):
        x, w = self.inputs("bfloat16", 7, 4096, offset=1)  # 2 bytes past a 16-byte boundary
        before = self.cache.stats["compiles"]
        y = jit.rmsnorm(x, w, cache=self.cache)
        assert_close(self, y, self.ref(x.double(), w.double(), 1e-5), "bfloat16",
                     "rmsnorm, unaligned x")
        names = [p.name for p in self.cache.root.iterdir() if p.is_dir()]
        self.assertTrue(any(n.startswith("rmsnorm_bf16_h4096_v1_") for n in names), names)
        self.assertGreaterEqual(self.cache.stats["compiles"], before)

    def test_fused_add_rmsnorm_and_out_aliasing_x(self):
        for dtype in ("bfloat16", "float16", "float32"):
            x, w = self.inputs(dtype, 33, 2048)
            r, _ = self.inputs(dtype, 33, 2048, offset=8)
            r = r.clone()
            s64 = x.double() + r.double()
            want = self.ref(s64, w.double(), 1e-6)
            want_r = (x.float() + r.float()).to(DT[dtype])  # the kernel's float32 sum, rounded
            y = jit.fused_add_rmsnorm(x, r, w, 1e-6, cache=self.cache)
            assert_close(self, y, want, dtype, f"fused_add_rmsnorm {dtype}")
            self.assertTrue(torch.equal(r, want_r), "residual = x + residual, rounded once")
            r2 = (r.double() - x.double()).to(DT[dtype])  # a fresh residual
            x2 = x.clone()
            want = self.ref(x2.double() + r2.double(), w.double(), 1e-6)
            out = jit.fused_add_rmsnorm(x2, r2, w, 1e-6, out=x2, cache=self.cache)
            self.assertEqual(out.data_ptr(), x2.data_ptr())
            assert_close(self, x2, want, dtype, f"fused_add_rmsnorm {dtype}, out=x")

    def test_a_second_call_compiles_nothing(self):
        x, w = self.inputs("bfloat16", 4, 3072)
        jit.rmsnorm(x, w, cache=self.cache)
        compiles = self.cache.stats["compiles"]
        for _ in range(3):
            jit.rmsnorm(x, w, cache=self.cache)
        self.assertEqual(self.cache.stats["compiles"], compiles)
        warm = jit.JitCache(self.cache.root)  # another process, same folder
        jit.rmsnorm(x, w, cache=warm)
        self.assertEqual((warm.stats["compiles"], warm.stats["disk_hits"]), (0, 1))

    def test_the_current_stream_is_used(self):
        x, w = self.inputs("bfloat16", 4096, 4096)
        jit.rmsnorm(x, w, cache=self.cache)  # compiled and warm
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        src = x.clone()
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            x2 = torch.empty_like(x)
            torch.cuda._sleep(50_000_000)  # the side stream is busy for a while ...
            x2.copy_(src)  # ... then writes the input: a kernel on another stream would read junk
            y = jit.rmsnorm(x2, w, cache=self.cache)
        torch.cuda.current_stream().wait_stream(side)
        assert_close(self, y, self.ref(src.double(), w.double(), 1e-5), "bfloat16",
                     "rmsnorm on a side stream")


def paged_cache(batch_lengths, page_size, kv_heads, dim, dtype, seed=0):
    """K and V caches with each sequence's pages in shuffled places, and the CSR table."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    pages_per_seq = [max(1, math.ceil(n / page_size)) for n in batch_lengths]
    total = sum(pages_per_seq) + 3  # a few pages no sequence uses
    perm = torch.randperm(total, generator=torch.Generator().manual_seed(seed)).tolist()
    k = (torch.rand(total, page_size, kv_heads, dim, device="cuda", generator=g) * 2 - 1)
    v = (torch.rand(total, page_size, kv_heads, dim, device="cuda", generator=g) * 2 - 1)
    indptr, indices, last = [0], [], []
    for n, p in zip(batch_lengths, pages_per_seq):
        indices += perm[:p]
        perm = perm[p:]
        indptr.append(indptr[-1] + p)
        last.append(n - (p - 1) * page_size)
    as_i32 = lambda values: torch.tensor(values, dtype=torch.int32, device="cuda")  # noqa: E731
    return k.to(DT[dtype]), v.to(DT[dtype]), as_i32(indptr), as_i32(indices), as_i32(last)


def decode_ref(q, k, v, indptr, indices, last, scale):
    """float64 o [B, Hq, D] and lse [B, Hq] (natural log)."""
    batch, heads, dim = q.shape
    page_size, kv_heads = k.shape[1], k.shape[2]
    group = heads // kv_heads
    o = torch.empty(batch, heads, dim, dtype=torch.float64, device=q.device)
    lse = torch.empty(batch, heads, dtype=torch.float64, device=q.device)
    indptr, indices, last = indptr.tolist(), indices.tolist(), last.tolist()
    for b in range(batch):
        pages = indices[indptr[b]:indptr[b + 1]]
        n = (len(pages) - 1) * page_size + last[b]
        kb = k[pages].reshape(-1, kv_heads, dim)[:n].double()  # [n, Hkv, D]
        vb = v[pages].reshape(-1, kv_heads, dim)[:n].double()
        kb = kb.repeat_interleave(group, dim=1)  # [n, Hq, D]
        vb = vb.repeat_interleave(group, dim=1)
        s = scale * torch.einsum("hd,nhd->hn", q[b].double(), kb)
        lse[b] = torch.logsumexp(s, -1)
        o[b] = torch.einsum("hn,nhd->hd", torch.softmax(s, -1), vb)
    return o, lse


@unittest.skipIf(SKIP, SKIP or "")
class GpuDecodeAttention(FreshCacheTest):
    CACHE_PREFIX = "cuda_course_jit_gpu_"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()  # as GpuRmsNorm's: the specialisations below, side by side first
        specs = [jit.decode_spec(d, dim, g) for d in ("bfloat16", "float16") for dim in (64, 128)
                 for g in (1, 4, 8)]
        specs += [jit.decode_spec("bfloat16", 128, g) for g in (2, 3, 5)]
        jit.compile_all(cache=cls.cache, specs=specs)

    def check(self, dtype, dim, group, lengths, page_size=16, kv_heads=2, splits=1, seed=0):
        k, v, indptr, indices, last = paged_cache(lengths, page_size, kv_heads, dim, dtype, seed)
        g = torch.Generator(device="cuda").manual_seed(seed + 1)
        q = (torch.rand(len(lengths), kv_heads * group, dim, device="cuda", generator=g) * 2 - 1)
        q = q.to(DT[dtype])
        scale = 1.0 / math.sqrt(dim)
        o, lse = jit.decode_attention(q, k, v, indptr, indices, last, num_splits=splits,
                                      cache=self.cache)
        want_o, want_lse = decode_ref(q, k, v, indptr, indices, last, scale)
        what = f"decode {dtype} d{dim} g{group} splits {splits} lengths {lengths}"
        assert_close(self, o, want_o, dtype, what + " (o)")
        assert_close(self, lse, want_lse, "float32", what + " (lse)", LSE_TOLERANCE)

    def test_every_dtype_head_dim_and_group_size(self):
        for dtype in ("bfloat16", "float16"):
            for dim in (64, 128):
                for group in (1, 4, 8):
                    with self.subTest(dtype=dtype, dim=dim, group=group):
                        self.check(dtype, dim, group, [1, 37, 300])

    def test_group_sizes_day_11_does_not_compile(self):
        for group in (2, 3, 5):
            with self.subTest(group=group):
                self.check("bfloat16", 128, group, [17, 129])

    def test_split_kv_with_empty_splits_and_page_size_1(self):
        self.check("bfloat16", 128, 4, [1, 40, 1000], splits=7)
        self.check("float16", 64, 8, [3, 250], page_size=1, splits=4)
        self.check("bfloat16", 128, 1, [5000], kv_heads=8, splits=32)

    def test_a_bad_page_table_is_a_message(self):
        k, v, indptr, indices, last = paged_cache([20, 5], 16, 2, 128, "bfloat16")
        q = torch.zeros(2, 8, 128, dtype=torch.bfloat16, device="cuda")
        bad = indices.clone()
        bad[0] = k.shape[0]
        with self.assertRaisesRegex(ValueError, r"page_indices\[0\] = \d+ is out of range"):
            jit.decode_attention(q, k, v, indptr, bad, last, cache=self.cache)
        with self.assertRaisesRegex(ValueError, r"last_page_len\[1\] = 17 does not fit"):
            jit.decode_attention(q, k, v, indptr, indices,
                                 torch.tensor([4, 17], dtype=torch.int32, device="cuda"),
                                 cache=self.cache)


if __name__ == "__main__":
    unittest.main()
