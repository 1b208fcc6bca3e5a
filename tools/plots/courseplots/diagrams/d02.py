"""Day 2's diagrams: one warp's 32 addresses on 128-byte lines of four 32-byte sectors, for the
access patterns of lesson 2 §2.3 (coalesced, shifted, strided), and the 16-byte access of
copy_2_vectorized with the mapping the course uses (lane l takes vector t + u B) and the one it
avoids (4t .. 4t + 3).

Everything is counted, not drawn by hand: a sector is a 32-byte-aligned 32 bytes, a line a
128-byte-aligned 128 bytes (lesson 2 §2.1); float32 elements, lane l at byte address a(l).
"""

from __future__ import annotations

from typing import Callable, List, Tuple

from matplotlib.figure import Figure

from . import diagram
from .draw import EDGE, LIGHT, canvas, cell, label

SECTOR, LINE, FLOAT = 32, 128, 4
SLOTS = LINE // FLOAT      # 32 float slots per line
TOUCHED = "#E6E6E6"        # a sector the request moves
USED = LIGHT[0]            # a float a lane asked for


def _count(addresses: List[Tuple[int, int]]) -> Tuple[int, int, int]:
    """(sectors, lines, useful bytes) of one warp request; addresses are (byte, size) pairs."""
    sectors, lines, useful = set(), set(), 0
    for a, size in addresses:
        for byte in range(a, a + size):
            sectors.add(byte // SECTOR)
            lines.add(byte // LINE)
        useful += size
    return len(sectors), len(lines), useful


def _panel(ax, x0: float, y0: float, title: str, addresses: List[Tuple[int, int]],
           first_line: int = 0) -> float:
    """Draws the lines the request touches; returns the y below the panel."""
    sectors, lines, useful = _count(addresses)
    label(ax, x0, y0, title, 8, weight="bold")
    touched_lines = sorted({b // LINE for a, s in addresses for b in range(a, a + s)})
    touched_sectors = {b // SECTOR for a, s in addresses for b in range(a, a + s)}
    owner = {}
    for lane, (a, size) in enumerate(addresses):
        for f in range(a // FLOAT, (a + size) // FLOAT):
            owner[f] = lane
    y = y0 + 0.6
    for line in range(touched_lines[0], touched_lines[-1] + 1):
        label(ax, x0 + 3.3, y + 0.5, f"line {line - first_line}", 6.5, ha="right")
        for s in range(LINE // SECTOR):
            sector = line * (LINE // SECTOR) + s
            for f in range(SECTOR // FLOAT):
                slot = sector * (SECTOR // FLOAT) + f
                lane = owner.get(slot)
                face = USED if lane is not None else (TOUCHED if sector in touched_sectors
                                                      else "white")
                cell(ax, x0 + 3.5 + s * 8 + f, y, "" if lane is None else f"{lane}", face,
                     fontsize=5.8, lw=0.4)
            ax.plot([x0 + 3.5 + s * 8] * 2, [y, y + 1], color=EDGE, lw=1.5)
        ax.plot([x0 + 3.5 + 32] * 2, [y, y + 1], color=EDGE, lw=1.5)
        y += 1
    eff = 100.0 * useful / (sectors * SECTOR)
    label(ax, x0 + 36.3, y0 + 0.6 + 0.5, f"{sectors} sector{'s' * (sectors > 1)}, "
          f"{lines} line{'s' * (lines > 1)}", 7.3, weight="bold")
    label(ax, x0 + 36.3, y0 + 0.6 + 1.35, f"{useful} useful bytes of {sectors * SECTOR} moved: "
          f"{eff:.1f}%".replace(".0%", "%"), 6.8)
    return y + 0.9


def _header(ax, x0: float, y0: float) -> None:
    for s in range(5):
        label(ax, x0 + 3.5 + 8 * s, y0, f"{32 * s}", 6.2, ha="center", color="#555555")
    label(ax, x0 + 2.9, y0, "byte in line", 6.2, ha="right", color="#555555")
    for s in range(4):
        label(ax, x0 + 3.5 + 8 * s + 4, y0 + 0.55, f"sector {s}", 6.2, ha="center",
              color="#555555")


@diagram("d02_warp_sectors")
def warp_sectors() -> Figure:
    """Four warp-wide float32 loads on the lines and sectors they touch."""
    fig, ax = canvas(50.0, 23.4, inches_per_unit=0.22,
                     title="One warp-wide float32 load: which 32-byte sectors of which "
                           "128-byte lines it moves")
    x0 = 0.3
    _header(ax, x0, 0.8)
    y = 2.2
    base = 32 * FLOAT  # a line boundary
    y = _panel(ax, x0, y, "x[base + l], base a multiple of 32: coalesced",
               [(base + FLOAT * ln, FLOAT) for ln in range(32)], first_line=1)
    y = _panel(ax, x0, y, "x[base + 3 + l]: contiguous, not aligned",
               [(base + FLOAT * (3 + ln), FLOAT) for ln in range(32)], first_line=1)
    y = _panel(ax, x0, y, "x[base + 2 l]: stride 2",
               [(base + FLOAT * 2 * ln, FLOAT) for ln in range(32)], first_line=1)
    y = _panel(ax, x0, y, "x[base + 8 l]: stride 8 (any larger stride: also 32 sectors, one "
               "per lane)", [(base + FLOAT * 8 * ln, FLOAT) for ln in range(32)],
               first_line=1)
    cell(ax, x0 + 3.5, y + 0.1, "7", USED, fontsize=5.8)
    label(ax, x0 + 4.7, y + 0.6, "a float lane 7 asked for", 6.8)
    cell(ax, x0 + 15.5, y + 0.1, "", TOUCHED)
    label(ax, x0 + 16.7, y + 0.6, "moved with its sector, not asked for", 6.8)
    cell(ax, x0 + 31.5, y + 0.1, "", "white")
    label(ax, x0 + 32.7, y + 0.6, "not moved", 6.8)
    return fig


def _vector_panel(ax, x0: float, y0: float, title: str, vector_of: Callable[[int], int],
                  note: str) -> float:
    """Lane l loads 16-byte vector vector_of(l): 4 float slots drawn as one cell."""
    addresses = [(16 * vector_of(ln), 16) for ln in range(32)]
    sectors, lines, useful = _count(addresses)
    label(ax, x0, y0, title, 8, weight="bold")
    by_vector = {vector_of(ln): ln for ln in range(32)}
    touched_sectors = {b // SECTOR for a, s in addresses for b in range(a, a + s)}
    last_line = max(a // LINE for a, _ in addresses)
    y = y0 + 0.6
    for line in range(last_line + 1):
        label(ax, x0 + 3.3, y + 0.5, f"line {line}", 6.5, ha="right")
        for v in range(LINE // 16):
            vec = line * (LINE // 16) + v
            lane = by_vector.get(vec)
            if lane is None:
                face = TOUCHED if (vec * 16) // SECTOR in touched_sectors else "white"
                cell(ax, x0 + 3.5 + 4 * v, y, "", face, w=4, lw=0.4)
            else:
                cell(ax, x0 + 3.5 + 4 * v, y, f"lane {lane}", LIGHT[2 * (lane % 2)], w=4,
                     fontsize=6.0, lw=0.6)
        for s in range(5):
            ax.plot([x0 + 3.5 + 8 * s] * 2, [y, y + 1], color=EDGE, lw=1.5)
        y += 1
    label(ax, x0 + 36.3, y0 + 0.6 + 0.5, f"{sectors} sectors, {lines} lines", 7.3,
          weight="bold")
    label(ax, x0 + 36.3, y0 + 0.6 + 1.35, f"{useful} useful bytes of {sectors * SECTOR} moved",
          6.8)
    for i, text in enumerate(note.split("\n")):
        label(ax, x0 + 36.3, y0 + 0.6 + 2.2 + 0.85 * i, text, 6.8)
    return y + 0.9


@diagram("d02_vector_mapping")
def vector_mapping() -> Figure:
    """copy_2_vectorized: 16 bytes per lane, and why thread t takes t, t + B, t + 2B, t + 3B."""
    fig, ax = canvas(50.0, 26.8, inches_per_unit=0.22,
                     title="16-byte loads (LDG.E.128): one warp request of "
                           "copy_2_vectorized<float>, two mappings")
    x0 = 0.3
    _header(ax, x0, 0.8)
    y = _vector_panel(ax, x0, 2.2, "Thread t takes vectors t, t + B, t + 2B, t + 3B (the "
                      "course's): load u, lane l -> vector l", lambda ln: ln,
                      "512 contiguous bytes:\nevery sector whole.\nLoads u = 1, 2, 3: the "
                      "next\n512 bytes, B vectors on.")
    y = _vector_panel(ax, x0, y + 0.3, "Thread t takes vectors 4t .. 4t + 3: load u = 0, "
                      "lane l -> vector 4 l", lambda ln: 4 * ln,
                      "Lanes 64 bytes apart:\nhalf of each sector moved\nfor nothing now, "
                      "and the\nrequest spans 2 KB.\nLoads u = 1, 2, 3 come\nback for the "
                      "rest.")
    cell(ax, x0 + 3.5, y + 0.1, "lane 7", LIGHT[2], w=4, fontsize=6.0)
    label(ax, x0 + 7.7, y + 0.6, "the 16 bytes lane 7 asked for", 6.8)
    cell(ax, x0 + 19.5, y + 0.1, "", TOUCHED, w=4)
    label(ax, x0 + 23.7, y + 0.6, "moved with its sector, not asked for", 6.8)
    return fig
