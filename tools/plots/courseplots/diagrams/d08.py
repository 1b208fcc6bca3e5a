"""Day 8's concept diagrams: the decoupled look-back of the one-pass scan, the radix-style pivot
search that finds a top-k threshold without sorting, and the caching pool's segments, blocks
and free lists.

Each follows the solution (solutions/d08_cub_sampling_pool/kernel.cu): look_back's lane l reads
tile end - 1 - l and the warp adds the values up to and including the nearest P; pivot_search
builds a 256-bin histogram of the next 8 bits among the candidates and scans the bins from the
largest down; the pool splits a small block when at least 512 bytes are left, a large one only
when more than 1 MiB is, and orders its free lists by (stream, size, address). The pivot search
is run here, on a synthetic row, exactly as the kernel runs it.
"""

from __future__ import annotations

import math
from typing import List, Tuple

import numpy as np
from matplotlib.figure import Figure

from . import diagram
from .draw import LIGHT, PALETTE, arrow, canvas, cell, label

FLAG_FACE = {"X": ("#E6E6E6", "black"), "A": (LIGHT[1], "black"), "P": (PALETTE[0], "white")}
HILITE = PALETTE[4]


@diagram("d08_lookback")
def lookback() -> Figure:
    """Tile 40 looks back over its predecessors' status words."""
    fig, ax = canvas(36.0, 18.0, title="Day 8: the decoupled look-back of scan_2: tile 40's "
                     "warp 0 reads its predecessors' status words (flag | value)")
    x0 = 2.0
    tw = 2.4
    tiles = list(range(29, 41))
    # status at the moment of the first read, and after tile 38 publishes
    flags1 = {29: "P", 30: "A", 31: "P", 32: "A", 33: "P", 34: "A", 35: "A", 36: "P", 37: "A",
              38: "X", 39: "A", 40: "A"}
    values = {29: 60110, 30: 2031, 31: 64180, 32: 1990, 33: 68160, 34: 2008, 35: 1968,
              36: 74112, 37: 2050, 38: 1987, 39: 2013, 40: 2044}
    label(ax, x0, 0.8, "tile (its number from atomicAdd(ticket, 1), not blockIdx.x)", 7.5)

    def row(y: float, flags, note: str) -> None:
        label(ax, x0 + len(tiles) * tw + 0.3, y + 0.9, note, 7)
        for i, t in enumerate(tiles):
            x = x0 + i * tw
            f = flags[t]
            face, ink = FLAG_FACE[f]
            hot = t == 40
            cell(ax, x, y, str(t), "white", tw, 0.7, 7, weight="bold" if hot else "normal")
            cell(ax, x, y + 0.7, f, face, tw * 0.3, 1.0, 7.5, color=ink, weight="bold")
            cell(ax, x + tw * 0.3, y + 0.7, "-" if f == "X" else str(values[t]), face, tw * 0.7,
                 1.0, 6.8, color=ink)
        cell(ax, x0 + (len(tiles) - 1) * tw, y, "40", HILITE, tw, 0.7, 7, color="white",
             weight="bold")

    row(1.3, flags1, "first read: tile 38 has\npublished nothing yet (X)")
    # lanes of tile 40's warp 0
    yl = 3.9
    label(ax, x0, yl + 1.35, "tile 40, warp 0: lane l reads the status of tile 39 - l (32 lanes: "
          "tiles 39 back to 8; lanes 0-10 drawn)", 7.5)
    for lane in range(11):
        t = 39 - lane
        i = tiles.index(t)
        x = x0 + i * tw + tw / 2
        cell(ax, x - 0.6, yl + 0.3, f"lane {lane}", LIGHT[5], 1.2, 0.6, 6.3)
        arrow(ax, (x, yl + 0.25), (x, 3.05), color="#777777", lw=0.6)
    label(ax, x0 + len(tiles) * tw + 0.3, yl + 0.6, "lane 1 spins: do { read }\n"
          "while (flag == X)", 7)
    flags2 = dict(flags1)
    flags2[38] = "A"
    row(6.2, flags2, "then tile 38 publishes A;\nevery lane has a flag")
    # ballot and sum
    yb = 9.3
    lanes = [39 - lane for lane in range(11)]
    label(ax, x0, yb, "ballot(flag == P) over the lanes: bit l set when tile 39 - l shows P", 7.5)
    for lane, t in enumerate(lanes):
        x = x0 + (10 - lane) * tw * 0.55 + 0.0
        bit = 1 if flags2[t] == "P" else 0
        cell(ax, x0 + lane * 1.3, yb + 0.5, str(bit), PALETTE[0] if bit else "white", 1.3, 0.7,
             7, color="white" if bit else "black")
        label(ax, x0 + lane * 1.3 + 0.65, yb + 1.55, str(lane), 6.3, ha="center")
    label(ax, x0 + 11 * 1.3 + 0.3, yb + 0.85, "... (lanes 11-31)", 7)
    label(ax, x0 - 0.1, yb + 1.55, "", 6)
    label(ax, x0 + 11 * 1.3 + 0.3, yb + 1.55, "lane", 6.3)
    first_p = next(lane for lane, t in enumerate(lanes) if flags2[t] == "P")
    prefix = sum(values[39 - lane] for lane in range(first_p + 1))
    total = values[40]
    label(ax, x0, yb + 2.5, f"nearest P: lane {first_p} (= __ffs(ballot) - 1), tile "
          f"{39 - first_p}. The warp adds the values of lanes 0-{first_p} "
          "(__reduce_add_sync, the others add 0):", 7.5)
    terms = " + ".join(str(values[39 - lane]) for lane in range(first_p + 1))
    label(ax, x0 + 0.5, yb + 3.25, f"prefix = {terms} = {prefix}   (the sum of tiles 0-39)",
          7.5, color=HILITE)
    label(ax, x0 + 0.5, yb + 4.0, f"tile 40 publishes P: {prefix} + its total {total} = "
          f"{prefix + total}, then adds {prefix} to every element it writes", 7.5,
          color=HILITE)
    label(ax, x0, yb + 4.9, "No P among the 32 (all A): add all 32 values and read the 32 tiles "
          "before them. Tile 0 publishes P at once, so every look-back ends.", 7.5)
    # the status word and the legend
    ys = yb + 6.1
    label(ax, x0, ys + 0.45, "one status word:", 7.5)
    cell(ax, x0 + 4.2, ys, "flag (bits 63-32)", "#EEEEEE", 6.0, 0.9, 7)
    cell(ax, x0 + 10.2, ys, "value (bits 31-0)", "#EEEEEE", 6.0, 0.9, 7)
    label(ax, x0 + 16.5, ys + 0.45, "one aligned 64-bit word, one atomic store: a reader that "
          "sees the flag sees its value", 7)
    items = [("X", "X: nothing yet (the memset's 0)"), ("A", "A: aggregate, the tile's own total"),
             ("P", "P: inclusive prefix, tiles 0 to this one")]
    for i, (f, text) in enumerate(items):
        face, ink = FLAG_FACE[f]
        cell(ax, x0 + i * 11.0, ys + 1.4, f, face, 0.9, 0.8, 7.5, color=ink, weight="bold")
        label(ax, x0 + i * 11.0 + 1.2, ys + 1.8, text, 7)
    return fig


