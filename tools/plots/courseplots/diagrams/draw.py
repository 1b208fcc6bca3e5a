"""Drawing primitives shared by the diagrams: a blank canvas in cell units, cells, grids of
labelled cells, boxes with text, arrows, and one colour per lane or thread.

Coordinates are in cell units with y growing downwards (row 0 on top, like a matrix or a memory
dump): canvas(width, height) returns axes whose data box is [0, width] x [0, height] with the
aspect fixed, so one unit is one cell whatever the figure's size.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence, Tuple

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from .. import style as S

# Okabe-Ito first (colour-blind safe), then lighter tints: enough for 32 lanes in groups of 8.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442",
           "#999999"]
LIGHT = ["#CFE3F1", "#FBE6C2", "#C6EBDD", "#F2DCE8", "#F6D5C0", "#DDF0FB", "#FBF7C9", "#E6E6E6"]
EDGE = "#333333"
MUTED = "#BBBBBB"


def canvas(width: float, height: float, inches_per_unit: float = 0.32,
           title: str = "", margin: float = 0.3) -> Tuple[Figure, Axes]:
    """A figure with one frameless axes of width x height units (y down), title on top."""
    fig = S.new_figure(max(2.0, width * inches_per_unit + 2 * margin),
                       max(1.2, height * inches_per_unit + 2 * margin + (0.35 if title else 0)))
    ax = fig.add_subplot()
    ax.set_xlim(-0.05, width + 0.05)
    ax.set_ylim(height + 0.05, -0.05)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title)
    return fig, ax


def lane_color(lane: int, light: bool = False) -> str:
    """A colour per lane, cycling every 8 lanes (lanes 0 and 8 share one: say which in text)."""
    return (LIGHT if light else PALETTE)[lane % len(PALETTE)]


def cell(ax: Axes, x: float, y: float, text: str = "", face: str = "white", w: float = 1.0,
         h: float = 1.0, fontsize: float = 7.0, color: str = "black", edge: str = EDGE,
         lw: float = 0.6, weight: str = "normal") -> None:
    """One rectangle with its top-left corner at (x, y) and centred text."""
    ax.add_patch(Rectangle((x, y), w, h, facecolor=face, edgecolor=edge, linewidth=lw))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize,
                color=color, weight=weight)


def grid(ax: Axes, x: float, y: float, rows: int, cols: int,
         text: Optional[Callable[[int, int], str]] = None,
         face: Optional[Callable[[int, int], str]] = None, w: float = 1.0, h: float = 1.0,
         fontsize: float = 6.5) -> None:
    """rows x cols cells from (x, y); text(r, c) and face(r, c) label and colour each."""
    for r in range(rows):
        for c in range(cols):
            cell(ax, x + c * w, y + r * h, text(r, c) if text else "",
                 face(r, c) if face else "white", w, h, fontsize)


def box(ax: Axes, x: float, y: float, w: float, h: float, text: str = "",
        face: str = "#F4F4F4", edge: str = EDGE, fontsize: float = 8.0, lw: float = 0.8,
        style: str = "-") -> None:
    """A labelled box (a stage, a buffer, a block of memory)."""
    ax.add_patch(Rectangle((x, y), w, h, facecolor=face, edgecolor=edge, linewidth=lw,
                           linestyle=style))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize)


def arrow(ax: Axes, start: Tuple[float, float], end: Tuple[float, float], text: str = "",
          color: str = EDGE, fontsize: float = 7.0, rad: float = 0.0, lw: float = 0.9,
          style: str = "-|>") -> None:
    """An arrow from start to end (optionally curved by rad), with text at its middle."""
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=8, color=color,
                                 linewidth=lw, connectionstyle=f"arc3,rad={rad}",
                                 shrinkA=1, shrinkB=1))
    if text:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2, text, ha="center",
                va="center", fontsize=fontsize, color=color,
                bbox=dict(facecolor="white", edgecolor="none", pad=0.5))


def label(ax: Axes, x: float, y: float, text: str, fontsize: float = 7.5, ha: str = "left",
          va: str = "center", color: str = "black", weight: str = "normal",
          rotation: float = 0.0) -> None:
    ax.text(x, y, text, ha=ha, va=va, fontsize=fontsize, color=color, weight=weight,
            rotation=rotation)


def legend_cells(ax: Axes, x: float, y: float, items: Sequence[Tuple[str, str]],
                 fontsize: float = 7.0, step: float = 1.2) -> None:
    """A vertical key: a small coloured cell and its meaning per item (face, text)."""
    for i, (face, text) in enumerate(items):
        cell(ax, x, y + i * step, "", face, 0.8, 0.8)
        label(ax, x + 1.1, y + i * step + 0.4, text, fontsize)

# Add shared primitives above this line (append only; days' modules import them from here).
