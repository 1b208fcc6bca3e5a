#!/usr/bin/env python3
"""Times one Llama-3-8B-shaped decoder layer (hidden 4096, 32 query / 8 KV heads of 128,
intermediate 14336, bfloat16, causal prefill of batch x len tokens) three ways on the same
inputs: PyTorch eager, torch.compile of the same function, and the course's layer
(cuda_course.decoder_layer). Prints a table and writes it as JSON for plot_layer.py.

    python python/bench_layer.py --shapes 1x512,4x512,4x2048 --json layer.json

Each row: the median of --iters timed calls after --warmup calls, measured like Day 14's C++
benchmark (BM_decoder_layer): the L2 emptied before every call (a 256 MiB buffer zeroed) and the
call queued behind that, CUDA events around the call. The three are timed in rounds
(bench_timing.gpu_time_rounds), each once per round, so that they meet the same GPU clock. Also:
what the host spends on one call of each (bench_timing.host_us_per_call: Python, the
framework's or binding's work and the launches), and the course's output compared with eager's
(relative L2 difference: both are bfloat16 layers, so about 1e-2 is expected, not 0).
"""

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import needs  # noqa: E402

try:  # without PyTorch, main() says what to install (needs.py) after --help had its chance
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = F = None

import cuda_course  # noqa: E402
from bench_timing import gpu_time_rounds, host_us_per_call  # noqa: E402

HIDDEN, HEADS, KV_HEADS, DIM, INTER = 4096, 32, 8, 128, 14336
EPS, THETA = 1e-5, 500000.0


def make_weights(dev):
    g = torch.Generator(device=dev).manual_seed(0)

    def uni(shape, lo, hi):
        return (torch.rand(*shape, device=dev, generator=g) * (hi - lo) + lo).to(torch.bfloat16)

    def lin(o, i):
        a = math.sqrt(3.0 / i)
        return uni((o, i), -a, a)

    return {
        "attn_norm": uni((HIDDEN,), 0.5, 1.5), "mlp_norm": uni((HIDDEN,), 0.5, 1.5),
        "w_qkv": lin((HEADS + 2 * KV_HEADS) * DIM, HIDDEN), "w_o": lin(HIDDEN, HEADS * DIM),
        "w_gate_up": lin(2 * INTER, HIDDEN), "w_down": lin(HIDDEN, INTER),
    }


def rope_tables(seq_len, dev):
    inv = torch.tensor(cuda_course.rope_inv_freq(DIM, THETA), dtype=torch.float64, device=dev)
    angle = torch.arange(seq_len, device=dev, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(angle).float(), torch.sin(angle).float()  # [L, D/2]


def rmsnorm(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype) * w


def rotate(x, cos, sin):  # x [B, L, heads, D]
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).to(x.dtype)