def _pivot_passes(vocab: int = 131072, k: int = 50) -> Tuple[List[dict], int, np.ndarray]:
    """pivot_search for top-k (weight 1 per token) on a Zipf-like row, p_i ~ 1 / (i + 20)^1.5,
    in a fixed shuffled order. Built from correctly rounded operations only (division, square
    root, math.fsum), so the row, and the figure, are the same bits on every machine."""
    i = np.arange(vocab, dtype=np.float64) + 20.0
    w = 1.0 / (i * np.sqrt(i))
    p = (w / math.fsum(w.tolist())).astype(np.float32)
    p = p[np.random.default_rng(8).permutation(vocab)]
    keys = p.view(np.uint32)
    prefix, mask, target = 0, 0, k
    passes = []
    for shift in (24, 16, 8, 0):
        cand = (keys & np.uint32(mask)) == np.uint32(prefix)
        hist = np.bincount((keys[cand] >> np.uint32(shift)) & np.uint32(0xFF), minlength=256)
        rows, above, chosen = [], 0, None
        for b in range(255, -1, -1):
            if hist[b] == 0:
                continue
            rows.append((b, int(hist[b]), above))
            if above < target <= above + hist[b]:
                chosen = b
                break
            above += int(hist[b])
        passes.append(dict(shift=shift, candidates=int(cand.sum()), target=target, rows=rows,
                           chosen=chosen))
        prefix |= chosen << shift
        target -= rows[-1][2]
        mask |= 0xFF << shift
    return passes, prefix, p


