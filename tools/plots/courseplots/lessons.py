"""The lessons' figures (lessons/figures/dNN_<what>.png and .svg), from the measurements.

Each figure draws what a lesson's "Measured on the H100" section tabulates, from the same
bench-dNN-solution.json the tables were copied from, row by row by benchmark name (a missing
row is an InputError, not a gap in a figure). Numbers that are not measurements (a model, a
target, a peak computed from the clock) are drawn dashed or dotted and say where they come from.
Each day reads its own folder of the current measurements, results/h100/dNN/ (SOURCES): the
benchmark's JSON; Day 14's layer.json from python/bench_layer.py and triton.json from
python/bench_triton.py.

    python3 tools/plots/course_plots.py lessons [--measurements DIR] [--out DIR]
"""

from __future__ import annotations

import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, PercentFormatter

from . import figures as F
from . import style as S
from .data import BenchFile, BenchRow, InputError, load_bench

DAYS = ("d01", "d02", "d03", "d04", "d05", "d06")  # also the roofline's
LATER_DAYS = ("d10",)  # a figure each, from the run of their SOURCES entry
FLOAT, HALF, BF16, FP8 = "float32", "float16", "bfloat16", "fp8 e4m3"
DTYPE_COLORS = {FLOAT: "#0072B2", HALF: "#E69F00", BF16: "#009E73", FP8: "#CC79A7"}
MODEL_COLOR = "#7F3C8D"
TARGET_COLOR = "#2E7D32"
KEY_EDGE = "black"


# Each day's benchmark file, relative to the measurements folder (results/h100).
SOURCES: Dict[str, str] = {day: f"{day}/bench-{day}-solution.json" for day in DAYS + LATER_DAYS}
SOURCES["d14"] = "d14/layer.json"  # not a benchmark file: drawn by day14()
D14_TRITON = "d14/triton.json"  # python/bench_triton.py: Days 2, 5, 6 beside Triton and PyTorch
# A figure drawn from another file than its day's source (source_path): that file, which its
# caption cites.
FIGURE_SOURCES: Dict[str, str] = {"d14_triton": f"results/h100/{D14_TRITON}"}


def source_path(day: str) -> str:
    return f"results/h100/{SOURCES[day]}"


def _source_note(fig, bench: BenchFile, day: str, extra: str = "") -> None:
    fig.supxlabel(f"Measured: {source_path(day)}, {bench.gpu}; median of the iterations, "
                  f"L2 flushed.\nCopy ceiling: {bench.ceiling_gbs:.0f} GB/s, measured in the "
                  "same benchmark process." + (f" {extra}." if extra else ""), fontsize=7,
                  color="#555555")


def _title(ax, text: str, n: int = 0) -> None:
    S.mark_title(ax.set_title(text), n)


def _value_labels(ax, xs: Sequence[float], ys: Sequence[Optional[float]], fmt: Callable,
                  horizontal: bool = False, fontsize: float = 7.0) -> None:
    for x, y in zip(xs, ys):
        if y is None:
            continue
        if horizontal:
            ax.annotate(fmt(y), xy=(y, x), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=fontsize)
        else:
            ax.annotate(fmt(y), xy=(x, y), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=fontsize)


def _grouped_bars(ax, categories: Sequence[str],
                  series: Sequence[Tuple[str, str, Sequence[Optional[BenchRow]]]],
                  value: Callable[[BenchRow], float], fmt: Callable) -> None:
    """Bars per category, one per series (label, colour, rows; None: no such row)."""
    n = len(series)
    width = 0.8 / n
    for i, (label, color, rows) in enumerate(series):
        xs = [c + (i - (n - 1) / 2.0) * width for c in range(len(categories))]
        ys = [value(r) if r is not None else None for r in rows]
        present = [(x, y, r) for x, y, r in zip(xs, ys, rows) if y is not None]
        ax.bar([x for x, _, _ in present], [y for _, y, _ in present], width=width * 0.92,
               color=color, label=label, zorder=3)
        keys = [(x, y) for x, y, r in present if r.key]  # the day's key row, ringed
        if keys:
            ax.bar([x for x, _ in keys], [y for _, y in keys], width=width * 0.92,
                   facecolor="none", edgecolor=KEY_EDGE, linewidth=1.4, zorder=4)
        _value_labels(ax, xs, ys, fmt, fontsize=6.5)
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels(categories)
    ax.grid(axis="x", visible=False)


def _pct_copy_axis(ax, top: float = 110.0) -> None:
    ax.set_ylim(0, top)
    ax.yaxis.set_major_formatter(PercentFormatter(100.0, decimals=0))
    ax.set_ylabel("% of the copy ceiling")
    ax.axhline(100.0, color=S.CEILING_COLOR, linestyle="--", linewidth=1.0, zorder=2)


def _gbs_axes(ax, bench: BenchFile, top: Optional[float] = None) -> None:
    c = bench.ceiling_gbs
    ax.set_ylim(0, top or c * 1.12)
    F._ceiling_line(ax, c, f"copy ceiling: {c:.0f} GB/s")
    F._ceiling_axis(ax, c)
    ax.set_ylabel("GB/s")


def _pct(v: float) -> str:
    return f"{v:.1f}"


# ------------------------------------------------------------------------------- Day 1


