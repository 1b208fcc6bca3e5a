#!/usr/bin/env python3
"""Draws bench_layer.py's JSON as a bar chart of speed-ups over PyTorch eager (torch.compile and
the course's layer, per batch x len), saved as PNG and SVG. The figure itself is the course's
plotting tool's (tools/plots/courseplots/figures.py: plot_layer_speedups), the one lesson 14's
figure is drawn with.

    python python/plot_layer.py layer.json --out layer     # layer.png, layer.svg
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import needs  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", help="the file bench_layer.py wrote")
    p.add_argument("--out", default="layer", help="output path without extension")
    args = p.parse_args()
    figures, InputError = needs.courseplots("plot_layer.py")
    try:
        layer = figures.load_json(args.json, "layer results")
        paths = figures.plot_layer_speedups(layer, os.path.dirname(args.out) or ".",
                                            os.path.basename(args.out))
    except InputError as e:
        sys.exit(f"plot_layer.py: {e}")
    for path in paths:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