@diagram("d08_pivot_search")
def pivot_search() -> Figure:
    """The four 8-bit passes of pivot_search finding the top-50 threshold of a 131072-token row."""
    passes, prefix, p = _pivot_passes()
    thr = np.uint32(prefix).view(np.float32)
    kept = int((p >= thr).sum())
    fig, ax = canvas(36.0, 18.6, title="Day 8: top-k without sorting: the threshold's bits, 8 "
                     "at a time (pivot_search, k = 50, vocabulary 131072)")
    x0 = 1.0
    label(ax, x0, 0.8, "For p >= 0 a float's bits, read as an unsigned integer, sort like the "
          "float: sign (1) | exponent (8) | mantissa (23). So the k-th largest p is found one "
          "byte at a time, from the top:", 7.5)
    colours = [LIGHT[0], LIGHT[1], LIGHT[2], LIGHT[3]]
    for i in range(4):
        byte = prefix >> (24 - 8 * i) & 0xFF
        cell(ax, x0 + 6.0 + i * 4.0, 1.5, f"0x{byte:02X}", colours[i], 4.0, 1.0, 8,
             weight="bold")
        label(ax, x0 + 8.0 + i * 4.0, 2.9, f"pass {i + 1}: bits {31 - 8 * i}-{24 - 8 * i}", 6.8,
              ha="center")
    label(ax, x0 + 5.7, 2.0, "threshold =", 7.5, ha="right")
    label(ax, x0 + 22.4, 2.0, f"= {thr:.7g} as a float: exactly {kept} tokens have p >= it",
          7.5)
    # four tables
    tw = [2.2, 2.6, 2.6]
    colw = sum(tw) + 1.4
    yt = 4.2
    for i, ps in enumerate(passes):
        x = x0 + i * colw
        head = (f"pass {i + 1}: {ps['candidates']} candidate{'s' if ps['candidates'] > 1 else ''}"
                f", target {ps['target']}")
        label(ax, x, yt, head, 7.3, weight="bold")
        label(ax, x, yt + 0.65, "(tokens whose higher bytes" if i else "(the whole row)", 6.8)
        label(ax, x, yt + 1.2, "match the bytes found)" if i else "", 6.8)
        y = yt + 1.7
        for c, text in enumerate(("bin", "count", "above")):
            cell(ax, x + sum(tw[:c]), y, text, "#EEEEEE", tw[c], 0.7, 7, weight="bold")
        rows = ps["rows"]
        shown = rows if len(rows) <= 8 else rows[:3] + [None] + rows[-3:]
        for r, item in enumerate(shown):
            yy = y + 0.7 + r * 0.7
            if item is None:
                cell(ax, x, yy, f"... {len(rows) - 6} more bins ...", "white", sum(tw), 0.7, 6.8)
                continue
            b, n, above = item
            hot = b == ps["chosen"]
            face = colours[i] if hot else "white"
            for c, text in enumerate((f"0x{b:02X}", str(n), str(above))):
                cell(ax, x + sum(tw[:c]), yy, text, face, tw[c], 0.7, 7,
                     weight="bold" if hot else "normal")
        yy = y + 0.7 + len(shown) * 0.7 + 0.3
        b = ps["chosen"]
        n, above = rows[-1][1], rows[-1][2]
        label(ax, x, yy + 0.2, f"above {above} < {ps['target']} <= {above + n}:", 6.8)
        label(ax, x, yy + 0.8, f"byte 0x{b:02X}, next target {ps['target'] - above}", 6.8)
    yn = 14.0
    label(ax, x0, yn, "Each pass reads the row once (from the L2 after the first) and builds a "
          "256-bin histogram in shared memory of the next byte, among the tokens that share "
          "the bytes found so far;", 7.5)
    label(ax, x0, yn + 0.7, "one thread per bin scans the bins from the largest down "
          "(cub::BlockScan), and the bin where the count above reaches the target fixes 8 more "
          "bits. Only non-empty bins are listed.", 7.5)
    label(ax, x0, yn + 1.4, "Top-p is the same search with each token weighted by p (in fixed "
          "point, 2^40 per unit) instead of 1; min-p needs only the row's maximum.", 7.5)
    label(ax, x0, yn + 2.3, "The row here is synthetic: p proportional to 1 / (i + 20)^1.5 over "
          "131072 tokens, shuffled; the passes are computed with numpy exactly as the kernel "
          "counts.", 7, color="#555555")
    label(ax, x0, yn + 3.0, "Bits 31-24 are the sign and the 7 high exponent bits: a bin of "
          "pass 1 spans a factor of 4 in p.", 7, color="#555555")
    return fig