def day1(b: BenchFile, out: str) -> List[str]:
    blocks = [1, 66, 132, 1056]
    saxpy = [b.row(f"BM_saxpy/n:67108864/blocks:{k}") for k in blocks]
    launcher = b.row("BM_saxpy/n:67108864/blocks:0")
    adds = [b.row("BM_vector_add/1048576"), b.row("BM_vector_add/67108864")]
    with S.style():
        fig = S.new_figure(10.0, 4.2)
        ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1.0]})
        ax1.set_xscale("log", base=2)
        ax1.plot(blocks, [r.gbs for r in saxpy], marker="o", color="#0072B2", zorder=3,
                 label="SAXPY, blocks × 256 threads")
        _value_labels(ax1, blocks, [r.gbs for r in saxpy],
                      lambda v: f"{v:.0f} GB/s", fontsize=7)
        ax1.axhline(launcher.gbs, color="#E69F00", linestyle=":", linewidth=1.4,
                    label=f"the launcher's grid (blocks:0): {launcher.gbs:.0f} GB/s")
        ax1.xaxis.set_major_locator(FixedLocator(blocks))
        ax1.xaxis.set_minor_locator(FixedLocator([]))
        ax1.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax1.set_xlabel("blocks in the grid (log₂ scale); 132 SMs")
        _gbs_axes(ax1, b)
        ax1.legend(loc="center left", framealpha=0.92)
        _title(ax1, "SAXPY, n = 2²⁶ float32: bandwidth against the grid", 0)
        xs = [0, 1]
        ax2.bar(xs, [r.gbs for r in adds], width=0.55, color="#0072B2", zorder=3,
                edgecolor=[KEY_EDGE if r.key else "#0072B2" for r in adds],
                linewidth=[1.4 if r.key else 0 for r in adds])
        _value_labels(ax2, xs, [r.gbs for r in adds], lambda v: f"{v:.0f} GB/s")
        for x, r in zip(xs, adds):
            ax2.annotate(f"{r.pct_copy:.1f}%\n{r.median_us:.3g} µs", xy=(x, r.gbs / 2),
                         ha="center", va="center", color="white", fontsize=8)
        ax2.set_xticks(xs)
        ax2.set_xticklabels(["n = 2²⁰ (12 MB)", "n = 2²⁶ (805 MB), key"])
        ax2.grid(axis="x", visible=False)
        _gbs_axes(ax2, b)
        ax2.legend(loc="lower right", framealpha=0.92)
        _title(ax2, "Vector add: a small input against a large one", 1)
        _source_note(fig, b, "d01")
        return S.save(fig, out, "d01_bandwidth")


def roofline_all(files: Sequence[BenchFile], out: str) -> List[str]:
    return F.plot_roofline(files, out, stem="d01_roofline_all_days",
                           title=f"Roofline, {files[0].gpu}: every benchmark row of Days 1-6 "
                                 "(results/h100)")


# ------------------------------------------------------------------------------- Day 2


