"""How the course's Python benchmarks (bench_layer.py, bench_attention.py) time a call on the GPU,
the way the C++ benchmarks do (common/course/bench.h).

    median_ms, spread_percent = gpu_time_ms(fn, warmup, iters, flush=None)
    {name: (median_ms, spread_percent)} = gpu_time_rounds({name: fn, ...}, warmup, iters, flush)
    microseconds = host_us_per_call(fn)

gpu_time_ms: `fn` is called `warmup` times, then `iters` times, each bracketed by its own CUDA
events on the current stream; with `flush` (a CUDA tensor, e.g. 256 MiB of bytes) it is zeroed
before every timed call, outside the bracket, so that the call finds the L2 cache emptied of its
inputs. As in the C++ benchmarks, the call is queued behind the running flush: what the host
spends launching it (Python, the binding, the launches) is hidden up to the flush's length, and
host_us_per_call() says what it is. Returns the median time in milliseconds and the spread of
the samples (max − min) in percent of that median.

gpu_time_rounds: the same for several functions, interleaved: every round times each function
once, in turn. The GPU's clock follows its power and temperature, and a run of tensor-core work
lowers it for whatever runs next (measured on the H100: Day 12's prefill kernel at 280 TFLOP/s
right after a burst of FlashAttention 2 calls, 311 before it); in rounds, every function meets the
same conditions, so their ratios hold even when the clock moves.

host_us_per_call: the host's time for one call while the GPU is busy with earlier work (a
spinning kernel queued first), so that no call waits for the GPU: Python, the binding's
argument checks and the launches themselves.

Run as a script, it times one 64 MiB copy with it, as an example and a check of the setup:

    python python/bench_timing.py
"""

import statistics
import sys
import time


def _timed_call(torch, fn, flush):
    if flush is not None:
        flush.zero_()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop)


def _summary(times):
    median = statistics.median(times)
    return median, (max(times) - min(times)) / median * 100


def gpu_time_ms(fn, warmup, iters, flush=None):
    return gpu_time_rounds({"fn": fn}, warmup, iters, flush)["fn"]


def gpu_time_rounds(fns, warmup, iters, flush=None):
    import torch

    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    for _ in range(iters):
        for name, fn in fns.items():
            times[name].append(_timed_call(torch, fn, flush))
    return {name: _summary(t) for name, t in times.items()}


def host_us_per_call(fn, calls=20):
    import torch

    fn()
    torch.cuda.synchronize()
    # About half a second of GPU work ahead of the calls (torch.cuda._sleep spins for a number
    # of clock cycles): none of them waits for the GPU, so what is timed is the host alone.
    torch.cuda._sleep(1_000_000_000)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def main():
    import argparse
    import os

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import needs

    torch = needs.torch_with_gpu("bench_timing.py")
    src = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms, spread = gpu_time_ms(lambda: dst.copy_(src), warmup=5, iters=30)
    print(f"{torch.cuda.get_device_name()}: a 64 MiB copy takes {ms:.4f} ms (median of 30, "
          f"spread {spread:.1f} %), {2 * src.numel() / ms / 1e6:.0f} GB/s read + written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
