#!/usr/bin/env python3
"""Times three of the course's memory-bound operations four ways, in one process, on the same
inputs, by one method: the course's CUDA solution (cuda_course), the same operation in Triton
(cuda_course.triton_ops, autotuned), PyTorch eager and torch.compile of the eager function.
Prints GB/s and the percentage of the copy ceiling, and writes them as JSON for plot_triton.py
(lesson 14 §9).

    python python/bench_triton.py --json triton.json

The operations, at the course's headline shapes (each day's benchmark marks the same one):
  add_bias_gelu  float32 8192 x 8192   Day 2's add_bias_gelu_fused; eager: gelu(x + bias), two
                                       kernels
  softmax        float32 8192 x 8192   Day 5's softmax_2_block_per_row; eager: torch.softmax
  rmsnorm        bfloat16 16384 x 4096 Day 6's rmsnorm; eager: F.rms_norm

The method: every time is triton.testing.do_bench's median, which zeroes a 256 MiB buffer
before each timed call (the L2 cache holds none of the inputs) and times the call alone with
CUDA events; the copy ceiling is a device-to-device copy (tensor.copy_) timed the same way.
Bytes are the least each operation must move: every input read once, every output written once
(the ceiling's: the copy's source read and its destination written). The zeroing before each
call also hides the host's own time (Python, the bindings' checks) behind GPU work, so the
four are compared on the GPU's time.

Verified before timed: every implementation's output on sampled rows against the float64
reference (cuda_course.reference, the tolerances of the course's C++ tests), and again after
timing; a wrong output is an error row, never a speed. Inputs are drawn from a fresh seed in
every process (printed, and in the JSON; --seed repeats one).
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
except ImportError:
    torch = F = None

import cuda_course  # noqa: E402

OPERATIONS = {
    # op: (what the lesson calls it, rows, cols, dtype, the eager function, as code)
    "add_bias_gelu": ("add-bias + GeLU (Day 2)", 8192, 8192, "float32",
                      "F.gelu(x + bias, approximate='tanh')"),
    "softmax": ("row softmax (Day 5)", 8192, 8192, "float32", "torch.softmax(x, dim=-1)"),
    "rmsnorm": ("RMSNorm (Day 6)", 16384, 4096, "bfloat16",
                "F.rms_norm(x, (hidden,), weight, eps)"),
}
IMPLEMENTATIONS = {"cuda": "CUDA solution", "triton": "Triton", "eager": "PyTorch eager",
                   "compile": "torch.compile"}
EPS = 1e-5
SAMPLED_ROWS = 64  # rows checked against the float64 reference (every row costs a CPU pass)


def eager_add_bias_gelu(x, bias):
    return F.gelu(x + bias, approximate="tanh")


def eager_softmax(x):
    return torch.softmax(x, dim=-1)


def eager_rmsnorm(x, weight):
    return F.rms_norm(x, (x.shape[-1],), weight, EPS)


EAGER = {"add_bias_gelu": eager_add_bias_gelu, "softmax": eager_softmax,
         "rmsnorm": eager_rmsnorm}


def make_inputs(op, rows, cols, dtype, gen):
    t = getattr(torch, dtype)
    if op == "add_bias_gelu":  # x in [-3, 3), bias in [-1, 1), as Day 2's tests draw them
        return [(torch.rand(rows, cols, device="cuda", generator=gen) * 6 - 3).to(t),
                (torch.rand(cols, device="cuda", generator=gen) * 2 - 1).to(t)]
    if op == "softmax":
        return [(torch.randn(rows, cols, device="cuda", generator=gen) * 4).to(t)]
    return [torch.randn(rows, cols, device="cuda", generator=gen).to(t),
            (torch.rand(cols, device="cuda", generator=gen) + 0.5).to(t)]


def reference_rows(op, inputs, rows):
    """The float64 reference of the sampled `rows` (the bias and the weight whole)."""
    from cuda_course import reference

    x = inputs[0][rows].double().cpu().numpy()
    if op == "add_bias_gelu":
        return reference.add_bias_gelu(x, inputs[1].double().cpu().numpy())
    if op == "softmax":
        return reference.softmax_rows(x)
    return reference.rmsnorm(x, inputs[1].double().cpu().numpy(), EPS)


def implementations(op, inputs, compiled):
    """{impl: a function of no arguments returning the output}. The course's and Triton's write
    into an out= allocated once (poisoned with NaN here: what they leave unwritten fails the
    checks); eager and compiled allocate theirs, as PyTorch code does."""
    from cuda_course import triton_ops

    x = inputs[0]
    outs = {k: torch.full_like(x, float("nan")) for k in ("cuda", "triton")}
    args = list(inputs) + ([EPS] if op == "rmsnorm" else [])
    fns = {
        "cuda": lambda: getattr(cuda_course, op)(*args, out=outs["cuda"]),
        "triton": lambda: getattr(triton_ops, op)(*args, out=outs["triton"]),
        "eager": lambda: EAGER[op](*inputs),
    }
    if compiled is not None:
        fns["compile"] = lambda: compiled[op](*inputs)
    return fns


def check(op, dtype, inputs, got, rows):
    """None when `got` matches the float64 reference on the sampled rows, else why not."""
    from cuda_course import reference

    values = got[rows].double().cpu().numpy()
    return reference.compare(values, reference_rows(op, inputs, rows), dtype, op)


def bench(fn, rep_ms):
    """(median, 20th and 80th percentile) milliseconds by triton.testing.do_bench."""
    import triton.testing

    q = triton.testing.do_bench(fn, warmup=25, rep=rep_ms, quantiles=[0.5, 0.2, 0.8])
    return tuple(float(v) for v in q)


def copy_ceiling(mib, rep_ms):
    """(bytes, median ms) of a device-to-device copy of `mib` MiB, timed as the operations."""
    src = torch.empty(mib << 20, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return 2 * src.numel(), bench(lambda: dst.copy_(src), rep_ms)[0]


def best_config(op, cols):
    """The configuration Triton's autotuner chose for this shape, as text (None if unknown)."""
    from cuda_course import triton_ops

    name = op
    if op == "softmax" and cols > triton_ops.kernels().SOFTMAX_REGISTER_COLS:
        name = "softmax_streamed"
    kernel = getattr(triton_ops.kernels(), name + "_kernel")
    config = getattr(kernel, "best_config", None)
    return None if config is None else str(config)


