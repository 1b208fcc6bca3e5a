"""The four general plots: roofline, sweep, leaderboard, distribution.

Each plot_* function takes already-read inputs (courseplots.data), writes PNG + SVG files into
out_dir and returns their paths. Nothing here reads the command line.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from matplotlib.lines import Line2D
from matplotlib.ticker import (FixedLocator, FuncFormatter, NullFormatter, NullLocator,
                               PercentFormatter)

from . import style as S
from .data import (Board, BenchFile, BenchRow, InputError, StudentDay, STATUS_WORDS, Number,
                   slug)

# The compute roof when none is given: the H100 SXM's dense float32 rate on CUDA cores (no
# tensor cores), from NVIDIA's datasheet; lesson 1 §1.3 and §6.2 use the same number.
DATASHEET_PEAK_TFLOPS = 67.0
DATASHEET_PEAK_LABEL = "H100 SXM datasheet, FP32 on CUDA cores (non-tensor)"
# Where rows without a FLOP count are drawn on the roofline (see roofline_points).
NOMINAL_INTENSITY = 0.05


# ------------------------------------------------------------------------------- formatting


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def fmt_arg(v: Number) -> str:
    """A benchmark argument for a tick: 2²⁶ for a power of two from 2²⁰ on, else the number."""
    if float(v).is_integer():
        i = int(v)
        if i >= 1 << 20 and i & (i - 1) == 0:
            return "2" + str(i.bit_length() - 1).translate(_SUPERSCRIPT)
        return str(i)
    return f"{v:g}"


def fmt_power10(v: float) -> str:
    """10⁻³ for 0.001: a log axis's tick without mathtext."""
    if v <= 0:
        return f"{v:g}"
    e = math.log10(v)
    if abs(e - round(e)) < 1e-9:
        return "10" + str(int(round(e))).translate(_SUPERSCRIPT)
    return f"{v:g}"


def short_family(family: str) -> str:
    return family[3:] if family.startswith("BM_") else family


def _ceiling_axis(ax, ceiling: float) -> None:
    """A right-hand axis in % of the copy ceiling for a GB/s axis."""
    sec = ax.secondary_yaxis("right", functions=(lambda g: g / ceiling * 100.0,
                                                 lambda p: p * ceiling / 100.0))
    sec.set_ylabel("% of the copy ceiling")


def _ceiling_line(ax, ceiling: float, label: str) -> None:
    ax.axhline(ceiling, color=S.CEILING_COLOR, linestyle="--", linewidth=1.0, label=label)


def _log2_ticks(ax, values: Sequence[float], axis: str = "x") -> None:
    """Ticks at the data's own values (those at least 3% apart on a log scale)."""
    ticks: List[float] = []
    for v in sorted(set(values)):
        far = ticks and ticks[-1] > 0 and v / ticks[-1] > 1.03
        if not ticks or ticks[-1] <= 0 < v or far:
            ticks.append(v)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(ticks))
    target.set_minor_locator(NullLocator())
    target.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_arg(v)))


# ------------------------------------------------------------------------------- roofline


@dataclass
class RooflinePoint:
    row: BenchRow
    intensity: float  # FLOP per byte (nominal when flops_measured is False)
    tflops: float  # attained (nominal when flops_measured is False)
    flops_measured: bool


def roofline_points(files: Sequence[BenchFile],
                    nominal: float = NOMINAL_INTENSITY) -> List[RooflinePoint]:
    """Every timed row with a GB/s counter as a point.

    With a TFLOP/s counter (the benchmark gave its FLOPs): intensity = FLOP/s / bytes/s, where
    bytes/s = GB/s x 1e9 and FLOP/s = TFLOP/s x 1e12. Without one (copies, transposes, and the
    rows whose lab counts no FLOPs) the row is drawn at the nominal intensity, at the height its
    bandwidth gives there (GB/s x 1e9 x nominal): on the memory roof's scale, its distance below
    the roof is its fraction of the copy ceiling. Such a point says nothing about FLOPs, and the
    legend says so.
    """
    points = []
    labs = sorted({r.lab for f in files for r in f.rows})
    for f in files:
        for r in f.rows:
            if r.gbs is None or r.gbs <= 0:
                continue
            if r.tflops is not None and r.tflops > 0:
                ai = r.tflops * 1e12 / (r.gbs * 1e9)
                points.append(RooflinePoint(r, ai, r.tflops, True))
            else:
                # Spread the labs a little around the nominal intensity, so that they can be
                # told apart; the height stays bandwidth x intensity, on the same scale.
                k = labs.index(r.lab) - (len(labs) - 1) / 2.0 if r.lab in labs else 0.0
                ai = nominal * 2.0 ** (0.09 * k)
                points.append(RooflinePoint(r, ai, r.gbs * 1e9 * ai / 1e12, False))
    return points


