#!/usr/bin/env python3
"""Draws bench_layer.py's JSON as a bar chart of speed-ups over PyTorch eager (torch.compile and
the course's layer, per batch x len), saved as PNG and SVG. The figure itself is the course's
plotting tool's (tools/plots/courseplots/figures.py: plot_layer_speedups), the one lesson 14's
figure is drawn with.

    python python/plot_layer.py layer.json --out layer     # layer.png, layer.svg
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import needs  # noqa: E402


def main():
    needs.plot_json(__doc__, "plot_layer.py", "bench_layer.py", "layer results",
                    "layer", "plot_layer_speedups")


if __name__ == "__main__":
    main()