@diagram("d08_caching_pool")
def caching_pool() -> Figure:
    """Segments cut into blocks, the free lists, a best fit, a split, a free that merges."""
    fig, ax = canvas(37.0, 20.0, title="Day 8: the caching pool: segments cut into blocks, "
                     "free lists ordered by (stream, size, address)")
    alloc, cached, pending = (PALETTE[0], "white"), (LIGHT[2], "black"), (LIGHT[1], "black")
    x0 = 7.4
    KB, MB = 1024, 1024 * 1024
    small_scale = 14.0 / (2 * MB)   # a 2 MiB segment is 14 units wide
    large_scale = 14.0 / (14 * MB)  # a 14 MiB block is 14 units wide

    def segment(y: float, name: str, blocks, scale: float) -> float:
        label(ax, x0 - 0.3, y + 0.45, name, 7.3, ha="right")
        x = x0
        for size, state, text in blocks:
            face, ink = state
            cell(ax, x, y, text, face, size * scale, 0.9, 6.8, color=ink)
            x += size * scale
        return x

    label(ax, 0, 0.8, "(a) small blocks (<= 1 MiB) are cut from 2 MiB segments; each segment "
          "belongs to one stream; every block is a multiple of 512 bytes", 7.5, weight="bold")
    segment(1.4, "stream 1, small", [(512 * KB, alloc, "512 KiB"), (256 * KB, cached, "256 KiB"),
                                     (512 * KB, alloc, "512 KiB"), (768 * KB, cached, "768 KiB")],
            small_scale)
    segment(2.7, "stream 1, small", [(1 * MB, alloc, "1 MiB"), (1 * MB, cached, "1 MiB")],
            small_scale)
    segment(4.0, "stream 2, small", [(768 * KB, pending, "768 KiB, event"),
                                     (1280 * KB, cached, "1.25 MiB")], small_scale)
    xt = x0 + 14.6
    notes = ["allocate(300000 bytes, stream 1): round_size gives 300032 (586 x 512)",
             "best fit: lower_bound({stream 1, 300032}) in small_free (below)",
             "the 256 KiB block is too small; the 768 KiB block is the smallest that fits",
             "split: 300032 bytes handed out, the 486400 above them stay cached",
             "stream 2's 1.25 MiB block is never handed to stream 1 (section 4.1)"]
    for i, text in enumerate(notes):
        label(ax, xt, 1.6 + i * 0.65, text, 7)
    yf = 5.7
    label(ax, 0, yf, "small_free, a std::set ordered by BlockOrder: stream, then size, then "
          "address (the large blocks have their own set)", 7.5, weight="bold")
    entries = ["stream 1, 256 KiB", "stream 1, 768 KiB", "stream 1, 1 MiB", "stream 2, 1.25 MiB"]
    for i, text in enumerate(entries):
        hot = i == 1
        cell(ax, x0 + i * 5.2, yf + 0.6, text, HILITE if hot else LIGHT[2], 5.0, 0.8, 7,
             color="white" if hot else "black")
    label(ax, x0 + 4 * 5.2 + 0.2, yf + 1.0, "<- lower_bound lands here", 7, color=HILITE)
    # large
    yl = 8.2
    label(ax, 0, yl, "(b) allocate(9 MiB): a large block gets its own segment, rounded up to "
          "2 MiB; the rest is split off only when it is more than 1 MiB", 7.5, weight="bold")
    segment(yl + 0.6, "new segment", [(10 * MB, alloc, "one 10 MiB block, all allocated")],
            large_scale)
    label(ax, x0 + 14.6, yl + 1.05, "a new segment of segment_size(9 MiB) = 10 MiB; the 1 MiB "
          "rest is not split off:", 7)
    label(ax, x0 + 14.6, yl + 1.65, "it could serve only a large request (> 1 MiB), which it "
          "is too small for", 7)
    segment(yl + 2.2, "cached 14 MiB", [(9 * MB, alloc, "9 MiB allocated"),
                                         (5 * MB, cached, "5 MiB cached")], large_scale)
    label(ax, x0 + 14.6, yl + 2.65, "a cached 14 MiB block on the same stream: the 5 MiB rest "
          "is split off and cached", 7)
    # merge
    ym = 12.6
    label(ax, 0, ym, "(c) free(C): the freed block merges with its cached neighbours (prev, "
          "next); a segment whose blocks are all free is one block again", 7.5, weight="bold")
    segment(ym + 0.6, "before", [(512 * KB, alloc, "A"), (512 * KB, cached, "B"),
                                 (512 * KB, alloc, "C"), (512 * KB, cached, "rest")],
            small_scale)
    segment(ym + 1.9, "after", [(512 * KB, alloc, "A"),
                                (1536 * KB, cached, "B + C + rest: one 1.5 MiB block")],
            small_scale)
    label(ax, x0 + 14.6, ym + 0.85, "fragmentation = 1 - largest cached block / cached bytes",
          7)
    label(ax, x0 + 14.6, ym + 1.5, "before: 1 - 512 KiB / 1 MiB = 0.5 (a 1 MiB request would "
          "need a new segment)", 7)
    label(ax, x0 + 14.6, ym + 2.15, "after: 1 - 1.5 MiB / 1.5 MiB = 0", 7)
    # states
    ys = 16.4
    label(ax, 0, ys, "(d) every reserved byte is in exactly one state: reserved = allocated + "
          "pending + cached", 7.5, weight="bold")
    items = [(alloc, "allocated: handed out, not yet freed"),
             (pending, "pending: freed, but a stream named by record_stream may still use it; "
              "cached once its event has completed"),
             (cached, "cached: in a free list, handed out again only on its own stream")]
    for i, ((face, _), text) in enumerate(items):
        cell(ax, x0, ys + 0.6 + i * 1.0, "", face, 0.9, 0.8)
        label(ax, x0 + 1.2, ys + 1.0 + i * 1.0, text, 7)
    return fig