def torch_layer(x, residual, w, cos, sin, batch, seq_len):
    """The same layer in plain PyTorch (what an eager framework runs)."""
    residual = x + residual
    h = rmsnorm(residual, w["attn_norm"])
    qkv = F.linear(h, w["w_qkv"]).view(batch, seq_len, HEADS + 2 * KV_HEADS, DIM)
    q = rotate(qkv[:, :, :HEADS], cos, sin).transpose(1, 2)
    k = rotate(qkv[:, :, HEADS:HEADS + KV_HEADS], cos, sin).transpose(1, 2)
    v = qkv[:, :, HEADS + KV_HEADS:].transpose(1, 2)
    group = HEADS // KV_HEADS
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o = F.linear(a.transpose(1, 2).reshape(batch * seq_len, HEADS * DIM), w["w_o"])
    residual = residual + o
    h = rmsnorm(residual, w["mlp_norm"])
    gate, up = F.linear(h, w["w_gate_up"]).chunk(2, dim=-1)
    return F.linear(F.silu(gate) * up, w["w_down"]), residual


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="1x512,4x512,4x2048", help="batch x len, comma-separated")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--json", default="layer.json", help="where to write the results")
    p.add_argument("--trace", help="also write the course layer's stages, for the last shape, as a "
                   "Chrome trace (open it in Perfetto or chrome://tracing)")
    args = p.parse_args()
    needs.torch_with_gpu("bench_layer.py")
    needs.course_library("bench_layer.py")
    dev = torch.device("cuda")
    w = make_weights(dev)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    compiled = None if args.no_compile else torch.compile(torch_layer)
    rows = []
    for shape in args.shapes.split(","):
        batch, seq_len = (int(s) for s in shape.lower().split("x"))
        tokens = batch * seq_len
        g = torch.Generator(device=dev).manual_seed(1)
        x = (torch.rand(tokens, HIDDEN, device=dev, generator=g) * 2 - 1).to(torch.bfloat16)
        residual = (torch.rand(tokens, HIDDEN, device=dev, generator=g) * 2 - 1).to(torch.bfloat16)
        cos, sin = rope_tables(seq_len, dev)
        row = {"batch": batch, "len": seq_len, "tokens": tokens}

        compiled_fn = None
        if compiled is not None:
            try:  # the first call compiles (and fails here, if it is going to)
                compiled(x, residual, w, cos, sin, batch, seq_len)
                compiled_fn = lambda: compiled(x, residual, w, cos, sin, batch, seq_len)  # noqa: E731
            except Exception as e:  # no Triton, no compiler: say so in the table
                row["compile_error"] = f"{type(e).__name__}: {e}"[:300]
        ws = torch.empty(cuda_course.layer_workspace_bytes(HIDDEN, HEADS, KV_HEADS, DIM, INTER,
                                                           batch, seq_len),
                         dtype=torch.uint8, device=dev)
        out = torch.empty_like(x)
        res = residual.clone()
        # The course's layer updates res in place; each timed call adds to it again, which
        # changes the values, not the work.
        fns = {
            "eager": lambda: torch_layer(x, residual, w, cos, sin, batch, seq_len),
            "course": lambda: cuda_course.decoder_layer(x, res, w, batch, seq_len, HEADS,
                                                        KV_HEADS, EPS, THETA, out=out,
                                                        workspace=ws),
        }
        if compiled_fn is not None:
            fns["compile"] = compiled_fn
        for name, (ms, _) in gpu_time_rounds(fns, args.warmup, args.iters, flush).items():
            row[f"{name}_ms"] = ms
        for name, fn in fns.items():
            row[f"{name}_host_us"] = host_us_per_call(fn)

        res.copy_(residual)
        cuda_course.decoder_layer(x, res, w, batch, seq_len, HEADS, KV_HEADS, EPS, THETA, out=out,
                                  workspace=ws, trace_path=args.trace)
        want, want_res = torch_layer(x, residual, w, cos, sin, batch, seq_len)
        torch.cuda.synchronize()
        row["rel_diff_vs_eager"] = ((out.double() - want.double()).norm() /
                                    want.double().norm()).item()
        row["residual_rel_diff_vs_eager"] = ((res.double() - want_res.double()).norm() /
                                             want_res.double().norm()).item()
        row["speedup_vs_eager"] = row["eager_ms"] / row["course_ms"]
        if "compile_ms" in row:
            row["speedup_vs_compile"] = row["compile_ms"] / row["course_ms"]
            row["compile_speedup_vs_eager"] = row["eager_ms"] / row["compile_ms"]
        rows.append(row)

    result = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "binding": cuda_course.binding(),
        "shape": {"hidden": HIDDEN, "heads": HEADS, "kv_heads": KV_HEADS, "head_dim": DIM,
                  "intermediate": INTER, "dtype": "bfloat16"},
        "rows": rows,
    }
    print(f"{result['device']}, torch {result['torch']}: one decoder layer, hidden {HIDDEN}, "
          f"{HEADS}/{KV_HEADS} heads of {DIM}, intermediate {INTER}, bfloat16; the course "
          f"through {result['binding']}")
    print(f"{'batch x len':>12} {'eager ms':>9} {'compile ms':>11} {'course ms':>10} "
          f"{'x eager':>8} {'x compile':>10} {'diff':>8}   host us/call (eager, compile, course)")
    for r in rows:
        compile_ms = (f"{r['compile_ms']:.3f}" if "compile_ms" in r else
                      "failed" if "compile_error" in r else "skipped")
        vs_compile = f"{r['speedup_vs_compile']:.2f}" if "speedup_vs_compile" in r else "-"
        hosts = ", ".join(f"{r[k + '_host_us']:.0f}" if k + "_host_us" in r else "-"
                          for k in ("eager", "compile", "course"))
        print(f"{r['batch']:>5} x {r['len']:<5} {r['eager_ms']:9.3f} {compile_ms:>11} "
              f"{r['course_ms']:10.3f} {r['speedup_vs_eager']:8.2f} {vs_compile:>10} "
              f"{r['rel_diff_vs_eager']:8.1e}   {hosts}")
        if "compile_error" in r:
            print(f"      torch.compile failed: {r['compile_error']}")
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