def group_by_gpu(files: Sequence[BenchFile], gpu_name: str = "") -> "OrderedDict[str, List]":
    groups: "OrderedDict[str, List[BenchFile]]" = OrderedDict()
    for f in files:
        groups.setdefault(gpu_name or f.gpu, []).append(f)
    return groups


def plot_roofline(files: Sequence[BenchFile], out_dir: str, gpu_name: str = "",
                  peak_tflops: float = DATASHEET_PEAK_TFLOPS, peak_label: str = "",
                  nominal: float = NOMINAL_INTENSITY, ceiling_gbs: Optional[float] = None,
                  stem: str = "", title: str = "") -> List[str]:
    """One roofline per GPU (the files' context, or gpu_name for all of them)."""
    if not peak_label:
        peak_label = (DATASHEET_PEAK_LABEL if peak_tflops == DATASHEET_PEAK_TFLOPS
                      else "--peak-tflops")
    paths = []
    groups = group_by_gpu(files, gpu_name)
    for gpu, group in groups.items():
        name = stem or "roofline"
        if len(groups) > 1:
            name += "_" + slug(gpu)
        paths += _roofline_one(group, out_dir, gpu, peak_tflops, peak_label, nominal,
                               ceiling_gbs, name, title)
    return paths


def _roofline_one(files: Sequence[BenchFile], out_dir: str, gpu: str, peak_tflops: float,
                  peak_label: str, nominal: float, ceiling_gbs: Optional[float], stem: str,
                  title: str) -> List[str]:
    ceilings = [f.ceiling_gbs for f in files if f.ceiling_gbs]
    if ceiling_gbs:
        roof_gbs = ceiling_gbs
        roof_label = f"memory roof: {roof_gbs:.0f} GB/s (--ceiling-gbps)"
    elif ceilings:
        roof_gbs = max(ceilings)
        spread = (f"{min(ceilings):.0f}–{max(ceilings):.0f} GB/s in {len(ceilings)} processes; "
                  "the highest" if len(ceilings) > 1 else "measured in the benchmark process")
        roof_label = f"memory roof: measured copy ceiling, {roof_gbs:.0f} GB/s ({spread})"
    else:
        raise InputError(f"{gpu}: no file has context.copy_ceiling_GBps, the measured copy "
                         "ceiling the memory roof is drawn from (give --ceiling-gbps)")
    points = roofline_points(files, nominal)
    if not points:
        raise InputError(f"{gpu}: no timed row with a GB/s counter to draw")
    peak = peak_tflops
    ridge = peak * 1e12 / (roof_gbs * 1e9)
    xs = [p.intensity for p in points]
    ys = [p.tflops for p in points]
    x_lo = 2.0 ** math.floor(math.log2(min(min(xs) / 2.0, nominal / 2.0)))
    x_hi = 2.0 ** math.ceil(math.log2(max(ridge * 16.0, max(xs) * 4.0)))
    y_lo = 10.0 ** math.floor(math.log10(min(ys) / 2.0))
    y_hi = 10.0 ** math.ceil(math.log10(peak * 2.0))

    with S.style():
        fig = S.new_figure(9.0, 5.8)
        ax = fig.add_subplot()
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlim(x_lo, x_hi)
        ax.set_ylim(y_lo, y_hi)
        bw = roof_gbs * 1e9 / 1e12  # TFLOP/s per (FLOP/byte)
        ax.plot([x_lo, ridge], [x_lo * bw, peak], color=S.CEILING_COLOR, linewidth=1.6,
                label=roof_label, zorder=2)
        ax.plot([ridge, x_hi], [peak, peak], color="#7F3C8D", linewidth=1.6,
                label=f"compute roof: {peak:g} TFLOP/s ({peak_label})", zorder=2)
        ax.axvline(ridge, color="#7F3C8D", linestyle=":", linewidth=0.9, zorder=1)
        ax.annotate(f"ridge: {ridge:.1f} FLOP/byte", xy=(ridge, peak), xytext=(5, -5),
                    textcoords="offset points", va="top", fontsize=8, color="#7F3C8D")
        ax.axvline(nominal, color="#999999", linestyle=(0, (1, 3)), linewidth=0.8, zorder=1)
        labs = sorted({p.row.lab for p in points})
        for i, lab in enumerate(labs):
            mine = [p for p in points if p.row.lab == lab]
            color, marker = S.lab_color(lab, i), S.lab_marker(lab, i)
            measured = [p for p in mine if p.flops_measured]
            nominal_pts = [p for p in mine if not p.flops_measured]
            n_measured = len(measured)
            ax.scatter([p.intensity for p in measured], [p.tflops for p in measured],
                       s=26, marker=marker, color=color, edgecolors="none", zorder=4,
                       label=f"{lab or 'unknown lab'}: {len(mine)} rows"
                             f" ({n_measured} with FLOPs)")
            ax.scatter([p.intensity for p in nominal_pts], [p.tflops for p in nominal_pts],
                       s=26, marker=marker, facecolors="none", edgecolors=color,
                       linewidths=0.9, zorder=3)
            keys = [p for p in mine if p.row.key]
            ax.scatter([p.intensity for p in keys], [p.tflops for p in keys], s=90,
                       marker=marker, facecolors="none", edgecolors="black", linewidths=1.2,
                       zorder=5)
        handles, labels = ax.get_legend_handles_labels()
        handles += [Line2D([], [], linestyle="none", marker="o", markerfacecolor="none",
                           markeredgecolor="#555555"),
                    Line2D([], [], linestyle="none", marker="o", markersize=9,
                           markerfacecolor="none", markeredgecolor="black", markeredgewidth=1.2)]
        labels += [f"hollow: no FLOP counter (copies, transposes, ...): drawn at a nominal "
                   f"{nominal:g} FLOP/byte,\n"
                   f"    height = GB/s × {nominal:g}; its distance below the memory roof is "
                   "its fraction of the ceiling",
                   "ringed: the day's headline (key) row"]
        ax.legend(handles, labels, loc="lower right", framealpha=0.92)
        ax.set_xlabel("arithmetic intensity (FLOP per byte moved, bytes read + written)")
        ax.set_ylabel("attained TFLOP/s")
        # Tick labels as plain text, not mathtext: the same <text> in the SVG of every version.
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.3g}"))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: fmt_power10(v)))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_minor_formatter(NullFormatter())
        t = ax.set_title(title or f"Roofline, {gpu}: every benchmark row of "
                         f"{', '.join(l for l in labs if l) or 'the files'}")
        S.mark_title(t)
        paths = S.save(fig, out_dir, stem)
    return paths


