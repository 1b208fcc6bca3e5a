#!/usr/bin/env python3
"""The course's plots, drawn with matplotlib (PNG and SVG of every figure).

  roofline     a roofline per GPU from benchmark JSON files (bench-dNN-*.json)
  sweep        per benchmark family, GB/s against the argument that varies
  leaderboard  the boards of `course leaderboard`'s leaderboard.json, as bars
  distribution a class's points per exercise and day, from `course grade`'s gradebook.json
  lessons      the lessons' figures (lessons/figures/) from results/h100/
  diagrams     the lessons' concept diagrams (lessons/diagrams/), drawn by code

Usage: python3 tools/plots/course_plots.py <command> --help
Needs matplotlib: python3 -m pip install -r tools/plots/requirements.txt

Exit 0: the figures were written (their paths are printed, one per line); 2: bad input (a
missing or malformed file, a bad argument), with a message; 3: matplotlib is not installed.
The functions are importable too: courseplots.figures (plot_roofline, plot_sweep,
plot_leaderboards, plot_distribution), courseplots.lessons (draw_lessons) and courseplots.data
(the readers).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from courseplots import data as D  # noqa: E402  (no matplotlib in there)

EXIT_OK, EXIT_USAGE, EXIT_NO_MATPLOTLIB = 0, 2, 3
DEFAULT_MEASUREMENTS = os.path.join(ROOT, "results", "h100")
DEFAULT_LESSON_FIGURES = os.path.join(ROOT, "lessons", "figures")
DEFAULT_DIAGRAMS = os.path.join(ROOT, "lessons", "diagrams")


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (v > 0 and v < float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return v


def parser() -> argparse.ArgumentParser:
    doc = __doc__.split("\n\n")
    p = argparse.ArgumentParser(prog="course_plots.py", description=doc[0] + "\n\n" + doc[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", metavar="<command>")
    sub.required = True

    r = sub.add_parser("roofline", help="a roofline per GPU from benchmark JSON files",
                       description="A roofline per GPU: x = arithmetic intensity (FLOP per "
                       "byte), y = attained TFLOP/s, log-log. The memory roof is the measured "
                       "copy ceiling (context.copy_ceiling_GBps: the highest of the files of "
                       "that GPU), the compute roof --peak-tflops. A row with a TFLOP/s counter "
                       "is a point at FLOP/s / bytes/s; a row without one (copies, transposes) "
                       "is drawn hollow at a nominal intensity, at the height its GB/s gives "
                       "there, as the legend says.")
    r.add_argument("--bench", nargs="+", required=True, metavar="JSON",
                   help="benchmark files (bench-dNN-*.json; the lab comes from the file name, "
                   "else context.course_lab)")
    r.add_argument("--out", required=True, metavar="DIR", help="folder for roofline.png/.svg")
    r.add_argument("--gpu-name", default="", metavar="NAME",
                   help="treat every file as this GPU (default: each file's context.device)")
    r.add_argument("--peak-tflops", type=_positive, default=None, metavar="T",
                   help="the compute roof in TFLOP/s (default: 67, the H100 SXM's datasheet "
                   "FP32 rate on CUDA cores)")
    r.add_argument("--ceiling-gbps", type=_positive, default=None, metavar="GBPS",
                   help="the memory roof in GB/s instead of the files' measured copy ceiling")
    r.add_argument("--nominal-intensity", type=_positive, default=None, metavar="AI",
                   help="where rows without FLOPs are drawn, FLOP/byte (default 0.05)")

    s = sub.add_parser("sweep", help="GB/s against the varying argument, per benchmark family",
                       description="Per benchmark family (the name before the first '/', "
                       "without a template argument): GB/s against the argument that varies "
                       "(key:value or a bare number in the name), on a log2 scale, one line "
                       "per dtype and combination of the other arguments; the copy ceiling as "
                       "a dashed line and a right-hand axis in % of it. When every argument "
                       "changes with the others, x lists the combinations instead.")
    s.add_argument("--bench", required=True, metavar="JSON", help="one benchmark file")
    s.add_argument("--out", required=True, metavar="DIR",
                   help="folder for <lab>_<family>_sweep.png/.svg")
    s.add_argument("--lab", default="", metavar="dNN",
                   help="the lab, for titles and file names (default: from the file name or "
                   "context.course_lab)")
    s.add_argument("--family", action="append", default=[], metavar="BM_NAME",
                   help="only this family (repeatable; default: every family)")
    s.add_argument("--x", default="", metavar="ARG",
                   help="the argument along x for the families that have it (default: chosen)")

    b = sub.add_parser("leaderboard", help="bars of leaderboard.json's boards",
                       description="One figure per board: students ranked by median time "
                       "(horizontal bars), with GB/s and % of the copy ceiling; the students "
                       "not ranked listed below with the reason. Headline boards only unless "
                       "--all.")
    b.add_argument("--leaderboard-json", required=True, metavar="JSON",
                   help="leaderboard.json from `course leaderboard`")
    b.add_argument("--out", required=True, metavar="DIR", help="folder for the figures")
    b.add_argument("--all", action="store_true", help="every board, not only the headlines")

    d = sub.add_parser("distribution", help="a class's points per exercise and day",
                       description="Per day: for each exercise (and check, performance, the "
                       "day total) the fraction of its points each student earned, as a box "
                       "and one dot per student. A day not graded (not submitted, did not "
                       "build or link) counts as 0 and is drawn as a red cross and counted in "
                       "the title. Then the day totals side by side (distribution_days).")
    d.add_argument("--gradebook", required=True, metavar="JSON",
                   help="gradebook.json from `course grade`")
    d.add_argument("--out", required=True, metavar="DIR", help="folder for the figures")

    ls = sub.add_parser("lessons", help="regenerate lessons/figures from the measurements",
                        description="The lessons' figures: for each day what its 'Measured on "
                        "the H100' section tabulates, and one roofline of all six days, from "
                        "the bench-dNN-solution.json files.")
    ls.add_argument("--measurements", default=DEFAULT_MEASUREMENTS, metavar="DIR",
                    help="the measurements folder: bench-d01-solution.json .. "
                    "bench-d06-solution.json, and the later days' runs at the paths "
                    "courseplots.lessons.SOURCES gives (default: results/h100)")
    ls.add_argument("--out", default=DEFAULT_LESSON_FIGURES, metavar="DIR",
                    help="folder for the figures (default: lessons/figures)")

    dg = sub.add_parser("diagrams", help="regenerate lessons/diagrams (concept diagrams)",
                        description="The lessons' concept diagrams, drawn by the functions "
                        "registered in courseplots/diagrams/dNN.py (no measurements).")
    dg.add_argument("--out", default=DEFAULT_DIAGRAMS, metavar="DIR",
                    help="folder for the diagrams (default: lessons/diagrams)")
    dg.add_argument("--only", nargs="+", metavar="STEM",
                    help="draw only these diagrams (e.g. d04_bank_grid)")
    return p


class NoMatplotlib(Exception):
    """matplotlib cannot be imported (exit 3)."""


def _import_plots():
    """The plotting modules; NoMatplotlib when matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401  (only: is it there?)
    except ImportError as e:
        raise NoMatplotlib(f"matplotlib is not installed ({e}): python3 -m pip install -r "
                           "tools/plots/requirements.txt") from None
    from courseplots import figures, lessons
    return figures, lessons