def day2(b: BenchFile, out: str) -> List[str]:
    paths = []
    n = "n:67108864"
    cats = ["cudaMemcpy", "copy_1_coalesced", "copy_2_vectorized", "copy_2_vectorized\n"
            "offset:1 (head peeled)", "copy_2_vectorized\nn = 2²⁶ + 3 (a tail of 3)"]

    def copies(t: str) -> List[Optional[BenchRow]]:
        memcpy = b.row(f"BM_copy_cudaMemcpy<{t}>/{n}") if t == "float" else None
        return [memcpy, b.row(f"BM_copy_1_coalesced<{t}>/{n}"),
                b.row(f"BM_copy_2_vectorized<{t}>/{n}/offset:0"),
                b.row(f"BM_copy_2_vectorized<{t}>/{n}/offset:1"),
                b.row(f"BM_copy_2_vectorized<{t}>/n:67108867/offset:0")]

    with S.style():
        fig = S.new_figure(9.0, 4.2)
        ax = fig.add_subplot()
        _grouped_bars(ax, cats, [(FLOAT, DTYPE_COLORS[FLOAT], copies("float")),
                                 (HALF, DTYPE_COLORS[HALF], copies("half"))],
                      lambda r: r.pct_copy, _pct)
        _pct_copy_axis(ax)
        ax.legend(loc="lower left", framealpha=0.92)
        _title(ax, "Day 2 copies of 2²⁶ elements, in % of the copy ceiling (§11.1)")
        _source_note(fig, b, "d02", "There is no cudaMemcpy<half> row")
        paths += S.save(fig, out, "d02_copies")

    strides = [1, 2, 4, 8, 16, 32, 64]
    rows = [b.row(f"BM_copy_1_strided/{n}/stride:{s}") for s in strides]
    base = rows[0].gbs
    with S.style():
        fig = S.new_figure(7.5, 4.4)
        ax = fig.add_subplot()
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.plot(strides, [r.gbs for r in rows], marker="o", color="#0072B2", zorder=3,
                label="measured")
        ax.plot(strides, [base / min(s, 8) for s in strides], linestyle="--",
                color=MODEL_COLOR, marker=".", label="model (§3.2): stride 1's GB/s ÷ "
                "min(stride, 8), if DRAM moved\nexactly the 32-byte sectors asked for")
        for s, r in zip(strides, rows):
            ax.annotate(f"{r.gbs:.0f}" + (f"\n(1/{base / r.gbs:.1f})" if s > 1 else ""),
                        xy=(s, r.gbs), xytext=(5, -2), textcoords="offset points",
                        va="top", fontsize=7)
        ax.xaxis.set_major_locator(FixedLocator(strides))
        ax.xaxis.set_minor_locator(FixedLocator([]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.set_ylim(40, 5000)
        ax.axhline(b.ceiling_gbs, color=S.CEILING_COLOR, linestyle="--", linewidth=1.0,
                   label=f"copy ceiling: {b.ceiling_gbs:.0f} GB/s")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.set_xlabel("stride (elements; log₂ scale)")
        ax.set_ylabel("GB/s (log scale)")
        ax.legend(loc="lower left", framealpha=0.92)
        _title(ax, "The strided copy, n = 2²⁶ float32: measured against the sector model "
               "(§11.2)")
        _source_note(fig, b, "d02")
        paths += S.save(fig, out, "d02_strided")

    shapes = [("8192 × 8192", "rows:8192/cols:8192"), ("4096 × 14336", "rows:4096/cols:14336"),
              ("8191 × 8191", "rows:8191/cols:8191")]
    types = [("float", FLOAT), ("half", HALF), ("bfloat16", BF16)]
    cats, unfused, fused = [], [], []
    for t, tname in types:
        for label, args in shapes:
            cats.append(f"{label}\n{tname}")
            unfused.append(b.row(f"BM_add_bias_gelu_unfused<{t}>/{args}"))
            fused.append(b.row(f"BM_add_bias_gelu_fused<{t}>/{args}"))
    with S.style():
        fig = S.new_figure(10.0, 4.4)
        ax = fig.add_subplot()
        _grouped_bars(ax, cats, [("unfused: add_bias, then gelu (two kernels)", "#999999",
                                  unfused),
                                 ("fused: one kernel", "#0072B2", fused)],
                      lambda r: r.median_us, lambda v: f"{v:.0f}")
        top = max(r.median_us for r in unfused)
        for c, (u, f) in enumerate(zip(unfused, fused)):
            ax.annotate(f"{u.median_us / f.median_us:.2f}×", xy=(c, top * 1.07), ha="center",
                        fontsize=7.5, color="#333333")
        for x in (2.5, 5.5):
            ax.axvline(x, color="#CCCCCC", linewidth=0.8)
        ax.set_ylim(0, top * 1.32)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_ylabel("median time, µs")
        ax.legend(loc="upper center", ncol=2, framealpha=0.92)
        _title(ax, "Add-bias + GeLU: the unfused chain against the fused kernel; "
               "above each pair, unfused ÷ fused time (§11.4)")
        _source_note(fig, b, "d02", "Ringed: the day's key row")
        paths += S.save(fig, out, "d02_fusion")
    return paths


# ------------------------------------------------------------------------------- Day 3

# The MUFU rate lesson 3 §9 computes: 16 per clock per SM x 132 SMs x 1.98 GHz.
MUFU_PEAK_GEVAL = 16 * 132 * 1.98


def day3(b: BenchFile, out: str) -> List[str]:
    paths = []
    funcs = ["exp2", "log2", "rsqrt", "tanh"]

    def rows(impl: str, n: str, terms: int) -> List[BenchRow]:
        return [b.row(f"BM_math/{impl}_{f}/n:{n}/terms:{terms}") for f in funcs]

    with S.style():
        fig = S.new_figure(10.0, 4.2)
        ax1, ax2 = fig.subplots(1, 2)
        _grouped_bars(ax1, funcs, [("PTX wrapper (ptx_*)", "#0072B2", rows("ptx", "16777216", 64)),
                                   ("library function", "#E69F00",
                                    rows("library", "16777216", 64))],
                      lambda r: r.counters["Geval/s"], lambda v: f"{v:.0f}")
        ax1.axhline(MUFU_PEAK_GEVAL, color=MODEL_COLOR, linestyle=":", linewidth=1.3,
                    label=f"MUFU peak, {MUFU_PEAK_GEVAL:.0f} Geval/s: 16/clk/SM × 132 SMs "
                    "× 1.98 GHz\n(computed in §9, not measured)")
        ax1.set_ylim(0, MUFU_PEAK_GEVAL * 1.3)
        ax1.set_ylabel("10⁹ evaluations per second")
        ax1.legend(loc="upper left", framealpha=0.92, fontsize=7)
        _title(ax1, "terms = 64, n = 2²⁴: MUFU-bound", 0)
        _grouped_bars(ax2, funcs, [("PTX wrapper (ptx_*)", "#0072B2", rows("ptx", "67108864", 1)),
                                   ("library function", "#E69F00",
                                    rows("library", "67108864", 1))],
                      lambda r: r.pct_copy, _pct)
        _pct_copy_axis(ax2)
        ax2.legend(loc="lower right", framealpha=0.92, fontsize=7)
        _title(ax2, "terms = 1, n = 2²⁶: memory-bound", 1)
        S.mark_title(fig.suptitle("Day 3 fast math: the PTX wrappers against the library "
                                  "functions (§9)"), 2)
        _source_note(fig, b, "d03")
        paths += S.save(fig, out, "d03_fast_math")

    names = [("BM_segment_sum/67108864", "segment_sum"),
             ("BM_segment_max/67108864", "segment_max"),
             ("BM_segment_broadcast/67108864", "segment_broadcast"),
             ("BM_segment_scan/67108864", "segment_scan"),
             ("BM_segment_sum_f64/33554432", "segment_sum_f64 (2²⁵ doubles)"),
             ("BM_segment_max_pairs/33554432", "segment_max_pairs (2²⁵ half pairs)"),
             ("BM_gelu_fast<float>/67108864", "gelu_fast<float> (key)"),
             ("BM_gelu_fast<course::half>/67108864", "gelu_fast<half>"),
             ("BM_gelu_fast<course::bfloat16>/67108864", "gelu_fast<bfloat16>"),
             ("BM_gelu_tanhf/67108864", "gelu_tanhf")]
    rows_ = [b.row(n) for n, _ in names]
    colors = ["#009E73" if n.startswith("BM_segment") else "#0072B2" for n, _ in names]
    with S.style():
        fig = S.new_figure(8.0, 4.4)
        ax = fig.add_subplot()
        ys = list(range(len(rows_)))
        ax.barh(ys, [r.pct_copy for r in rows_], color=colors, height=0.65, zorder=3,
                edgecolor=[KEY_EDGE if r.key else c for r, c in zip(rows_, colors)],
                linewidth=[1.4 if r.key else 0 for r in rows_])
        _value_labels(ax, ys, [r.pct_copy for r in rows_],
                      lambda v: f"{v:.1f}%", horizontal=True, fontsize=7.5)
        ax.set_yticks(ys)
        ax.set_yticklabels([label for _, label in names])
        ax.set_ylim(len(rows_) - 0.5, -0.5)
        ax.set_xlim(0, 110)
        ax.axvline(100, color=S.CEILING_COLOR, linestyle="--", linewidth=1.0)
        ax.xaxis.set_major_formatter(PercentFormatter(100.0, decimals=0))
        ax.set_xlabel("% of the copy ceiling")
        ax.grid(axis="y", visible=False)
        _title(ax, "Warp shuffles (green) and GeLU (blue) on 2²⁶ elements (§9)")
        _source_note(fig, b, "d03")
        paths += S.save(fig, out, "d03_shuffles_gelu")
    return paths


# ------------------------------------------------------------------------------- Day 4

VARIANTS = ["1_naive", "2_smem", "3_padded", "4_swizzled", "5_vectorized"]
TRANSPOSE_TARGET = 85.0  # the day's target for the best float32 variant, lesson 4 §8.1


def _transpose_cats() -> List[str]:
    return ["cudaMemcpy\n(a copy)"] + [v.replace("_", " ", 1) for v in VARIANTS]


def _target_line(ax) -> None:
    ax.axhline(TRANSPOSE_TARGET, color=TARGET_COLOR, linestyle=":", linewidth=1.3,
               label="the day's target: 85% (best float32 variant)")


def day4(b: BenchFile, out: str) -> List[str]:
    paths = []
    sq = "rows:8192/cols:8192"

    def rows(t: str, shape: str) -> List[Optional[BenchRow]]:
        copy = b.row(f"BM_copy_cudaMemcpy<{t}>/{shape}") if t != "bfloat16" else None
        return [copy] + [b.row(f"BM_transpose_{v}<{t}>/{shape}") for v in VARIANTS]

    with S.style():
        fig = S.new_figure(9.0, 4.2)
        ax = fig.add_subplot()
        _grouped_bars(ax, _transpose_cats(),
                      [(FLOAT, DTYPE_COLORS[FLOAT], rows("float", sq)),
                       (HALF, DTYPE_COLORS[HALF], rows("half", sq)),
                       (BF16, DTYPE_COLORS[BF16], rows("bfloat16", sq))],
                      lambda r: r.pct_copy, lambda v: f"{v:.0f}")
        _pct_copy_axis(ax, top=128.0)
        _target_line(ax)
        ax.legend(loc="upper center", ncol=4, framealpha=0.92)
        _title(ax, "Transpose of 8192 × 8192, variants 1-5, in % of the copy ceiling (§8.1)")
        _source_note(fig, b, "d04", "No bfloat16 copy row; ringed: the day's key row")
        paths += S.save(fig, out, "d04_transpose_dtypes")

    shapes = [("8192 × 8192", sq, "#0072B2"), ("4096 × 16384", "rows:4096/cols:16384", "#56B4E9"),
              ("4097 × 8191", "rows:4097/cols:8191", "#D55E00")]
    with S.style():
        fig = S.new_figure(9.0, 4.2)
        ax = fig.add_subplot()
        _grouped_bars(ax, _transpose_cats(),
                      [(label, color, rows("float", args)) for label, args, color in shapes],
                      lambda r: r.pct_copy, lambda v: f"{v:.0f}")
        _pct_copy_axis(ax, top=128.0)
        _target_line(ax)
        ax.legend(loc="upper center", ncol=4, framealpha=0.92)
        _title(ax, "Transpose of float32 matrices of three shapes, in % of the copy ceiling "
               "(§8.1)")
        _source_note(fig, b, "d04", "4097 × 8191 moves about half the bytes of the others")
        paths += S.save(fig, out, "d04_transpose_shapes")
    return paths


# ------------------------------------------------------------------------------- Day 5

SOFTMAX_TARGET_GBS = 2700.0  # lesson 5's target for the headline
RMSNORM_TARGET_GBS = 2700.0  # lesson 6's target for the headline


def day5(b: BenchFile, out: str) -> List[str]:
    paths = []
    block = [(c, b.row(f"BM_softmax_2_block_per_row/rows:{r}/cols:{c}/threads:0"))
             for r, c in ((32768, 1024), (16384, 2048), (8192, 8192), (4096, 32000),
                          (1024, 131072))]
    warp = [(c, b.row(f"BM_softmax_1_warp_per_row/rows:{r}/cols:{c}"))
            for r, c in ((65536, 128), (32768, 1024), (16384, 2048), (8192, 8192),
                         (4096, 32000))]
    sixteen = [("block per row, float16", "s", [
                   (8192, b.row("BM_softmax_2_block_per_row_float16/rows:8192/cols:8192/"
                                "threads:0")),
                   (32000, b.row("BM_softmax_2_block_per_row_float16/rows:4096/cols:32000/"
                                 "threads:0"))]),
               ("block per row, bfloat16", "D", [
                   (8192, b.row("BM_softmax_2_block_per_row_bfloat16/rows:8192/cols:8192/"
                                "threads:0"))]),
               ("warp per row, float16", "^", [
                   (1024, b.row("BM_softmax_1_warp_per_row_float16/rows:32768/cols:1024"))])]
    threads = [128, 256, 512, 1024]
    by_threads = [b.row(f"BM_softmax_2_block_per_row/rows:8192/cols:8192/threads:{t}")
                  for t in threads]
    headline = b.row("BM_softmax_2_block_per_row/rows:8192/cols:8192/threads:0")
    with S.style():
        fig = S.new_figure(10.5, 4.6)
        ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.7, 1.0]})
        ax1.set_xscale("log", base=2)
        ax1.plot([c for c, _ in block], [r.gbs for _, r in block], marker="o",
                 color="#0072B2", label="block per row, float32 (launcher's block size)",
                 zorder=3)
        ax1.plot([c for c, _ in warp], [r.gbs for _, r in warp], marker="v", color="#D55E00",
                 label="warp per row, float32", zorder=3)
        for label, marker, pts in sixteen:
            ax1.plot([c for c, _ in pts], [r.gbs for _, r in pts], marker=marker,
                     linestyle="none", markerfacecolor="none", markersize=7,
                     color="#444444" if "bfloat" in label else "#009E73", label=label,
                     zorder=4)
        ax1.plot([8192], [headline.gbs], marker="o", markersize=12, markerfacecolor="none",
                 markeredgecolor=KEY_EDGE, linestyle="none", label="the headline (key)")
        ax1.axhline(SOFTMAX_TARGET_GBS, color=TARGET_COLOR, linestyle=":", linewidth=1.3,
                    label="the headline's target: 2700 GB/s")
        cols = [128, 1024, 2048, 8192, 32000, 131072]
        ax1.xaxis.set_major_locator(FixedLocator(cols))
        ax1.xaxis.set_minor_locator(FixedLocator([]))
        ax1.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax1.set_xlabel("columns per row (log₂ scale; rows × cols = 2²³ to 2²⁷)")
        _gbs_axes(ax1, b, top=b.ceiling_gbs * 1.45)
        ax1.legend(loc="upper left", ncol=2, fontsize=7, framealpha=0.92)
        _title(ax1, "Row softmax against the row length", 0)
        xs = list(range(len(threads) + 1))
        vals = [headline] + by_threads
        ax2.bar(xs, [r.gbs for r in vals], width=0.6, zorder=3,
                color=["#0072B2"] + ["#56B4E9"] * len(threads),
                edgecolor=[KEY_EDGE if r.key else "none" for r in vals],
                linewidth=[1.4 if r.key else 0 for r in vals])
        _value_labels(ax2, xs, [r.gbs for r in vals], lambda v: f"{v:.0f}")
        ax2.set_xticks(xs)
        ax2.set_xticklabels(["launcher"] + [str(t) for t in threads])
        ax2.grid(axis="x", visible=False)
        ax2.set_xlabel("threads per block (128: the three-pass kernel)")
        _gbs_axes(ax2, b, top=b.ceiling_gbs * 1.45)
        ax2.legend(loc="upper left", fontsize=7, framealpha=0.92)
        _title(ax2, "Block per row, 8192 × 8192 float32", 1)
        _source_note(fig, b, "d05")
        paths += S.save(fig, out, "d05_softmax")

    kept = [0, 50, 100]
    kernels = [("compact_0_cub (CUB, one pass)", "#999999", "o", "BM_compact_0_cub", 1),
               ("compact_1_ballot", "#0072B2", "s", "BM_compact_1_ballot", -1),
               ("compact_2_cooperative_groups", "#E69F00", "^",
                "BM_compact_2_cooperative_groups", 1)]
    c = b.ceiling_gbs
    with S.style():
        fig = S.new_figure(7.5, 4.4)
        ax = fig.add_subplot()
        for label, color, marker, fam, side in kernels:
            rows = [b.row(f"{fam}/n:67108864/kept_%:{k}") for k in kept]
            ax.plot(kept, [r.gbs for r in rows], marker=marker, color=color, label=label,
                    zorder=3)
            for k, r in zip(kept, rows):  # above the line, or below it where lines are close
                ax.annotate(f"{r.gbs:.0f}", xy=(k, r.gbs), xytext=(0, 4 * side),
                            textcoords="offset points", ha="center",
                            va="bottom" if side > 0 else "top", fontsize=7, color=color)
        fine = [k * 0.5 for k in range(0, 201)]
        ax.plot(fine, [c * (1 + k / 100) / (2 + k / 100) for k in fine], linestyle=":",
                color=MODEL_COLOR, label="a two-pass kernel's bound (§11.2): the ceiling × "
                "(n + kept) ÷ (2n + kept)")
        ax.set_xticks(kept)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.0f}%"))
        ax.set_xlabel("elements kept")
        _gbs_axes(ax, b, top=c * 1.12)
        ax.legend(loc="lower right", fontsize=7.5, framealpha=0.92)
        _title(ax, "Stream compaction of 2²⁶ float32, bytes = 4 · (n + kept)")
        _source_note(fig, b, "d05")
        paths += S.save(fig, out, "d05_compaction")
    return paths