# ------------------------------------------------------------------------------- sweep


@dataclass
class Sweep:
    family: str
    x_key: str  # the argument along x; "" when x is categorical (argument combinations)
    categories: List[str]  # the x labels when categorical
    series: "OrderedDict[str, List[Tuple[object, BenchRow]]]"  # label -> [(x, row)]
    fixed: List[str]  # arguments the same in every row, for the subtitle


def _arg_label(key: str) -> str:
    return f"argument {key[1:]}" if key.startswith("#") else key


def _series_label(row: BenchRow, skip: Sequence[str]) -> str:
    parts = []
    if row.name.dtype:
        parts.append(row.name.dtype)
    parts += list(row.name.labels)
    parts += [f"{_arg_label(k)}={fmt_arg(v)}" for k, v in row.name.args if k not in skip]
    return ", ".join(parts)


def plan_sweep(family: str, rows: Sequence[BenchRow], x_key: str = "") -> Sweep:
    """Which argument goes along x, and which rows make one line.

    x is the numeric argument that puts the most rows on lines of two or more points (ties:
    the one with more distinct values, then the first in the name). When no argument does (every
    argument changes with the others, as rows:8192/cols:8192 against rows:4096/cols:16384), x
    lists the argument combinations as categories instead.
    """
    keys: List[str] = []
    for r in rows:
        for k, _ in r.name.args:
            if k not in keys:
                keys.append(k)
    values = {k: {r.name.arg(k) for r in rows} for k in keys}
    varying = [k for k in keys if len(values[k]) > 1]
    fixed = [f"{_arg_label(k)} = {fmt_arg(next(iter(values[k])))}" for k in keys
             if len(values[k]) == 1 and None not in values[k]]

    def lines_for(k: str) -> "OrderedDict[str, List[Tuple[object, BenchRow]]]":
        out: "OrderedDict[str, List[Tuple[object, BenchRow]]]" = OrderedDict()
        others = [o for o in keys if o != k and o not in varying] + [k]
        for r in rows:
            if r.name.arg(k) is None:
                continue
            out.setdefault(_series_label(r, others) or short_family(family), []).append(
                (r.name.arg(k), r))
        return out

    if x_key:
        if x_key not in keys:
            raise InputError(f"{family}: no argument {x_key!r} (its arguments: "
                             f"{', '.join(keys) or 'none'})")
        candidates = [x_key]
    else:
        candidates = varying
    best = None
    for pos, k in enumerate(candidates):
        lines = lines_for(k)
        long_lines = [pts for pts in lines.values() if len({x for x, _ in pts}) >= 2]
        score = (sum(len(pts) for pts in long_lines), len(values[k]), -pos)
        if (long_lines or x_key) and (best is None or score > best[0]):
            best = (score, k, lines)
    if best is not None:
        _, k, lines = best
        for pts in lines.values():
            pts.sort(key=lambda p: p[0])
        return Sweep(family, k, [], lines, fixed)
    # Categorical: x = the combination of the varying arguments, one line per dtype and label.
    categories: List[str] = []
    series: "OrderedDict[str, List[Tuple[object, BenchRow]]]" = OrderedDict()
    for r in rows:
        cat = " ".join(f"{_arg_label(k)}:{fmt_arg(v)}" for k, v in r.name.args
                       if k in varying) or short_family(family)
        if cat not in categories:
            categories.append(cat)
        series.setdefault(_series_label(r, keys) or short_family(family), []).append((cat, r))
    return Sweep(family, "", categories, series, fixed)


