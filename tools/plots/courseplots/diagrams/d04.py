"""Day 4's diagrams: the bank of every element of the 32 x 32 float tile under the three layouts
of variants 2-4 (plain, padded, XOR-swizzled) with the column read each must serve, and variant
5's swizzle of 16-byte chunks with its column gather.

The layouts are those of solutions/d04_shared_memory/kernel.cu: plain_index, padded_index<float>
(kPad = 1), swizzled_index and swizzled_chunk<float> (kVec = 4, kChunks = 8), and the store
mapping of transpose_5_vectorized_kernel. A bank is (byte address / 4) % 32 (lesson 4 §5.1).
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, List

from matplotlib.figure import Figure

from . import diagram
from .draw import EDGE, LIGHT, MUTED, PALETTE, canvas, cell, label

TILE, BANKS, WORD = 32, 32, 4
VEC, CHUNKS = 4, 8          # float: 4 elements per 16-byte chunk, 8 chunks per 128-byte row
HOT = "#E69F00"             # the column being read (Okabe-Ito orange)
HOT_LIGHT = "#FBE6C2"
OK = "#009E73"              # conflict-free (bluish green)
BAD = "#D55E00"             # conflicted (vermillion)


def plain_index(row: int, col: int) -> int:
    return row * TILE + col


def padded_index(row: int, col: int) -> int:
    return row * (TILE + 1) + col


def swizzled_index(row: int, col: int) -> int:
    return row * TILE + (col ^ row)


def bank_of(element_index: int, elem_bytes: int = 4) -> int:
    return (element_index * elem_bytes // WORD) % BANKS


def swizzled_chunk(row: int, chunk: int) -> int:
    return chunk ^ ((row // VEC) % CHUNKS)


def _banks_panel(index: Callable[[int, int], int], pad: int, col: int, title: str,
                 rule: str) -> Figure:
    """Rows 0-7 of the float tile with the bank of each element, then the column read: lane l
    reads element (l, col) for l = 0..31, and how many words each bank must deliver."""
    shown = 8
    cols = TILE + pad
    x0, y0 = 5.2, 0.8
    fig, ax = canvas(x0 + cols + 0.6, y0 + shown + 5.5, inches_per_unit=0.26, title=title)
    label(ax, x0 - 0.2, y0 - 0.45, "column", 6.3, ha="right", color="#555555")
    for c in range(cols):
        label(ax, x0 + c + 0.5, y0 - 0.45, "pad" if c >= TILE else f"{c}", 6.0, ha="center",
              color="#555555" if c >= TILE else "black")
    for r in range(shown):
        label(ax, x0 - 0.2, y0 + r + 0.5, f"row {r}", 6.5, ha="right")
        for c in range(cols):
            if c >= TILE:
                cell(ax, x0 + c, y0 + r, f"{bank_of(index(r, c))}", "#E6E6E6", fontsize=6.0,
                     color="#777777")
                continue
            hot = c == col
            cell(ax, x0 + c, y0 + r, f"{bank_of(index(r, c))}", HOT_LIGHT if hot else "white",
                 fontsize=6.3, weight="bold" if hot else "normal", lw=1.4 if hot else 0.5)
    label(ax, x0, y0 + shown + 0.55, f"Each cell: the bank of element (row, column), {rule}. "
          f"Rows 8-31 follow the same rule.", 6.8, color="#333333")

    # The column read: lane l reads element (l, col).
    banks: List[int] = [bank_of(index(lane, col)) for lane in range(TILE)]
    per_bank = Counter(banks)
    waves = max(per_bank.values())
    ys = y0 + shown + 1.5
    label(ax, x0 - 0.2, ys - 0.4, "lane", 6.3, ha="right", color="#555555")
    for lane in range(TILE):
        label(ax, x0 + lane + 0.5, ys - 0.4, f"{lane}", 6.0, ha="center", color="#555555")
        repeated = per_bank[banks[lane]] > 1
        cell(ax, x0 + lane, ys, f"{banks[lane]}", LIGHT[4] if repeated else LIGHT[2],
             fontsize=6.3)
    label(ax, x0 - 0.2, ys + 0.5, "reads bank", 6.5, ha="right")
    yb = ys + 2.0
    label(ax, x0 - 0.2, yb - 0.4, "bank", 6.3, ha="right", color="#555555")
    for b in range(BANKS):
        label(ax, x0 + b + 0.5, yb - 0.4, f"{b}", 6.0, ha="center", color="#555555")
        n = per_bank.get(b, 0)
        cell(ax, x0 + b, yb, f"{n}", LIGHT[4] if n > 1 else (LIGHT[2] if n == 1 else "white"),
             fontsize=6.3, weight="bold" if n > 1 else "normal")
    label(ax, x0 - 0.2, yb + 0.5, "words asked", 6.5, ha="right")
    verdict = (f"Column {col} read by one warp: bank {banks[0]} must deliver {waves} different "
               f"words, so the instruction takes {waves} wavefronts."
               if waves > 1 else
               f"Column {col} read by one warp: 32 different banks, one word each: "
               f"1 wavefront.")
    label(ax, x0, yb + 1.55, verdict, 7.3, weight="bold", color=BAD if waves > 1 else OK)
    return fig


@diagram("d04_banks_plain")
def banks_plain() -> Figure:
    """Variant 2: tile[row * 32 + col]; a column is one bank."""
    return _banks_panel(plain_index, 0, 1, "Variant 2, plain tile[row * 32 + col]: the bank of "
                        "each float, and the column read", "bank = col")


@diagram("d04_banks_padded")
def banks_padded() -> Figure:
    """Variant 3: rows of 33 floats; a column walks across the banks."""
    return _banks_panel(padded_index, 1, 1, "Variant 3, padded tile[row * 33 + col]: the bank "
                        "of each float, and the column read", "bank = (row + col) % 32")


@diagram("d04_banks_swizzled")
def banks_swizzled() -> Figure:
    """Variant 4: column col ^ row of row row; a column is a permutation of the banks."""
    return _banks_panel(swizzled_index, 0, 1, "Variant 4, swizzled tile[row * 32 + (col ^ row)]:"
                        " the bank of each float, and the column read", "bank = col ^ row")


@diagram("d04_chunk_swizzle")
def chunk_swizzle() -> Figure:
    """Variant 5 (float): where each 16-byte chunk of a tile row is stored, and one step of the
    column gather of one warp, lane by lane, on the 32 banks."""
    fig, ax = canvas(59.0, 14.6, inches_per_unit=0.2,
                     title="Variant 5, float: 16-byte chunk j of tile row r is stored in chunk "
                           "slot j ^ ((r / 4) % 8)")
    # Left: the layout, one line per group of 4 rows (they share one swizzle).
    x0, y0, w = 6.2, 3.0, 1.5
    label(ax, x0 + 4 * w, y0 - 2.0, "Which chunk j each slot holds", 8, ha="center",
          weight="bold")
    label(ax, x0 - 0.2, y0 - 0.95, "slot", 6.5, ha="right", color="#555555")
    label(ax, x0 - 0.2, y0 - 0.35, "banks", 6.0, ha="right", color="#555555")
    for p in range(CHUNKS):
        label(ax, x0 + p * w + w / 2, y0 - 0.95, f"{p}", 6.8, ha="center")
        label(ax, x0 + p * w + w / 2, y0 - 0.35, f"{4 * p}-{4 * p + 3}", 5.8, ha="center",
              color="#555555")
    for g in range(CHUNKS):
        label(ax, x0 - 0.2, y0 + g + 0.5, f"rows {VEC * g}-{VEC * g + VEC - 1}", 6.5, ha="right")
        stored = {swizzled_chunk(VEC * g, j): j for j in range(CHUNKS)}
        assert sorted(stored) == list(range(CHUNKS))  # a permutation: every bank once per row
        for p in range(CHUNKS):
            j = stored[p]
            cell(ax, x0 + p * w, y0 + g, f"j={j}", "#555555" if j == 1 else LIGHT[j],
                 w=w, fontsize=6.5, color="white" if j == 1 else "black",
                 weight="bold" if j == 1 else "normal")
    lines = ["Rows 32-63 repeat rows 0-31. A row keeps its 8 chunks,",
             "in another order: the STS.128 of 8 lanes covers all",
             "32 banks once. Dark: chunk j = 1 (columns 4-7)."]
    for i, text in enumerate(lines):
        label(ax, 0.3, y0 + 9.0 + 0.95 * i, text, 6.6)

    # Right: the gather of one warp at step k = 0 for tile columns 4-7 (m = 1): lane l, in
    # unit l / 8, reads column 4 + l / 8 of tile row VEC (l % 8) + k.
    m, k = 1, 0
    x1, y1 = 23.5, 3.0
    label(ax, x1 + 16, y1 - 2.0, "One warp's column gather, columns 4-7, step k = 0: lane l "
          "reads column 4 + l / 8 of row 4 (l % 8)", 8, ha="center", weight="bold")
    label(ax, x1 - 0.2, y1 - 0.35, "bank", 6.0, ha="right", color="#555555")
    for b in range(BANKS):
        label(ax, x1 + b + 0.5, y1 - 0.35, f"{b}", 5.8, ha="center", color="#555555")
    reads = {}
    for lane in range(32):
        unit, q = lane // 8, lane % 8
        c = VEC * m + unit                      # tile column
        row = VEC * q + k                        # tile row: q-th group of VEC rows, element k
        slot = swizzled_chunk(row, c // VEC)
        bank = (slot * 16 + (c % VEC) * 4) // WORD % BANKS
        reads[(q, bank)] = lane
    banks_hit = [b for (_, b) in reads]
    assert len(set(banks_hit)) == 32            # conflict-free: one wavefront
    for q in range(8):
        row = VEC * q + k
        label(ax, x1 - 0.2, y1 + q + 0.5, f"row {row}", 6.5, ha="right")
        for b in range(BANKS):
            lane = reads.get((q, b))
            slot_j = [j for j in range(CHUNKS) if swizzled_chunk(row, j) == b // 4][0]
            if lane is None:
                cell(ax, x1 + b, y1 + q, "", LIGHT[slot_j] if slot_j == m else "white",
                     lw=0.4, edge=MUTED)
            else:
                cell(ax, x1 + b, y1 + q, f"{lane}", PALETTE[lane // 8], fontsize=6.3,
                     color="white", weight="bold")
        for p in range(CHUNKS + 1):
            ax.plot([x1 + 4 * p, x1 + 4 * p], [y1 + q, y1 + q + 1], color=EDGE, lw=1.3)
    ax.plot([x1, x1 + 32], [y1, y1], color=EDGE, lw=1.3)
    ax.plot([x1, x1 + 32], [y1 + 8, y1 + 8], color=EDGE, lw=1.3)
    for u in range(4):
        cell(ax, x1 + 8 * u + 0.2, y1 + 8.7, "", PALETTE[u], w=0.8, h=0.8)
        label(ax, x1 + 8 * u + 1.3, y1 + 9.1, f"lanes {8 * u}-{8 * u + 7}: column {4 + u}", 6.6)
    label(ax, x1, y1 + 10.5, "Thick lines: the 8 slots of 4 banks. In each row the lanes read "
          "the slot that holds j = 1: its 4 words are columns 4-7.", 6.8)
    label(ax, x1, y1 + 11.5, "32 lanes, 32 different banks: 1 wavefront. Steps k = 1-3 read "
          "rows 4q + k, the same slots.", 7.2, weight="bold", color=OK)
    return fig