# ------------------------------------------------------------------------------- Day 6


def day6(b: BenchFile, out: str) -> List[str]:
    paths = []
    hidden = [128, 1024, 4096, 8192, 16384]
    bf16 = [b.row(f"BM_rmsnorm_bf16/rows:16384/hidden:{h}") for h in hidden]
    odd = b.row("BM_rmsnorm_bf16/rows:16384/hidden:4097")
    f16 = b.row("BM_rmsnorm_f16/rows:16384/hidden:4096")
    f32 = b.row("BM_rmsnorm_f32/rows:16384/hidden:4096")
    with S.style():
        fig = S.new_figure(7.5, 4.4)
        ax = fig.add_subplot()
        ax.set_xscale("log", base=2)
        ax.plot(hidden, [r.gbs for r in bf16], marker="o", color="#0072B2", zorder=3,
                label="RMSNorm, bfloat16")
        for h, r in zip(hidden, bf16):
            ax.annotate(f"{r.gbs:.0f}", xy=(h, r.gbs), xytext=(0, -7), textcoords="offset points",
                        ha="center", va="top", fontsize=7, color="#0072B2")
        ax.plot([4097], [odd.gbs], marker="X", markersize=8, color="#D55E00",
                linestyle="none", zorder=4,
                label=f"bfloat16, hidden 4097 (one element at a time): {odd.gbs:.0f} GB/s")
        ax.plot([4096], [f16.gbs], marker="s", markerfacecolor="none", markersize=9,
                color="#E69F00", linestyle="none", zorder=4,
                label=f"float16, 4096: {f16.gbs:.0f} GB/s")
        ax.plot([4096], [f32.gbs], marker="D", markerfacecolor="none", markersize=9,
                color="#009E73", linestyle="none", zorder=4,
                label=f"float32, 4096: {f32.gbs:.0f} GB/s")
        key = next(r for r in bf16 if r.key)
        ax.plot([key.name.arg("hidden")], [key.gbs], marker="o", markersize=13,
                markerfacecolor="none", markeredgecolor=KEY_EDGE, linestyle="none",
                label="the headline (key)")
        ax.axhline(RMSNORM_TARGET_GBS, color=TARGET_COLOR, linestyle=":", linewidth=1.3,
                   label="the headline's target: 2700 GB/s")
        ax.xaxis.set_major_locator(FixedLocator(hidden))
        ax.xaxis.set_minor_locator(FixedLocator([]))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.set_xlabel("hidden size (log₂ scale); 16384 rows")
        _gbs_axes(ax, b, top=b.ceiling_gbs * 1.3)
        ax.legend(loc="lower right", fontsize=7, framealpha=0.92)
        _title(ax, "RMSNorm against the hidden size (§8.1)")
        _source_note(fig, b, "d06")
        paths += S.save(fig, out, "d06_rmsnorm_hidden")

    names = [("BM_sum_1_two_pass/n:67108864", "sum_1_two_pass, 2²⁶ (read only)", "#009E73"),
             ("BM_sum_2_atomic/n:67108864", "sum_2_atomic, 2²⁶ (read only)", "#009E73"),
             ("BM_sum_1_two_pass/n:1048576", "sum_1_two_pass, 2²⁰", "#009E73"),
             ("BM_sum_2_atomic/n:1048576", "sum_2_atomic, 2²⁰", "#009E73"),
             ("BM_rmsnorm_bf16/rows:16384/hidden:4096", "rmsnorm_bf16, 16384 × 4096 (key)",
              "#0072B2"),
             ("BM_fused_add_rmsnorm_bf16/rows:16384/hidden:4096",
              "fused_add_rmsnorm_bf16, 16384 × 4096", "#0072B2"),
             ("BM_fused_add_rmsnorm_bf16/rows:16384/hidden:8192",
              "fused_add_rmsnorm_bf16, 16384 × 8192", "#0072B2"),
             ("BM_layernorm_bf16/rows:16384/hidden:4096", "layernorm_bf16, 16384 × 4096",
              "#56B4E9"),
             ("BM_layernorm_bf16/rows:16384/hidden:1024", "layernorm_bf16, 16384 × 1024",
              "#56B4E9"),
             ("BM_softmax_online_f32/rows:4096/cols:32768", "softmax_online_f32, 4096 × 32768",
              "#E69F00"),
             ("BM_softmax_online_f32/rows:512/cols:262144", "softmax_online_f32, 512 × 262144",
              "#E69F00"),
             ("BM_softmax_online_bf16/rows:4096/cols:32768",
              "softmax_online_bf16, 4096 × 32768", "#E69F00"),
             ("BM_softmax_online_bf16/rows:512/cols:262144",
              "softmax_online_bf16, 512 × 262144", "#E69F00")]
    rows = [b.row(n) for n, _, _ in names]
    with S.style():
        fig = S.new_figure(8.5, 5.0)
        ax = fig.add_subplot()
        ys = list(range(len(rows)))
        colors = [c for _, _, c in names]
        ax.barh(ys, [r.pct_copy for r in rows], color=colors, height=0.65, zorder=3,
                edgecolor=[KEY_EDGE if r.key else c for r, c in zip(rows, colors)],
                linewidth=[1.4 if r.key else 0 for r in rows])
        _value_labels(ax, ys, [r.pct_copy for r in rows], lambda v: f"{v:.1f}%",
                      horizontal=True, fontsize=7.5)
        ax.set_yticks(ys)
        ax.set_yticklabels([label for _, label, _ in names])
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlim(0, 115)
        ax.axvline(100, color=S.CEILING_COLOR, linestyle="--", linewidth=1.0)
        ax.xaxis.set_major_formatter(PercentFormatter(100.0, decimals=0))
        ax.set_xlabel("% of the copy ceiling (the sums: bytes read only, against the read + "
                      "write copy rate)")
        ax.grid(axis="y", visible=False)
        _title(ax, "Sums, norms and the online softmax (§8.1)")
        _source_note(fig, b, "d06")
        paths += S.save(fig, out, "d06_kernels")
    return paths