def families(rows: Sequence[BenchRow]) -> "OrderedDict[str, List[BenchRow]]":
    out: "OrderedDict[str, List[BenchRow]]" = OrderedDict()
    for r in rows:
        if r.gbs is not None:
            out.setdefault(r.name.family, []).append(r)
    return out


def plot_sweep(bench: BenchFile, out_dir: str, only: Sequence[str] = (),
               x_key: str = "") -> List[str]:
    """One figure per benchmark family: GB/s against its varying argument."""
    fams = families(bench.rows)
    if only:
        missing = [f for f in only if f not in fams]
        if missing:
            raise InputError(f"{bench.path}: no family {', '.join(missing)} (it has "
                             f"{', '.join(fams)})")
        fams = OrderedDict((k, v) for k, v in fams.items() if k in only)
    if not fams:
        raise InputError(f"{bench.path}: no timed row with a GB/s counter")
    if x_key and not any(r.name.arg(x_key) is not None for rows in fams.values() for r in rows):
        raise InputError(f"{bench.path}: no benchmark has an argument {x_key!r}")
    paths = []
    for family, rows in fams.items():
        has_x = bool(x_key) and any(r.name.arg(x_key) is not None for r in rows)
        sweep = plan_sweep(family, rows, x_key if has_x else "")
        paths += _plot_one_sweep(bench, sweep, out_dir)
    return paths


def _plot_one_sweep(bench: BenchFile, sweep: Sweep, out_dir: str) -> List[str]:
    lab = bench.lab or "bench"
    ceiling = bench.ceiling_gbs
    all_gbs = [r.gbs for pts in sweep.series.values() for _, r in pts]
    with S.style():
        fig = S.new_figure(7.5, 4.6)
        ax = fig.add_subplot()
        if sweep.x_key:
            xs = [float(x) for pts in sweep.series.values() for x, _ in pts]
            pos = [x for x in xs if x > 0]
            if min(xs) > 0:
                ax.set_xscale("log", base=2)
                _log2_ticks(ax, xs)
            elif pos and max(pos) / min(pos) >= 8:  # 0 too (blocks:0): log2 above 1
                ax.set_xscale("symlog", base=2, linthresh=1.0)
                _log2_ticks(ax, xs)
            else:
                ax.xaxis.set_major_locator(FixedLocator(sorted(set(xs))))
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: fmt_arg(v)))
            ax.set_xlabel(_arg_label(sweep.x_key) + (" (log₂ scale)" if ax.get_xscale() != "linear"
                                                     else ""))
        else:
            ax.set_xticks(range(len(sweep.categories)))
            ax.set_xticklabels(sweep.categories, rotation=20 if len(sweep.categories) > 2 else 0,
                               ha="right" if len(sweep.categories) > 2 else "center")
            ax.set_xlim(-0.5, len(sweep.categories) - 0.5)
            ax.set_xlabel("arguments")
        n_series = len(sweep.series)
        for i, (label, pts) in enumerate(sweep.series.items()):
            color = S.SERIES_COLORS[i % len(S.SERIES_COLORS)]
            marker = S.SERIES_MARKERS[i % len(S.SERIES_MARKERS)]
            if sweep.x_key:
                xv = [float(x) for x, _ in pts]
                style = "-" if len(pts) > 1 else "none"
            else:
                shift = (i - (n_series - 1) / 2.0) * min(0.12, 0.6 / max(n_series, 1))
                xv = [sweep.categories.index(x) + shift for x, _ in pts]
                style = "none"
            ax.plot(xv, [r.gbs for _, r in pts], linestyle=style, marker=marker, color=color,
                    label=label, zorder=3)
            for xx, (_, r) in zip(xv, pts):
                if r.key:
                    ax.plot([xx], [r.gbs], marker="o", markersize=11, markerfacecolor="none",
                            markeredgecolor="black", linestyle="none", zorder=4)
        top = max(all_gbs + ([ceiling] if ceiling else []))
        ax.set_ylim(0, top * 1.1)
        if ceiling:
            _ceiling_line(ax, ceiling, f"copy ceiling: {ceiling:.0f} GB/s (same process)")
            _ceiling_axis(ax, ceiling)
        ax.set_ylabel("GB/s (bytes read + written ÷ median time)")
        ax.legend(loc="best", framealpha=0.92,
                  ncol=2 if n_series > 6 else 1)
        sub = f" ({'; '.join(sweep.fixed)})" if sweep.fixed else ""
        t = ax.set_title(f"{lab}: {short_family(sweep.family)}{sub}")
        S.mark_title(t)
        if any(r.key for pts in sweep.series.values() for _, r in pts):
            fig.text(0.01, 0.005, "ringed: the day's headline (key) row", fontsize=7,
                     color="#555555")
        paths = S.save(fig, out_dir, f"{lab}_{slug(short_family(sweep.family))}_sweep")
    return paths


