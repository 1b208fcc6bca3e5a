#!/usr/bin/env python3
"""Draws bench_layer.py's JSON as a bar chart of speed-ups over PyTorch eager (torch.compile and
the course's layer, per batch x len), saved as PNG and SVG.

    python python/plot_layer.py layer.json --out layer     # layer.png, layer.svg
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")  # headless: no display on the GPU machines
import matplotlib.pyplot as plt  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", help="the file bench_layer.py wrote")
    p.add_argument("--out", default="layer", help="output path without extension")
    args = p.parse_args()
    with open(args.json) as f:
        data = json.load(f)
    rows = data["rows"]
    labels = [f"{r['batch']} x {r['len']}" for r in rows]
    series = [("torch.compile", [r.get("compile_speedup_vs_eager", 0.0) for r in rows]),
              ("course layer", [r["speedup_vs_eager"] for r in rows])]
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.38
    for i, (name, values) in enumerate(series):
        xs = [j + (i - 0.5) * width for j in range(len(rows))]
        bars = ax.bar(xs, values, width, label=name)
        for bar, value in zip(bars, values):
            ax.annotate(f"{value:.2f}x" if value else "n/a", (bar.get_x() + bar.get_width() / 2,
                        bar.get_height()), ha="center", va="bottom", fontsize=8)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels)
    ax.set_xlabel("batch x sequence length (prefill)")
    ax.set_ylabel("speed-up over PyTorch eager")
    ax.set_title(f"One decoder layer, {data['device']}", fontsize=10)
    ax.legend()
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{args.out}.{ext}", dpi=150)
        print(f"wrote {args.out}.{ext}")


if __name__ == "__main__":
    main()
