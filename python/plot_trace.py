#!/usr/bin/env python3
"""Draws a Chrome trace-event JSON of the decoder layer (cuda_course.decoder_layer(...,
trace_path=...), or bench_layer.py --trace) as a timeline: one bar per stage, as Perfetto shows
it, for a page that cannot embed Perfetto itself. The figure is the course's plotting tool's
(tools/plots/courseplots/figures.py: plot_trace_timeline), as in lesson 14.

    python python/plot_trace.py layer_trace.json --out d14_trace      # d14_trace.png, .svg
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import needs  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", help="the Chrome trace JSON")
    p.add_argument("--out", default="trace", help="output path without extension")
    p.add_argument("--title", default="one decoder layer, stage by stage (GPU time)")
    args = p.parse_args()
    figures, InputError = needs.courseplots("plot_trace.py")
    try:
        trace = figures.load_json(args.trace, "a Chrome trace")
        paths = figures.plot_trace_timeline(trace, os.path.dirname(args.out) or ".",
                                            os.path.basename(args.out), args.title)
    except InputError as e:
        sys.exit(f"plot_trace.py: {e}")
    for path in paths:
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