# ------------------------------------------------------------------------------- leaderboard


def _short(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def plot_leaderboards(boards: Sequence[Board], out_dir: str, all_boards: bool = False,
                      generated: str = "") -> List[str]:
    chosen = [b for b in boards if all_boards or b.headline]
    if not boards:
        raise InputError("the leaderboard has no boards: nothing to plot")
    if not chosen:
        raise InputError(f"none of the {len(boards)} boards is a headline board "
                         "(give --all to plot every board)")
    paths: List[str] = []
    used: Dict[str, int] = {}
    for b in chosen:
        stem = f"leaderboard_{slug(b.lab)}_{slug(short_family(b.benchmark))}_{slug(b.gpu)}"
        used[stem] = used.get(stem, 0) + 1
        if used[stem] > 1:
            stem += f"_{used[stem]}"
        paths += _plot_board(b, out_dir, stem, generated)
    return paths


def _plot_board(b: Board, out_dir: str, stem: str, generated: str) -> List[str]:
    n = len(b.entries)
    shown_rejected = b.rejected[:8]
    height = 1.5 + 0.3 * max(n, 1) + 0.17 * (len(shown_rejected) + (1 if b.rejected else 0))
    with S.style():
        fig = S.new_figure(8.0, height)
        ax = fig.add_subplot()
        ax.grid(axis="y", visible=False)
        if n:
            ys = list(range(n))
            widths = [e.median_us for e in b.entries]
            colors = [S.lab_color(b.lab) if e.rank == 1 else "#8DA9C4" for e in b.entries]
            ax.barh(ys, widths, color=colors, height=0.65, zorder=3)
            ax.set_yticks(ys)
            ax.set_yticklabels([f"{e.rank}. {_short(e.student, 24)}" for e in b.entries])
            ax.set_ylim(n - 0.5, -0.5)  # rank 1 on top
            ax.set_xlim(0, max(widths) * 1.55)
            for y, e in zip(ys, b.entries):
                parts = [f"{e.median_us:.4g} µs"]
                if e.gbs is not None:
                    parts.append(f"{e.gbs:.0f} GB/s")
                if e.pct_copy is not None:
                    parts.append(f"{e.pct_copy:.1f}% of copy")
                if e.tflops is not None:
                    parts.append(f"{e.tflops:.3g} TFLOP/s")
                ax.annotate(" · ".join(parts), xy=(e.median_us, y), xytext=(4, 0),
                            textcoords="offset points", va="center", fontsize=7.5)
        else:
            ax.set_yticks([])
            ax.set_xticks([])
            ax.text(0.5, 0.5, "nobody ranked", transform=ax.transAxes, ha="center",
                    va="center", color="#777777")
        ax.set_xlabel("median time, µs (shorter is better)")
        head = " (headline)" if b.headline else ""
        t = ax.set_title(f"{b.lab} · {b.benchmark}{head}\n{b.gpu or 'unknown GPU'}: "
                         f"{n} ranked, {len(b.rejected)} not ranked")
        S.mark_title(t)
        if b.rejected:
            lines = ["not ranked:"] + [f"  {_short(s, 24)}: {_short(r, 80)}"
                                       for s, r in shown_rejected]
            if len(b.rejected) > len(shown_rejected):
                lines.append(f"  and {len(b.rejected) - len(shown_rejected)} more")
            ax.annotate("\n".join(lines), xy=(0, 0), xycoords="axes fraction",
                        xytext=(0, -30), textcoords="offset points", va="top", fontsize=7,
                        color="#555555")
        if generated:
            ax.annotate(f"generated {generated}", xy=(1, 1), xycoords="axes fraction",
                        xytext=(0, 2), textcoords="offset points", ha="right", va="bottom",
                        fontsize=6.5, color="#777777")
        paths = S.save(fig, out_dir, stem)
    return paths


# ------------------------------------------------------------------------------- distribution


def _jitter(i: int) -> float:
    """A fixed spread for the i-th point of a column (golden-ratio sequence), in [-0.18, 0.18)."""
    return ((i * 0.6180339887498949) % 1.0 - 0.5) * 0.36


def _status_counts(days: Sequence[StudentDay]) -> str:
    counts: Dict[str, int] = {}
    for d in days:
        if not d.graded:
            counts[d.status] = counts.get(d.status, 0) + 1
    return ", ".join(f"{c} {STATUS_WORDS.get(s, s.replace('_', ' '))}"
                     for s, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _columns(days: Sequence[StudentDay]) -> List[str]:
    names: List[str] = []
    for d in days:
        for p in d.parts:
            if p.max_points > 0 and p.name not in names:
                names.append(p.name)
    return names


def _strip_box(ax, columns: List[Tuple[str, List[Tuple[Optional[float], bool]]]]) -> None:
    """One column per part: a box over every counted value, the graded students as dots, the
    students whose day was not graded (counted as 0) as red crosses. Whiskers: min to max."""
    for c, (_, vals) in enumerate(columns):
        counted = [v for v, _ in vals if v is not None]
        if counted:
            ax.boxplot([counted], positions=[c], widths=0.5, whis=(0, 100), showfliers=False,
                       patch_artist=True, manage_ticks=False, zorder=2,
                       boxprops={"facecolor": "#E8EEF5", "edgecolor": "#557799"},
                       medianprops={"color": "#1F3B57", "linewidth": 1.6},
                       whiskerprops={"color": "#557799"}, capprops={"color": "#557799"})
        graded = [(c + _jitter(i), v) for i, (v, g) in enumerate(vals) if g and v is not None]
        ungraded = [(c + _jitter(i), v) for i, (v, g) in enumerate(vals) if not g]
        if graded:
            ax.scatter([x for x, _ in graded], [y for _, y in graded], s=16, color="#0072B2",
                       alpha=0.8, edgecolors="none", zorder=4)
        if ungraded:
            ax.scatter([x for x, _ in ungraded], [y for _, y in ungraded], s=28, marker="x",
                       color=S.NOT_GRADED_COLOR, linewidths=1.2, zorder=5)


def _legend_status(ax) -> None:
    ax.legend([Line2D([], [], marker="o", linestyle="none", color="#0072B2"),
               Line2D([], [], marker="x", linestyle="none", color=S.NOT_GRADED_COLOR,
                      markeredgewidth=1.2)],
              ["a graded student", "day not graded (not submitted / did not build or link):"
               " counted as 0"], loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2,
              frameon=False, fontsize=7.5)


def _percent_axis(ax) -> None:
    ax.set_ylim(-0.05, 1.08)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))