# ------------------------------------------------------------------------------- Day 10

# (step label, benchmark name, dtype, the target in % of the vendor or None). The
# steps at 4096^3, then steps 7 and 8 at 8192^3 too.
GEMM_STEPS = [
    ("1 naive", "BM_gemm_1_naive/M:4096/N:4096/K:4096", FLOAT, None),
    ("2 smem", "BM_gemm_2_smem/M:4096/N:4096/K:4096", FLOAT, None),
    ("3 register\ntile", "BM_gemm_3_register_tile/M:4096/N:4096/K:4096", FLOAT, None),
    ("4 vectorized", "BM_gemm_4_vectorized/M:4096/N:4096/K:4096", FLOAT, None),
    ("5 warp tile", "BM_gemm_5_warp_tile/M:4096/N:4096/K:4096", FLOAT, 85.0),
    ("6 mma\nB [N, K]", "BM_gemm_6_mma/M:4096/N:4096/K:4096/b_col_major:1", BF16, 55.0),
    ("6 mma\nB [K, N]", "BM_gemm_6_mma/M:4096/N:4096/K:4096/b_col_major:0", BF16, None),
    ("7 wgmma", "BM_gemm_7_wgmma/M:4096/N:4096/K:4096", BF16, None),
    ("7 wgmma\n8192³", "BM_gemm_7_wgmma/M:8192/N:8192/K:8192", BF16, 80.0),
    ("8 fp8", "BM_gemm_8_fp8/M:4096/N:4096/K:4096", FP8, None),
    ("8 fp8\n8192³", "BM_gemm_8_fp8/M:8192/N:8192/K:8192", FP8, 70.0),
]
VENDOR_COLOR = "#999999"
MMA_CEILING_ROW = "BM_mma_sync_ceiling"  # step 6's instruction from registers only (§7.7)


