"""Day 9's diagrams: the fragments of mma.sync.m16n8k16, ldmatrix.x4, the XOR-swizzled tile.

Every map here is the PTX ISA's ("Matrix Fragments for mma.m16n8k16 with floating point type",
"ldmatrix") and the one solutions/d09_tensor_cores/kernel.cu implements (a_fragment, b_fragment,
c_fragment, chunk_xor): groupID = lane >> 2, threadID_in_group = lane % 4; elements a0..a7,
b0..b3, c0..c3, two 16-bit elements per 32-bit register (a0 a1 in register 0, ...).
"""

from __future__ import annotations

from typing import Tuple

from matplotlib.figure import Figure

from . import diagram
from .draw import EDGE, LIGHT, PALETTE, canvas, cell, label, legend_cells


# The PTX ISA's fragment maps for 16-bit A and B and float32 C (lesson 9 §4.2).
def a_fragment(lane: int, e: int) -> Tuple[int, int]:
    g, t = lane // 4, lane % 4
    return g + 8 * ((e // 2) % 2), 2 * t + e % 2 + 8 * (e // 4)


def b_fragment(lane: int, e: int) -> Tuple[int, int]:
    g, t = lane // 4, lane % 4
    return 2 * t + e % 2 + 8 * (e // 2), g


def c_fragment(lane: int, e: int) -> Tuple[int, int]:
    g, t = lane // 4, lane % 4
    return g + 8 * (e // 2), 2 * t + e % 2


def chunk_xor(row: int, chunk: int, row_bytes: int) -> int:
    chunks = row_bytes // 16
    return chunk ^ ((row // (128 // row_bytes)) % chunks)


def _owners(rows: int, cols: int, elems: int, frag) -> dict:
    """(row, col) -> (lane, element) for one operand, checking that the map is a bijection."""
    owner = {}
    for lane in range(32):
        for e in range(elems):
            rc = frag(lane, e)
            assert rc not in owner and 0 <= rc[0] < rows and 0 <= rc[1] < cols, rc
            owner[rc] = (lane, e)
    assert len(owner) == rows * cols
    return owner


def _operand(ax, x0: float, y0: float, rows: int, cols: int, elems: int, frag, name: str,
             row_name: str, col_name: str, title: str) -> None:
    owner = _owners(rows, cols, elems, frag)
    for (r, c), (lane, e) in owner.items():
        cell(ax, x0 + c, y0 + r, f"T{lane}\n{name}{e}", LIGHT[e // 2], fontsize=6.3)
    for c in range(cols):
        label(ax, x0 + c + 0.5, y0 - 0.35, f"{col_name}{c}", 6.3, ha="center")
    for r in range(rows):
        label(ax, x0 - 0.12, y0 + r + 0.5, f"{row_name}{r}", 6.3, ha="right")
    # The 8 x 8 quarters (one register each in A), drawn with a heavier line.
    for r in range(0, rows + 1, 8):
        ax.plot([x0, x0 + cols], [y0 + r, y0 + r], color=EDGE, lw=1.8)
    for c in range(0, cols + 1, 8):
        ax.plot([x0 + c, x0 + c], [y0, y0 + rows], color=EDGE, lw=1.8)
    label(ax, x0 + cols / 2, y0 - 1.25, title, 8.5, ha="center", weight="bold")


@diagram("d09_mma_fragments")
def mma_fragments() -> Figure:
    """Which lane holds which element of A, B and C/D in mma.sync.m16n8k16 (bf16/f16 in, f32)."""
    fig, ax = canvas(38.5, 20.6, inches_per_unit=0.42,
                     title="mma.sync.m16n8k16: lane (T) and element of every entry; "
                           "g = lane / 4, t = lane % 4")
    _operand(ax, 1.3, 1.6, 16, 16, 8, a_fragment, "a", "m", "k",
             "A (16 x 16, 16-bit): row g (+8), columns 2t, 2t+1 (+8)")
    _operand(ax, 19.7, 1.6, 16, 8, 4, b_fragment, "b", "k", "n",
             "B (16 x 8): rows 2t, 2t+1 (+8), column g")
    _operand(ax, 30.2, 1.6, 16, 8, 4, c_fragment, "c", "m", "n",
             "C and D (16 x 8, float32)")
    legend_cells(ax, 1.3, 18.1,
                 [(LIGHT[0], "a0 a1: A's register 0;  b0 b1: B's register 0;  c0 c1"),
                  (LIGHT[1], "a2 a3: A's register 1;  b2 b3: B's register 1;  c2 c3")], 7.5)
    legend_cells(ax, 12.3, 18.1, [(LIGHT[2], "a4 a5: A's register 2"),
                                  (LIGHT[3], "a6 a7: A's register 3")], 7.5)
    label(ax, 20.0, 18.5, "Two 16-bit elements per 32-bit register, the even one in the low "
          "half.", 7.5)
    label(ax, 20.0, 19.7, "C is float32: one element per register, c0..c3 (D likewise d0..d3).",
          7.5)
    return fig


@diagram("d09_ldmatrix_x4")
def ldmatrix_x4() -> Figure:
    """ldmatrix.x4 on a 16 x 16 A tile: who gives which row address, who gets which elements."""
    fig, ax = canvas(38.0, 17.4, inches_per_unit=0.36,
                     title="ldmatrix.sync.aligned.m8n8.x4: lanes 8j..8j+7 give the row addresses "
                           "of matrix j, which arrives in register j of every lane")
    x0, y0, h = 2.0, 2.2, 0.9
    label(ax, x0 + 8, y0 - 1.5, "Addresses: a 16 x 16 bf16 tile of A in shared memory, "
          "one 16-byte row per lane", 8, ha="center", weight="bold")
    for c in (0, 8):
        label(ax, x0 + c + 4, y0 - 0.45, f"k {c}-{c + 7} (16 bytes)", 7, ha="center")
    # Matrix order of lesson 9 §5.2: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
    # (rows 8-15, k 8-15): registers a0a1, a2a3, a4a5, a6a7.
    for lane in range(32):
        j, r = lane // 8, lane % 8
        row, col = r + 8 * (j % 2), 8 * (j // 2)
        cell(ax, x0 + col, y0 + row * h, f"lane {lane}: row {r} of matrix {j}", LIGHT[j], w=8.0,
             h=h, fontsize=7)
    for m in range(16):
        label(ax, x0 - 0.15, y0 + (m + 0.5) * h, f"m{m}", 6.5, ha="right")
    for c in range(0, 17, 8):
        ax.plot([x0 + c, x0 + c], [y0, y0 + 16 * h], color=EDGE, lw=1.8)
    for r in (0, 8, 16):
        ax.plot([x0, x0 + 16], [y0 + r * h, y0 + r * h], color=EDGE, lw=1.8)

    # One 8 x 8 matrix as it arrives: lane l holds row l / 4, columns 2 (l % 4), 2 (l % 4) + 1.
    x1, y1 = 21.3, 2.2
    label(ax, x1 + 4, y1 - 1.5, "Data: matrix j in register j", 8, ha="center", weight="bold")
    for r in range(8):
        for c in range(8):
            lane = 4 * r + c // 2
            cell(ax, x1 + c, y1 + r, f"T{lane}\n{'lo' if c % 2 == 0 else 'hi'}",
                 LIGHT[4 + lane % 4], fontsize=6.3)
        label(ax, x1 - 0.12, y1 + r + 0.5, f"row {r}", 6.3, ha="right")
    for c in range(8):
        label(ax, x1 + c + 0.5, y1 - 0.45, f"col {c}", 6.0, ha="center")
    label(ax, x1 + 4, y1 + 8.6, "colour: t = lane % 4, the pair of columns", 6.8, ha="center",
          color="#555555")
    lines = [
        "Lane l receives, in register j, row l / 4",
        "and columns 2(l % 4), 2(l % 4) + 1 of",
        "matrix j (lo, hi: low and high 16 bits).",
        "",
        "With the matrices ordered as on the left,",
        "registers 0-3 are the A fragment:",
        "a0 a1, a2 a3, a4 a5, a6 a7.",
        "",
        ".trans: lane l receives column l / 4 and",
        "rows 2(l % 4), 2(l % 4) + 1 instead.",
        "",
        "Each matrix is one phase of 8 rows of",
        "16 bytes: one wavefront when its 8 rows",
        "sit in 8 different 16-byte bank groups.",
    ]
    for i, text in enumerate(lines):
        label(ax, 30.4, y1 + 0.3 + 0.78 * i, text, 7.2)
    return fig


def _swizzle_panel(ax, x0: float, y0: float, row_bytes: int, swizzled: bool, hot: int,
                   title: str) -> None:
    """8 lines of 128 bytes (banks 0-31): each physical 16-byte chunk shows the (row, logical
    chunk) stored there. The ldmatrix phase that reads logical chunk `hot` of rows 0-7 is dark;
    below, how many wavefronts it takes (the most of its chunks that share a bank group)."""
    label(ax, x0 + 4, y0 - 2.0, title, 8.5, ha="center", weight="bold")
    label(ax, x0 - 0.15, y0 - 0.75, "group", 6.5, ha="right", color="#555555")
    label(ax, x0 - 0.15, y0 - 0.3, "banks", 6.0, ha="right", color="#555555")
    for g in range(8):
        label(ax, x0 + g + 0.5, y0 - 0.75, f"{g}", 7, ha="center")
        label(ax, x0 + g + 0.5, y0 - 0.3, f"{4 * g}-{4 * g + 3}", 5.6, ha="center",
              color="#555555")
    rows_per_line, chunks = 128 // row_bytes, row_bytes // 16
    per_group = [0] * 8
    for line in range(8):
        label(ax, x0 - 0.15, y0 + line + 0.5, f"line {line}", 6.5, ha="right")
    for r in range(8 * rows_per_line):
        for c in range(chunks):
            p = chunk_xor(r, c, row_bytes) if swizzled else c
            byte = r * row_bytes + 16 * p
            line, group = byte // 128, (byte // 16) % 8
            is_hot = c == hot and r < 8
            per_group[group] += is_hot
            text = f"c{c}" if rows_per_line == 1 else f"r{r}\nc{c}"
            cell(ax, x0 + group, y0 + line, text, PALETTE[c] if is_hot else LIGHT[c],
                 fontsize=7.3 if is_hot else 6.6, lw=2.2 if is_hot else 0.6,
                 weight="bold" if is_hot else "normal")
    waves = max(per_group)
    where = "one group" if waves == 8 else (f"{8 // waves} groups" if waves > 1 else
                                            "8 groups")
    label(ax, x0 + 4, y0 + 8.55, f"c{hot} of rows 0-7: {where}, {waves} wavefront"
          f"{'s' if waves > 1 else ''}", 7.5, ha="center", weight="bold")


@diagram("d09_swizzle_banks")
def swizzle_banks() -> Figure:
    """Tiles of 128- and 64-byte rows, plain and swizzled, and one ldmatrix phase on each."""
    fig, ax = canvas(27.0, 25.4, inches_per_unit=0.4,
                     title="Shared memory as 128-byte lines of 8 bank groups: where logical "
                           "chunk c of row r is stored")
    hot = 1
    _swizzle_panel(ax, 3.0, 3.2, 128, False, hot, "128-byte rows, plain: chunk c")
    _swizzle_panel(ax, 16.5, 3.2, 128, True, hot, "128-byte rows: chunk c ^ (r % 8)")
    _swizzle_panel(ax, 3.0, 15.6, 64, False, hot, "64-byte rows (2 per line), plain: chunk c")
    _swizzle_panel(ax, 16.5, 15.6, 64, True, hot, "64-byte rows: chunk c ^ ((r / 2) % 4)")
    label(ax, 13.5, 24.9, "Dark: one ldmatrix phase, the same logical chunk of rows 0-7. "
          "Every row keeps all its chunks: the XOR only permutes them within the row.", 7.2,
          ha="center")
    return fig