def plot_distribution(student_days: Sequence[StudentDay], out_dir: str) -> List[str]:
    """Per day: the fraction of each part's points that each student earned. Then the class's
    day totals side by side."""
    by_day: "OrderedDict[str, List[StudentDay]]" = OrderedDict()
    for d in sorted(student_days, key=lambda d: d.day):
        by_day.setdefault(d.day, []).append(d)
    paths: List[str] = []
    for day, days in by_day.items():
        names = _columns(days)
        columns = []
        for name in names + ["day total"]:
            vals: List[Tuple[Optional[float], bool]] = []
            not_run = 0
            for d in days:
                part = d.total if name == "day total" else next(
                    (p for p in d.parts if p.name == name), None)
                if part is None:
                    continue  # this student's day has no such part
                f = part.fraction
                if f is None and d.graded:
                    not_run += 1
                vals.append((f if d.graded else 0.0, d.graded))
            label = name + (f"\n({not_run} not run)" if not_run else "")
            columns.append((label, vals))
        width = max(6.0, 1.05 * len(columns) + 1.6)
        with S.style():
            fig = S.new_figure(width, 4.6)
            ax = fig.add_subplot()
            _strip_box(ax, columns)
            ax.set_xticks(range(len(columns)))
            rotate = len(columns) > 6
            ax.set_xticklabels([c for c, _ in columns], rotation=25 if rotate else 0,
                               ha="right" if rotate else "center")
            ax.set_xlim(-0.6, len(columns) - 0.4)
            ax.axvline(len(columns) - 1.5, color="#999999", linewidth=0.8)
            _percent_axis(ax)
            ax.set_ylabel("fraction of the part's points earned")
            graded = sum(1 for d in days if d.graded)
            others = _status_counts(days)
            t = ax.set_title(f"{day}: {len(days)} students, {graded} graded"
                             + (f"; {others}" if others else ""))
            S.mark_title(t)
            _legend_status(ax)
            paths += S.save(fig, out_dir, f"distribution_{day}")
    # The class's day totals, one column per day.
    columns = [(day, [(d.total.fraction if d.graded else 0.0, d.graded) for d in days])
               for day, days in by_day.items()]
    with S.style():
        fig = S.new_figure(max(6.0, 1.0 * len(columns) + 2.0), 4.4)
        ax = fig.add_subplot()
        _strip_box(ax, columns)
        ax.set_xticks(range(len(columns)))
        ax.set_xticklabels([c for c, _ in columns])
        ax.set_xlim(-0.6, len(columns) - 0.4)
        _percent_axis(ax)
        ax.set_ylabel("fraction of the day's points earned")
        students = len({d.student for d in student_days})
        others = _status_counts(student_days)
        t = ax.set_title(f"Day totals: {students} students"
                         + (f"; student-days {others}" if others else ""))
        S.mark_title(t)
        _legend_status(ax)
        paths += S.save(fig, out_dir, "distribution_days")
    return paths


