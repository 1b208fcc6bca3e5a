"""How the course's Python benchmarks (bench_layer.py, bench_attention.py) time a call on the GPU.

    median_ms, spread_percent = gpu_time_ms(fn, warmup, iters, flush=None)

`fn` is called `warmup` times, then `iters` times, each bracketed by its own CUDA events on the
current stream; with `flush` (a CUDA tensor, e.g. 256 MiB of bytes) it is zeroed before every
timed call, outside the bracket, so that the call finds the L2 cache emptied of its inputs.
Returns the median time in milliseconds and the spread of the samples (max − min) in percent
of that median.

Run as a script, it times one 64 MiB copy with it, as an example and a check of the setup:

    python python/bench_timing.py
"""

import statistics
import sys


def gpu_time_ms(fn, warmup, iters, flush=None):
    import torch

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
