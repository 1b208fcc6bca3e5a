#!/usr/bin/env python3
"""Times Day 12's prefill attention from Python (cuda_course.prefill_attention: prefill_1_mma,
the mma.sync kernel, and on compute capability 9.0 prefill_2_wgmma, the Hopper kernel) and
PyTorch's scaled_dot_product_attention with each of its fused backends (FlashAttention-2,
cuDNN, memory-efficient) on the same inputs, in one process, so that the lesson's comparison
with FlashAttention 2 is made on the card at hand rather than against a figure measured
elsewhere.

    python python/bench_attention.py --shape 4x32x4096x128 --json attention.json

Measured like Day 12's C++ benchmark (d12_solution_bench), so that the two can be compared:
the same inputs (q uniform in [-3, 3), k and v in [-1, 1): the tensor cores' power, and so the
clock, depend on the values), the L2 emptied before every timed call (a 256 MiB buffer zeroed)
and the call queued behind that, the median of --iters calls after --warmup. The backends are
timed in rounds (bench_timing.gpu_time_rounds), each once per round, so that they all meet the
same clock. FLOPs as the course's benchmark counts them: 4 * batch * heads * len^2 * dim, with
len * (len + 1) / 2 pairs instead of len^2 under the causal mask. Every output is compared with
the first backend's (relative L2 difference: bfloat16 outputs, so about 1e-3 is expected, not
0), and the course's rows say what the host spends on one call (bench_timing.host_us_per_call).
A backend that PyTorch cannot run here (no kernel for this GPU or shape) is reported as such,
not timed.
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
from bench_timing import gpu_time_rounds, host_us_per_call  # noqa: E402


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

    def uniform(lo, hi):  # Day 12's benchmark draws q in [-3, 3), k and v in [-1, 1)
        return (torch.rand(b, h, n, d, device=dev, generator=g) * (hi - lo) + lo).to(torch.bfloat16)

    # SDPA's layout [b, h, n, d]; the course's packed [b * n, h, d] holds the same values.
    q, k, v = uniform(-3.0, 3.0), uniform(-1.0, 1.0), uniform(-1.0, 1.0)
    packed = [t.transpose(1, 2).reshape(b * n, h, d).contiguous() for t in (q, k, v)]
    cu = torch.arange(0, (b + 1) * n, n, device=dev, dtype=torch.int32)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    ours = ["mma"] + (["hopper"] if torch.cuda.get_device_capability() == (9, 0) and d == 128
                      else [])
    rows = []
    for causal in (True, False):
        pairs = n * (n + 1) / 2 if causal else float(n) * n
        flops = 4.0 * b * h * pairs * d
        fns, outs, results = {}, {}, []
        for name, backend in backends():
            def run(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            try:
                outs[f"torch sdpa {name}"] = run()
            except RuntimeError as e:
                results.append({"kernel": f"torch sdpa {name}", "error": str(e).splitlines()[0]})
                continue
            fns[f"torch sdpa {name}"] = run
        for kernel in ours:
            def run(kernel=kernel):
                return cuda_course.prefill_attention(*packed, cu, n, causal=causal,
                                                     kernel=kernel)[0]
            label = f"course prefill_{'1_mma' if kernel == 'mma' else '2_wgmma'}"
            outs[label] = run().reshape(b, n, h, d).transpose(1, 2)
            if kernel == "hopper":
                cuda_course.check_mbarrier_timeouts()
            fns[label] = run
        reference = next(iter(outs.values()), None)
        timed = gpu_time_rounds(fns, args.warmup, args.iters, flush)
        for label, (ms, spread) in timed.items():
            row = {"kernel": label, "median_ms": ms, "spread_%": spread,
                   "TFLOP/s": flops / ms / 1e9, "rel_l2_vs_first": rel_l2(outs[label], reference)}
            if label.startswith("course"):
                row["host_us_per_call"] = host_us_per_call(fns[label])
            results.append(row)
        if "hopper" in ours:
            cuda_course.check_mbarrier_timeouts()  # raises if a wait gave up: rows not to be trusted
        for r in results:
            r.update({"batch": b, "heads": h, "len": n, "dim": d, "causal": causal})
        rows += results
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, the course through "
          f"{cuda_course.binding()}; batch {b}, heads {h}, len {n}, dim {d}, bfloat16")
    for r in rows:
        if "error" in r:
            print(f"  causal={int(r['causal'])} {r['kernel']:<34} not run: {r['error']}")
        else:
            diff = (f"  rel. L2 vs first {r['rel_l2_vs_first']:.1e}" if "rel_l2_vs_first" in r
                    else "")
            host = (f", host {r['host_us_per_call']:.0f} us/call" if "host_us_per_call" in r
                    else "")
            print(f"  causal={int(r['causal'])} {r['kernel']:<34} {r['TFLOP/s']:7.1f} TFLOP/s "
                  f"({r['median_ms']:.3f} ms, spread {r['spread_%']:.1f} %{host}){diff}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "binding": cuda_course.binding(), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