# ------------------------------------------------------------------- Day 14: the decoder layer


def load_json(path: str, what: str) -> dict:
    """A JSON object from path, or an InputError saying which file and why."""
    import json

    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot read {what}: {e}") from e
    if not isinstance(doc, dict):
        raise InputError(f"{path}: {what} must be a JSON object")
    return doc


def _grouped_bars(ax, series: Sequence[Tuple[str, Sequence[Optional[float]]]], width: float,
                  value_format: str, fontsize: int) -> None:
    """One bar per (name, values) of `series` side by side over each group 0, 1, ..., each bar
    labelled with its value (`value_format`) or 'n/a' where the value is missing."""
    for k, (name, values) in enumerate(series):
        xs = [j + (k - (len(series) - 1) / 2) * width for j in range(len(values))]
        bars = ax.bar(xs, [v or 0.0 for v in values], width, label=name,
                      color=S.SERIES_COLORS[k], zorder=3)
        for bar, value in zip(bars, values):
            ax.annotate(value_format.format(value) if value else "n/a",
                        (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=fontsize)


def plot_layer_speedups(layer: dict, out_dir: str, stem: str = "layer",
                        note: str = "") -> List[str]:
    """python/bench_layer.py's results: torch.compile's and the course layer's speed-up over
    PyTorch eager, per batch x len (a torch.compile that failed or was skipped is 'n/a')."""
    rows = layer.get("rows")
    if not isinstance(rows, list) or not rows:
        raise InputError("the layer results have no rows")
    try:
        labels = [f"{r['batch']} x {r['len']}" for r in rows]
        series = [("torch.compile", [r.get("compile_speedup_vs_eager") for r in rows]),
                  ("course layer", [r["speedup_vs_eager"] for r in rows])]
    except (KeyError, TypeError) as e:
        raise InputError(f"a layer row lacks {e}") from e
    with S.style():
        fig = S.new_figure(7.0, 4.0)
        ax = fig.add_subplot()
        _grouped_bars(ax, series, 0.38, "{:.2f}x", 8)
        ax.axhline(1.0, color=S.CEILING_COLOR, linewidth=0.8, linestyle="--")
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(labels)
        ax.set_xlabel("batch x sequence length (prefill)")
        ax.set_ylabel("speed-up over PyTorch eager")
        S.mark_title(ax.set_title(f"One decoder layer, {layer.get('device', 'unknown GPU')}"))
        ax.legend()
        if note:
            fig.supxlabel(note, fontsize=7, color="#555555")
        return S.save(fig, out_dir, stem)


def plot_triton_bandwidth(bench: dict, out_dir: str, stem: str = "triton",
                          note: str = "") -> List[str]:
    """python/bench_triton.py's results: GB/s of each implementation (the CUDA solution, Triton,
    PyTorch eager, torch.compile) per operation, the copy ceiling as a line and as the right-hand
    axis. An implementation that failed or was skipped is marked 'n/a'."""
    operations = bench.get("operations")
    copy = bench.get("copy")
    if not isinstance(operations, list) or not operations:
        raise InputError("the Triton results have no operations")
    if not isinstance(copy, dict) or not isinstance(copy.get("gbps"), (int, float)):
        raise InputError("the Triton results have no copy ceiling (copy.gbps)")
    ceiling = float(copy["gbps"])
    impls = ["cuda", "triton", "eager", "compile"]
    names = {"cuda": "CUDA solution", "triton": "Triton", "eager": "PyTorch eager",
             "compile": "torch.compile"}
    try:
        labels = [f"{op['label']}\n{op['dtype']} {op['rows']} x {op['cols']}" for op in operations]
        values = {i: [next((r.get("gbps") for r in op["impls"] if r.get("impl") == i), None)
                      for op in operations] for i in impls}
    except (KeyError, TypeError) as e:
        raise InputError(f"an operation lacks {e}") from e
    with S.style():
        fig = S.new_figure(8.0, 4.4)
        ax = fig.add_subplot()
        _grouped_bars(ax, [(names[i], values[i]) for i in impls], 0.2, "{:.0f}", 7)
        _ceiling_line(ax, ceiling, f"copy ceiling, {ceiling:.0f} GB/s")
        _ceiling_axis(ax, ceiling)
        ax.set_ylim(0, ceiling * 1.3)  # room above the ceiling for the legend
        ax.set_xticks(range(len(operations)))
        ax.set_xticklabels(labels)
        ax.set_ylabel("GB/s (inputs read once + outputs written once)")
        S.mark_title(ax.set_title(f"CUDA beside Triton, {bench.get('device', 'unknown GPU')}"))
        ax.legend(loc="upper center", ncol=5, fontsize=7)
        if note:
            fig.supxlabel(note, fontsize=7, color="#555555")
        return S.save(fig, out_dir, stem)


def trace_stages(trace: dict) -> List[Tuple[str, float, float]]:
    """[(name, start_us, duration_us)] of a Chrome trace's complete ("X") events, by start."""
    events = trace.get("traceEvents")
    if not isinstance(events, list):
        raise InputError("the trace has no traceEvents list")
    stages = [(str(e["name"]), float(e["ts"]), float(e["dur"])) for e in events
              if isinstance(e, dict) and e.get("ph") == "X" and "ts" in e and "dur" in e]
    if not stages:
        raise InputError('the trace has no complete ("X") events')
    return sorted(stages, key=lambda s: s[1])


def plot_trace_timeline(trace: dict, out_dir: str, stem: str = "trace",
                        title: str = "one decoder layer, stage by stage (GPU time)",
                        note: str = "") -> List[str]:
    """A Chrome trace (cuda_course.decoder_layer(..., trace_path=...)) as Perfetto shows it:
    one bar per stage on a time axis, for a page that cannot embed Perfetto."""
    stages = trace_stages(trace)
    total = max(start + dur for _, start, dur in stages)
    with S.style():
        fig = S.new_figure(10.0, 0.42 * len(stages) + 1.6)
        ax = fig.add_subplot()
        ax.grid(axis="y", visible=False)
        for row, (name, start, dur) in enumerate(stages):
            ax.barh(row, dur, left=start, height=0.6, zorder=3,
                    color=S.SERIES_COLORS[0] if "gemm" in name else S.SERIES_COLORS[1])
            ax.annotate(f"{dur:.0f} µs ({100 * dur / total:.0f}%)", xy=(start + dur, row),
                        xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
        ax.set_yticks(range(len(stages)))
        ax.set_yticklabels([s[0] for s in stages])
        ax.set_ylim(len(stages) - 0.5, -0.5)
        ax.set_xlim(0, total * 1.18)
        ax.set_xlabel("µs from the layer's first stage")
        S.mark_title(ax.set_title(f"{title}: {total:.0f} µs"))
        if note:
            fig.supxlabel(note, fontsize=7, color="#555555")
        return S.save(fig, out_dir, stem)
