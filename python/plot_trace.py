#!/usr/bin/env python3
"""Draw a Chrome trace-event JSON of the decoder layer (cuda_course.decoder_layer(...,
trace_path=...), or bench_layer.py --trace) as a timeline: one bar per stage, as Perfetto shows
it, for a page that cannot embed Perfetto itself.

    python python/plot_trace.py layer_trace.json --out d14_trace      # d14_trace.png, .svg
"""
import argparse
import json
import sys


def load_stages(path):
    """[(name, start_us, duration_us)] of the complete ("X") events, in start order."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"plot_trace.py: cannot read {path}: {e}")
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        sys.exit(f"plot_trace.py: {path} has no traceEvents list")
    stages = [(str(e["name"]), float(e["ts"]), float(e["dur"])) for e in events
              if isinstance(e, dict) and e.get("ph") == "X" and "ts" in e and "dur" in e]
    if not stages:
        sys.exit(f"plot_trace.py: {path} has no complete (\"X\") events")
    return sorted(stages, key=lambda s: s[1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", help="the Chrome trace JSON")
    p.add_argument("--out", default="trace", help="output path without extension")
    p.add_argument("--title", default="one decoder layer, stage by stage (GPU time)")
    args = p.parse_args()
    stages = load_stages(args.trace)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_trace.py needs matplotlib")
    total = max(start + dur for _, start, dur in stages)
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(stages) + 1.4))
    for row, (name, start, dur) in enumerate(stages):
        ax.barh(row, dur, left=start, height=0.6, color="#4C72B0" if "gemm" in name else "#DD8452")
        ax.text(start + dur + total * 0.005, row, f"{dur:.0f} µs ({100 * dur / total:.0f}%)",
                va="center", fontsize=8)
    ax.set_yticks(range(len(stages)), [s[0] for s in stages])
    ax.invert_yaxis()
    ax.set_xlim(0, total * 1.18)
    ax.set_xlabel("µs from the layer's first stage")
    ax.set_title(f"{args.title}: {total:.0f} µs")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{args.out}.{ext}", dpi=150)
        print(f"wrote {args.out}.{ext}")


if __name__ == "__main__":
    main()
