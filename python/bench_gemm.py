#!/usr/bin/env python3
"""Times the four GEMMs of bench_layer.py's decoder layer (hidden 4096, 32/8 heads of 128,
intermediate 14336, bfloat16; C = A B^T with B a [N, K] Linear weight) two ways on the same
inputs: the course's (cuda_course.gemm: Day 10's step 7 on compute capability 9.0) and cuBLAS
(torch.mm, which torch.compile also calls for them). Prints a table and writes it as JSON.

    python python/bench_gemm.py --tokens 512,2048,8192 --json gemm.json

Each row: the median of --iters timed calls after --warmup calls, the two timed in rounds
(bench_timing.gpu_time_rounds), each call behind an L2 flush, as bench_layer.py times the layer.
B is the layer's weight (bench_layer.make_weights: uniform at a Linear's scale), A drawn as
bench_layer.py draws its activations (uniform in [-1, 1)), and `diff` is the relative L2 difference of the two outputs: both round a float32 sum to
bfloat16, so it is 0 where the two add the same products in the same order (on the H100 it was 0
at every shape of the table) and of the order of 1e-3 where they do not.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import needs  # noqa: E402

try:  # without PyTorch, main() says what to install (needs.py) after --help had its chance
    import torch
except ImportError:
    torch = None

import cuda_course  # noqa: E402
from bench_layer import make_weights  # noqa: E402  (the layer's shapes and weights)
from bench_timing import gpu_time_rounds  # noqa: E402

# The GEMMs of the layer: name -> its weight in make_weights(), B [N, K] of C = A B^T.
GEMMS = {"qkv": "w_qkv", "o": "w_o", "gate_up": "w_gate_up", "down": "w_down"}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", default="512,2048,8192", help="rows of A, comma-separated")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--json", default="gemm.json", help="where to write the results")
    args = p.parse_args()
    needs.torch_with_gpu("bench_gemm.py")
    needs.course_library("bench_gemm.py")
    dev = torch.device("cuda")
    weights = make_weights(dev)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    rows = []
    for tokens in (int(t) for t in args.tokens.split(",")):
        for name, key in GEMMS.items():
            b = weights[key]
            n, k = b.shape
            g = torch.Generator(device=dev).manual_seed(1)
            a = (torch.rand(tokens, k, device=dev, generator=g) * 2 - 1).to(torch.bfloat16)
            c_course = torch.empty(tokens, n, device=dev, dtype=torch.bfloat16)
            c_cublas = torch.empty_like(c_course)
            fns = {"course": lambda: cuda_course.gemm(a, b, out=c_course),
                   "cublas": lambda: torch.mm(a, b.t(), out=c_cublas)}
            times = gpu_time_rounds(fns, args.warmup, args.iters, flush)
            torch.cuda.synchronize()
            flops = 2.0 * tokens * n * k
            row = {"gemm": name, "M": tokens, "N": n, "K": k,
                   "rel_diff": ((c_course.double() - c_cublas.double()).norm() /
                                c_cublas.double().norm()).item()}
            for who, (ms, spread) in times.items():
                row[f"{who}_us"] = ms * 1e3
                row[f"{who}_tflops"] = flops / (ms * 1e-3) / 1e12
                row[f"{who}_spread_percent"] = spread
            row["course_vs_cublas"] = row["cublas_us"] / row["course_us"]
            rows.append(row)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "binding": cuda_course.binding(), "rows": rows}
    print(f"{result['device']}, torch {result['torch']}: the decoder layer's GEMMs, bfloat16, "
          f"C = A B^T; the course through {result['binding']}, cuBLAS through torch.mm")
    print(f"{'gemm':>8} {'M x N x K':>20} {'course us':>10} {'TFLOP/s':>8} {'cuBLAS us':>10} "
          f"{'TFLOP/s':>8} {'x cuBLAS':>9} {'diff':>8}")
    for r in rows:
        shape = f"{r['M']} x {r['N']} x {r['K']}"
        print(f"{r['gemm']:>8} {shape:>20} {r['course_us']:10.1f} {r['course_tflops']:8.0f} "
              f"{r['cublas_us']:10.1f} {r['cublas_tflops']:8.0f} {r['course_vs_cublas']:9.3f} "
              f"{r['rel_diff']:8.1e}")
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
