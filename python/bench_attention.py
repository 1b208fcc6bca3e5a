#!/usr/bin/env python3
"""Times Day 12's prefill attention (cuda_course.prefill_attention: prefill_1_mma, the mma.sync
kernel) and PyTorch's scaled_dot_product_attention with each of its fused backends
(FlashAttention-2, cuDNN, memory-efficient) on the same inputs, in one process, so that the
lesson's comparison with FlashAttention 2 is made on the card at hand rather than against a
figure measured elsewhere.

    python python/bench_attention.py --shape 4x32x4096x128 --json attention.json

Each row: the median of --iters calls, each timed alone with CUDA events after the L2 was
emptied (a 256 MiB buffer written before it), after --warmup calls. FLOPs as the course's
benchmark counts them: 4 * batch * heads * len^2 * dim, with len * (len + 1) / 2 pairs instead of
len^2 under the causal mask. Every backend's output is compared with FlashAttention 2's
(relative L2 difference: bfloat16 outputs, so about 1e-3 is expected, not 0). A backend that
PyTorch cannot run here (no kernel for this GPU or shape) is reported as such, not timed.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import needs  # noqa: E402

try:  # without PyTorch, main() says what to install (needs.py) after --help had its chance
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:
    torch = F = SDPBackend = sdpa_kernel = None

import cuda_course  # noqa: E402
from bench_timing import gpu_time_ms  # noqa: E402


def backends():
    return (("flash (FlashAttention 2)", SDPBackend.FLASH_ATTENTION),
            ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("efficient", SDPBackend.EFFICIENT_ATTENTION))


def parse_shape(text):
    try:
        b, h, n, d = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: want BATCHxHEADSxLENxDIM, e.g. 4x32x4096x128")
    if min(b, h, n, d) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: every size must be at least 1")
    return b, h, n, d


def rel_l2(a, b):
    a, b = a.float(), b.float()
    return (torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b)).item()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", type=parse_shape, default=(4, 32, 4096, 128))
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--json", help="also write the rows here")
    args = p.parse_args(argv)
    needs.torch_with_gpu("bench_attention.py")
    needs.course_library("bench_attention.py")
    b, h, n, d = args.shape
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    # SDPA's layout [b, h, n, d]; the course's packed [b * n, h, d] holds the same values.
    q, k, v = (torch.randn(b, h, n, d, device=dev, generator=g).to(torch.bfloat16)
               for _ in range(3))
    packed = [t.transpose(1, 2).reshape(b * n, h, d).contiguous() for t in (q, k, v)]
    cu = torch.arange(0, (b + 1) * n, n, device=dev, dtype=torch.int32)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    rows = []
    for causal in (True, False):
        pairs = n * (n + 1) / 2 if causal else float(n) * n
        flops = 4.0 * b * h * pairs * d
        reference = None
        results = []
        for name, backend in backends():
            def run(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            try:
                out = run()
            except RuntimeError as e:
                results.append({"kernel": f"torch sdpa {name}", "error": str(e).splitlines()[0]})
                continue
            if reference is None:
                reference = out
            ms, spread = gpu_time_ms(run, args.warmup, args.iters, flush)
            results.append({"kernel": f"torch sdpa {name}", "median_ms": ms, "spread_%": spread,
                            "TFLOP/s": flops / ms / 1e9,
                            "rel_l2_vs_first": rel_l2(out, reference)})

        def ours():
            return cuda_course.prefill_attention(*packed, cu, n, causal=causal)[0]
        out = ours().reshape(b, n, h, d).transpose(1, 2)
        ms, spread = gpu_time_ms(ours, args.warmup, args.iters, flush)
        row = {"kernel": "course prefill_1_mma", "median_ms": ms, "spread_%": spread,
               "TFLOP/s": flops / ms / 1e9}
        if reference is not None:
            row["rel_l2_vs_first"] = rel_l2(out, reference)
        results.append(row)
        for r in results:
            r.update({"batch": b, "heads": h, "len": n, "dim": d, "causal": causal})
        rows += results
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; batch {b}, heads {h}, "
          f"len {n}, dim {d}, bfloat16")
    for r in rows:
        if "error" in r:
            print(f"  causal={int(r['causal'])} {r['kernel']:<34} not run: {r['error']}")
        else:
            diff = (f"  rel. L2 vs first {r['rel_l2_vs_first']:.1e}" if "rel_l2_vs_first" in r
                    else "")
            print(f"  causal={int(r['causal'])} {r['kernel']:<34} {r['TFLOP/s']:7.1f} TFLOP/s "
                  f"({r['median_ms']:.3f} ms, spread {r['spread_%']:.1f} %){diff}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
