"""How the course's Python benchmarks (bench_layer.py, bench_attention.py) time a call on the GPU.

    median_ms, spread_percent = gpu_time_ms(fn, warmup, iters, flush=None)

`fn` is called `warmup` times, then `iters` times, each bracketed by its own CUDA events on the
current stream; with `flush` (a CUDA tensor, e.g. 256 MiB of bytes) it is zeroed before every
timed call, outside the bracket, so that the call finds the L2 cache emptied of its inputs.
Returns the median time in milliseconds and the spread of the samples (max − min) in percent
of that median.
"""

import statistics

import torch


def gpu_time_ms(fn, warmup, iters, flush=None):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        if flush is not None:
            flush.zero_()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    median = statistics.median(times)
    return median, (max(times) - min(times)) / median * 100