def run(args: argparse.Namespace) -> List[str]:
    """The command's figures; raises D.InputError on bad input."""
    # Read and check the inputs before matplotlib is even imported.
    if args.command == "roofline":
        files = D.load_benches(args.bench)
    elif args.command == "sweep":
        files = D.load_benches([args.bench], args.lab)
    elif args.command == "leaderboard":
        generated, boards = D.load_leaderboard(args.leaderboard_json)
    elif args.command == "distribution":
        days = D.load_gradebook(args.gradebook)
    figures, lessons = _import_plots()
    if args.command == "diagrams":
        from courseplots import diagrams
        return diagrams.draw_diagrams(args.out, args.only)
    if args.command == "roofline":
        kw = {}
        if args.peak_tflops is not None:
            kw.update(peak_tflops=args.peak_tflops)
        if args.nominal_intensity is not None:
            kw.update(nominal=args.nominal_intensity)
        return figures.plot_roofline(files, args.out, gpu_name=args.gpu_name,
                                     ceiling_gbs=args.ceiling_gbps, **kw)
    if args.command == "sweep":
        return figures.plot_sweep(files[0], args.out, only=args.family, x_key=args.x)
    if args.command == "leaderboard":
        return figures.plot_leaderboards(boards, args.out, all_boards=args.all,
                                         generated=generated)
    if args.command == "distribution":
        return figures.plot_distribution(days, args.out)
    return lessons.draw_lessons(args.measurements, args.out)


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        paths = run(args)
    except D.InputError as e:
        print(f"course_plots.py {args.command}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except NoMatplotlib as e:
        print(f"course_plots.py {args.command}: {e}", file=sys.stderr)
        return EXIT_NO_MATPLOTLIB
    except OSError as e:  # the output folder cannot be written
        print(f"course_plots.py {args.command}: cannot write the figures: {e}", file=sys.stderr)
        return EXIT_USAGE
    for p in paths:
        print(p)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