def vendor_tflops(r: BenchRow) -> float:
    """The vendor's TFLOP/s on the row's shape: %vendor = 100 x the vendor's median / ours, and
    the flops are the same, so the vendor's rate is ours x 100 / %vendor."""
    share = r.counters.get("%vendor")
    if not share or r.tflops is None:
        raise InputError(f"{r.name.full}: no %vendor or no TFLOP/s counter")
    return r.tflops * 100.0 / share


def day10(b: BenchFile, out: str) -> List[str]:
    rows = [b.row(name) for _, name, _, _ in GEMM_STEPS]
    ours = [r.tflops for r in rows]
    vendor = [vendor_tflops(r) for r in rows]
    xs = list(range(len(rows)))
    width = 0.4
    with S.style():
        fig = S.new_figure(10.5, 4.8)
        ax = fig.add_subplot()
        ax.set_yscale("log")
        colors = [DTYPE_COLORS[dtype] for _, _, dtype, _ in GEMM_STEPS]
        ax.bar([x - width / 2 for x in xs], ours, width=width * 0.92, color=colors, zorder=3,
               edgecolor=[KEY_EDGE if r.key else c for r, c in zip(rows, colors)],
               linewidth=[1.4 if r.key else 0 for r in rows])
        ax.bar([x + width / 2 for x in xs], vendor, width=width * 0.92, color=VENDOR_COLOR,
               zorder=3)
        def fmt(v: float) -> str:
            return f"{v:.0f}" if v >= 100 else f"{v:.3g}"

        _value_labels(ax, [x - width / 2 for x in xs], ours, fmt, fontsize=6.5)
        _value_labels(ax, [x + width / 2 for x in xs], vendor, fmt, fontsize=6.5)
        for x, r, (_, _, _, target) in zip(xs, rows, GEMM_STEPS):
            share = r.counters["%vendor"]
            text = f"{share:.1f}%"
            color = "#333333"
            if target is not None:
                met = share >= target
                text += f"\ntarget ≥ {target:.0f}%:\n{'met' if met else 'missed'}"
                color = TARGET_COLOR if met else "#C0392B"
            ax.annotate(text, xy=(x, 9000.0), ha="center", va="top", fontsize=6.8, color=color)
        # The mma.sync ceiling over the two step-6 pairs: what their instruction can do at best.
        ceiling = b.row(MMA_CEILING_ROW).tflops
        mma_xs = [x for x, (_, name, _, _) in zip(xs, GEMM_STEPS) if "gemm_6_mma" in name]
        ax.hlines(ceiling, min(mma_xs) - 0.45, max(mma_xs) + 0.45, colors=MODEL_COLOR,
                  linestyles="--", linewidth=1.1, zorder=4)
        ax.annotate(f"mma.sync ceiling {ceiling:.0f}", xy=(min(mma_xs) - 0.45, ceiling * 1.08),
                    fontsize=6.5, color=MODEL_COLOR)
        for x in (4.5, 8.5):  # float32 | bfloat16 | fp8
            ax.axvline(x, color="#CCCCCC", linewidth=0.8)
        ax.set_ylim(1.0, 10000.0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.set_ylabel("TFLOP/s (log scale), flops = 2·M·N·K")
        ax.set_xticks(xs)
        ax.set_xticklabels([label for label, _, _, _ in GEMM_STEPS])
        ax.tick_params(axis="x", labelsize=7.5)
        ax.grid(axis="x", visible=False)
        handles = [Patch(color=DTYPE_COLORS[t], label=f"ours, {t}") for t in (FLOAT, BF16, FP8)]
        handles.append(Patch(color=VENDOR_COLOR, label="cuBLAS (SGEMM, bf16 GemmEx, cuBLASLt "
                             "FP8), same shape and process:\nours × 100 / %vendor"))
        handles.append(Line2D([], [], color=MODEL_COLOR, linestyle="--",
                              label="mma.sync from registers only (BM_mma_sync_ceiling)"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, 0.86), fontsize=7,
                  framealpha=0.92)
        _title(ax, "Day 10's steps next to cuBLAS, 4096³ unless marked; above: %vendor "
               "(100 × cuBLAS's time / ours) and the issue's targets (§10)")
        _source_note(fig, b, "d10", "Ringed: the day's key row")
        return S.save(fig, out, "d10_steps")


# ------------------------------------------------------------------------------- all of them

DRAWERS = {"d01": day1, "d02": day2, "d03": day3, "d04": day4, "d05": day5, "d06": day6,
           "d10": day10}

# Which figure goes with which lesson (the tests check that each lesson cites its figures).
LESSON_FIGURES: Dict[str, List[str]] = {
    "d01": ["d01_bandwidth", "d01_roofline_all_days"],
    "d02": ["d02_copies", "d02_strided", "d02_fusion"],
    "d03": ["d03_fast_math", "d03_shuffles_gelu"],
    "d04": ["d04_transpose_dtypes", "d04_transpose_shapes"],
    "d05": ["d05_softmax", "d05_compaction"],
    "d06": ["d06_rmsnorm_hidden", "d06_kernels"],
    "d10": ["d10_steps"],
    "d14": ["d14_layer", "d14_triton"],
}

def draw_lessons(measurements: str, out: str) -> List[str]:
    """Every lesson figure into out; returns the paths written."""
    if not os.path.isdir(measurements):
        raise InputError(f"--measurements {measurements}: not a folder")
    files = []
    for day in DAYS + LATER_DAYS:
        path = os.path.join(measurements, *SOURCES[day].split("/"))
        f = load_bench(path)
        if f.ceiling_gbs is None:
            raise InputError(f"{path}: no context.copy_ceiling_GBps")
        files.append(f)
    paths = []
    for day, f in zip(DAYS + LATER_DAYS, files):
        paths += DRAWERS[day](f, out)
    paths += roofline_all(files[:len(DAYS)], out)
    paths += day14(measurements, out)
    return paths


def day14(measurements: str, out: str) -> List[str]:
    """Day 14's two figures: the layer against PyTorch (python/bench_layer.py's JSON) and Days 2,
    5 and 6 beside Triton (python/bench_triton.py's)."""
    layer = F.load_json(os.path.join(measurements, *SOURCES["d14"].split("/")), "layer results")
    paths = F.plot_layer_speedups(layer, out, "d14_layer",
                                  note=f"Measured: {source_path('d14')} (python/bench_layer.py)")
    triton = F.load_json(os.path.join(measurements, *D14_TRITON.split("/")), "Triton results")
    paths += F.plot_triton_bandwidth(
        triton, out, "d14_triton",
        note=f"Measured: results/h100/{D14_TRITON} (python/bench_triton.py), "
             f"{triton.get('device', '')}")
    return paths
