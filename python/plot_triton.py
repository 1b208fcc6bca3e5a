#!/usr/bin/env python3
"""Draws bench_triton.py's JSON as a bar chart: GB/s of the CUDA solution, Triton, PyTorch eager
and torch.compile for each operation, with the copy ceiling measured in the same process as a
line (and as the right-hand axis, in %), saved as PNG and SVG. The figure itself is the course's
plotting tool's (tools/plots/courseplots/figures.py: plot_triton_bandwidth).

    python python/plot_triton.py triton.json --out triton     # triton.png, triton.svg
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import needs  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", help="the file bench_triton.py wrote")
    p.add_argument("--out", default="triton", help="output path without extension")
    args = p.parse_args()
    figures, InputError = needs.courseplots("plot_triton.py")
    try:
        bench = figures.load_json(args.json, "Triton results")
        paths = figures.plot_triton_bandwidth(bench, os.path.dirname(args.out) or ".",
                                              os.path.basename(args.out))
    except InputError as e:
        sys.exit(f"plot_triton.py: {e}")
    for path in paths:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
