"""How the course's Python benchmarks (bench_layer.py, bench_attention.py) time a call on the GPU,
the way the C++ benchmarks do (common/course/bench.h).

    median_ms, spread_percent = gpu_time_ms(fn, warmup, iters, flush=None)
    {name: (median_ms, spread_percent)} = gpu_time_rounds({name: fn, ...}, warmup, iters, flush)
    microseconds = host_us_per_call(fn)

gpu_time_ms: `fn` is called `warmup` times, then `iters` times, each bracketed by its own CUDA
events on the current stream; with `flush` (a CUDA tensor, e.g. 256 MiB of bytes) it is zeroed
before every timed call, outside the bracket, so that the call finds the L2 cache emptied of its
inputs. Each timed call is queued behind GPU work that outlasts what the host spends issuing it
(Python, the binding, the launches): the flush, then a spin (torch.cuda._sleep) as long as 1.5
times the slowest host time of the functions timed together (host_us_per_call), at most 2 ms.
Without the spin, the part of the host's time that outlasts the flush falls inside the bracket:
measured on the H100, a 4 x 512 decoder layer from Python timed 1.60 ms behind the flush alone and
1.48 ms behind the flush and a spin, the same GPU work. The C++ benchmarks hide it the same way,
behind their two flushes (common/course/bench.h), and host_us_per_call() reports it separately.
Returns the median time in milliseconds and the spread of the samples (max − min) in percent of
that median.

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


# torch.cuda._sleep spins for a number of GPU clock cycles; 2 GHz is above the clock of every
# card the course runs on, so a spin of host_us * 2000 cycles lasts at least host_us.
CYCLES_PER_US = 2000
MAX_COVER_US = 2000


def _timed_call(torch, fn, flush, cover_cycles):
    if flush is not None:
        flush.zero_()
    if cover_cycles:
        torch.cuda._sleep(cover_cycles)
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
    # One cover for every function, so that each rests the GPU as long as the others do; at most
    # MAX_COVER_US (a call whose host takes longer waits for the GPU inside, as eager PyTorch's
    # layer does, and no cover hides that).
    host_us = max(host_us_per_call(fn) for fn in fns.values())
    cover_cycles = int(min(1.5 * host_us, MAX_COVER_US) * CYCLES_PER_US)
    times = {name: [] for name in fns}
    for _ in range(iters):
        for name, fn in fns.items():
            times[name].append(_timed_call(torch, fn, flush, cover_cycles))
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
