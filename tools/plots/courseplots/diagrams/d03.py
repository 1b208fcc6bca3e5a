"""Day 3's diagrams: the three warp-shuffle patterns of the lab, lane by lane over their five
steps: the butterfly of warp_sum / warp_max (shfl.sync.bfly, lane l reads lane l ^ m), the
reduction into lane 0 with shfl.sync.down (lane l reads lane l + d), and the Hillis-Steele
inclusive scan of warp_inclusive_scan (shfl.sync.up, lane l reads lane l - d).

Source lanes are the PTX ISA's (shfl.sync: bfly j = lane ^ b, down j = lane + b, up
j = lane - b, each clamped) and solutions/d03_ptx_shuffles/kernel.cu's loops (masks 16 .. 1 for
the butterfly, deltas 1 .. 16 for the scan).
"""

from __future__ import annotations

from typing import Callable, List, Optional, Set

from matplotlib.figure import Figure
from matplotlib.patches import Circle

from . import diagram
from .draw import EDGE, MUTED, PALETTE, canvas, label

LANES = 32
X0, STEP_H = 7.6, 2.3
NODE = 0.22
TRACE = PALETTE[4]   # vermillion: the reads that end in the traced lane


def _node(ax, x: float, y: float, face: str, edge: str = EDGE) -> None:
    ax.add_patch(Circle((x, y), NODE, facecolor=face, edgecolor=edge, linewidth=0.6, zorder=3))


def _network(title: str, offsets: List[int], source: Callable[[int, int], Optional[int]],
             left: Callable[[int], str], right: Callable[[int], str],
             live: Callable[[int, int], bool], trace: int, footer: str) -> Figure:
    """Lanes across, steps down. At step s every lane l that reads from source(l, offset) gets
    a line from that lane's node one level up; `live(s, l)` says whether lane l still holds a
    value that matters after step s. The lines that feed lane `trace`'s final value are red."""
    steps = len(offsets)
    fig, ax = canvas(X0 + LANES + 9.6, 1.6 + STEP_H * steps + 1.6, inches_per_unit=0.25,
                     title=title)
    y0 = 1.6
    for lane in range(LANES):
        label(ax, X0 + lane + 0.5, y0 - 0.75, f"{lane}", 6.3, ha="center")
    label(ax, X0 - 0.3, y0 - 0.75, "lane", 6.5, ha="right", color="#555555")
    # Which (step, lane) nodes feed the traced lane's final value: walk back from the end.
    feeds: List[Set[int]] = [set() for _ in range(steps + 1)]
    feeds[steps] = {trace}
    for s in range(steps - 1, -1, -1):
        for lane in feeds[s + 1]:
            feeds[s].add(lane)
            src = source(lane, offsets[s])
            if src is not None:
                feeds[s].add(src)
    for s in range(steps + 1):
        y = y0 + s * STEP_H
        if s > 0:
            off = offsets[s - 1]
            for lane in range(LANES):
                src = source(lane, off)
                hot = lane in feeds[s] and src is not None and src in feeds[s - 1]
                own_hot = lane in feeds[s] and lane in feeds[s - 1]
                ax.plot([X0 + lane + 0.5] * 2, [y - STEP_H, y],
                        color=TRACE if own_hot else "#CCCCCC", lw=1.3 if own_hot else 0.6,
                        zorder=1)
                if src is None:
                    continue
                ax.plot([X0 + src + 0.5, X0 + lane + 0.5], [y - STEP_H, y],
                        color=TRACE if hot else "#888888", lw=1.3 if hot else 0.5,
                        zorder=2 if hot else 1)
            label(ax, X0 - 0.3, y - STEP_H / 2, left(s - 1), 7.0, ha="right")
            label(ax, X0 + LANES + 0.4, y, right(s - 1), 6.9)
        for lane in range(LANES):
            alive = s == 0 or live(s - 1, lane)
            _node(ax, X0 + lane + 0.5, y,
                  (TRACE if lane in feeds[s] else PALETTE[0]) if alive else "white",
                  EDGE if alive else MUTED)
    label(ax, X0, y0 + steps * STEP_H + 1.1, footer, 7.0)
    return fig


def _bfly(lane: int, mask: int) -> Optional[int]:
    return lane ^ mask


def _down(lane: int, delta: int) -> Optional[int]:
    # lanes >= 32 - delta get their own value back (clamped): no line
    return lane + delta if lane + delta < LANES else None


def _up(lane: int, delta: int) -> Optional[int]:
    # lanes < delta get their own value back, and must not add it
    return lane - delta if lane >= delta else None


@diagram("d03_butterfly")
def butterfly() -> Figure:
    """warp_sum: five __shfl_xor_sync steps, after which every lane holds the total."""
    masks = [16, 8, 4, 2, 1]
    return _network(
        "warp_sum: v += shfl.sync.bfly(v, m) for m = 16, 8, 4, 2, 1 (lane l reads lane l ^ m)",
        masks, _bfly,
        lambda s: f"m = {masks[s]}: lane l reads l ^ {masks[s]}",
        lambda s: f"every lane: a sum of {2 ** (s + 1)}" + (" = the total" if s == 4 else ""),
        lambda s, lane: True, 5,
        "Red: the 31 reads whose values end up in lane 5 (and its own value, down the "
        "vertical). Every lane's total has such a tree of 32 inputs; the five steps are "
        "the same for all.")


@diagram("d03_shfl_down")
def shfl_down() -> Figure:
    """A reduction into lane 0 with shfl.sync.down: half the lanes stop mattering per step."""
    deltas = [16, 8, 4, 2, 1]
    return _network(
        "Reduction into lane 0: v += shfl.sync.down(v, d) for d = 16, 8, 4, 2, 1 (lane l reads "
        "lane l + d)",
        deltas, _down,
        lambda s: f"d = {deltas[s]}: lane l reads l + {deltas[s]}",
        lambda s: (f"lanes 0-{deltas[s] - 1}: sums of {2 ** (s + 1)}" if deltas[s] > 1
                   else "lane 0: the total"),
        lambda s, lane: lane < deltas[s], 0,
        "Hollow: lanes whose value no longer matters (they still run the shuffle: the mask is "
        "the full warp). Lanes l >= 32 - d read their own value back. Only lane 0 ends with "
        "the total.")


@diagram("d03_scan")
def scan() -> Figure:
    """warp_inclusive_scan: Hillis-Steele with shfl.sync.up, lane l adds lane l - d if l >= d."""
    deltas = [1, 2, 4, 8, 16]
    return _network(
        "warp_inclusive_scan: up = shfl.sync.up(v, d); if (lane >= d) v += up; d = 1, 2, 4, "
        "8, 16",
        deltas, _up,
        lambda s: f"d = {deltas[s]}: lane l adds l - {deltas[s]}",
        lambda s: f"lane l: x[max(0, l - {2 ** (s + 1) - 1})..l]" if s < 4
        else "lane l: x[0..l]",
        lambda s, lane: True, 21,
        "Red: the reads that end in lane 21's prefix x0 + ... + x21. Lanes l < d have no lane "
        "d below them: shfl.up hands them their own value, which they must not add.")