def run_operation(op, rep_ms, compiled, seed, copy_gbps):
    label, rows, cols, dtype, eager_code = OPERATIONS[op]
    inputs = make_inputs(op, rows, cols, dtype, torch.Generator(device="cuda").manual_seed(seed))
    out_bytes = inputs[0].numel() * inputs[0].element_size()
    nbytes = sum(t.numel() * t.element_size() for t in inputs) + out_bytes
    picked = torch.randperm(rows, generator=torch.Generator().manual_seed(seed))
    sampled = torch.cat([torch.tensor([0, rows - 1]), picked[:SAMPLED_ROWS - 2]]).tolist()
    result = {"op": op, "label": label, "rows": rows, "cols": cols, "dtype": dtype,
              "bytes": nbytes, "eager": eager_code, "impls": []}
    outputs = {}
    for impl, fn in implementations(op, inputs, compiled).items():
        row = {"impl": impl, "name": IMPLEMENTATIONS[impl]}
        try:
            got = fn()
            torch.cuda.synchronize()
        except Exception as e:  # a compiler missing, a shape refused: say so in the table
            row["error"] = f"{type(e).__name__}: {e}"[:300]
            result["impls"].append(row)
            continue
        problem = check(op, dtype, inputs, got, sampled)
        if problem:
            row["error"] = f"wrong before timing: {problem}"[:600]
            result["impls"].append(row)
            continue
        ms, p20, p80 = bench(fn, rep_ms)
        got = fn()
        problem = check(op, dtype, inputs, got, sampled)
        if problem:
            row["error"] = f"wrong after timing: {problem}"[:600]
            result["impls"].append(row)
            continue
        outputs[impl] = got
        gbps = nbytes / (ms * 1e6)
        row.update({"ms": ms, "p20_ms": p20, "p80_ms": p80, "gbps": gbps,
                    "pct_copy": 100.0 * gbps / copy_gbps})
        if impl == "triton":
            row["config"] = best_config(op, cols)
        result["impls"].append(row)
    if "cuda" in outputs:  # how far apart the implementations are, over the whole output
        base = outputs["cuda"].float()
        for row in result["impls"]:
            if row["impl"] in outputs:
                diff = (outputs[row["impl"]].float() - base).abs().max().item()
                row["max_abs_diff_vs_cuda"] = diff
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ops", default=",".join(OPERATIONS),
                   help=f"comma-separated, of {', '.join(OPERATIONS)}")
    p.add_argument("--rep", type=int, default=200,
                   help="milliseconds of timed calls per row (do_bench's rep)")
    p.add_argument("--copy-mib", type=int, default=512,
                   help="MiB copied for the ceiling (that much read and that much written)")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--seed", type=int, help="the inputs' seed (default: a fresh one)")
    p.add_argument("--json", default="triton.json", help="where to write the results")
    args = p.parse_args()
    ops = [o for o in args.ops.split(",") if o]
    unknown = [o for o in ops if o not in OPERATIONS]
    if unknown:
        p.error(f"unknown operation {', '.join(unknown)}: expected {', '.join(OPERATIONS)}")
    needs.torch_with_gpu("bench_triton.py")
    needs.course_library("bench_triton.py")
    triton = needs.triton("bench_triton.py")
    needs.numpy("bench_triton.py")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")

    copy_bytes, copy_ms = copy_ceiling(args.copy_mib, args.rep)
    copy_gbps = copy_bytes / (copy_ms * 1e6)

    compiled = None
    if not args.no_compile:
        compiled = {op: torch.compile(fn) for op, fn in EAGER.items()}
    results = [run_operation(op, args.rep, compiled, seed + i, copy_gbps)
               for i, op in enumerate(ops)]

    result = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "binding": cuda_course.binding(),
        "seed": seed,
        "method": "triton.testing.do_bench, median; a 256 MiB buffer zeroed before each call "
                  "(L2 flushed); bytes = inputs read once + outputs written once",
        "copy": {"bytes": copy_bytes, "ms": copy_ms, "gbps": copy_gbps},
        "operations": results,
    }
    print(f"{result['device']}, torch {result['torch']}, triton {result['triton']}, "
          f"cuda_course through {result['binding']}, seed {seed}")
    print(f"copy ceiling: {copy_gbps:.0f} GB/s ({args.copy_mib} MiB device-to-device, "
          f"{copy_ms:.3f} ms)")
    print(f"{'operation':<26} {'implementation':<16} {'ms':>8} {'GB/s':>7} {'% copy':>7}  "
          f"{'max |diff| vs CUDA':>18}")
    for r in results:
        title = f"{r['op']} {r['dtype']} {r['rows']}x{r['cols']}"
        for row in r["impls"]:
            if "error" in row:
                print(f"{title:<26} {row['name']:<16} error: {row['error']}")
            else:
                diff = row.get("max_abs_diff_vs_cuda")
                diff_text = "-" if diff is None else f"{diff:.2e}"
                print(f"{title:<26} {row['name']:<16} {row['ms']:8.4f} {row['gbps']:7.0f} "
                      f"{row['pct_copy']:6.1f}%  {diff_text:>18}")
            title = ""
    with open(args.json, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {args.json}")
    failed = any("error" in row for r in results for row in r["impls"]
                 if row["impl"] in ("cuda", "triton"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
