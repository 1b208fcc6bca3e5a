#!/usr/bin/env python3
"""Draws bench_triton.py's JSON as a bar chart: GB/s of the CUDA solution, Triton, PyTorch eager
and torch.compile for each operation, with the copy ceiling measured in the same process as a
line (and as the right-hand axis, in %), saved as PNG and SVG. The figure itself is the course's
plotting tool's (tools/plots/courseplots/figures.py: plot_triton_bandwidth).

    python python/plot_triton.py triton.json --out triton     # triton.png, triton.svg
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import needs  # noqa: E402


def main():
    needs.plot_json(__doc__, "plot_triton.py", "bench_triton.py", "Triton results",
                    "triton", "plot_triton_bandwidth")


if __name__ == "__main__":
    main()
