"""Day 5's concept diagrams: how warps and blocks map to softmax rows, and the warp-level
primitives of the day (a ballot-based compaction, a match-based aggregation).

Every map is the solution's (solutions/d05_warp_programming/kernel.cu): load_row's vector j of
thread t covers columns (j * P + t) * kVec ... + kVec - 1, compact_1_scatter_kernel writes a
kept element to offset + popc(ballot & lanes_below(lane)), count_keys_1_match_kernel lets the
lowest lane of each __match_any_sync group add popc(peers).
"""

from __future__ import annotations

from matplotlib.figure import Figure

from . import diagram
from .draw import LIGHT, PALETTE, arrow, box, canvas, cell, label, legend_cells

HILITE = PALETTE[4]   # vermilion: the one thread / lane the text follows
HILITE_LIGHT = LIGHT[4]
PLAIN = LIGHT[0]      # light blue: every other lane
WARP = 32


@diagram("d05_row_mapping")
def row_mapping() -> Figure:
    """A warp per row (256 columns in registers) and a block per row (8192 columns)."""
    w = 0.78  # width of one 16-byte vector cell
    fig, ax = canvas(32 * w + 6.2, 26.6, title="Day 5: which thread holds which columns of a "
                     "softmax row (float32, 16-byte vectors of 4)")
    x0 = 5.6
    # (a) warp per row
    label(ax, 0, 0.5, "(a) softmax_1_warp_per_row: a block of 128 threads is 4 warps; warp w "
          "owns row 4 * blockIdx.x + w", 8, weight="bold")
    for r in range(4):
        y = 1.3 + r * 0.85
        box(ax, x0, y, 32 * w, 0.65, "", face=LIGHT[r + 1], lw=0.6)
        label(ax, x0 - 0.2, y + 0.33, f"row 4b + {r}", 7.5, ha="right")
        label(ax, x0 + 32 * w / 2, y + 0.33, f"warp {r}: lanes 0-31 (threads {32 * r}-"
              f"{32 * r + 31})", 7, ha="center")
    y = 5.3
    label(ax, 0, y, "One row of 256 columns (bucket kElems = 8: two vectors of 4 per lane); "
          "vector j of lane l = columns (32j + l) * 4 ... + 3:", 7.5)
    for j in range(2):
        yy = y + 0.9 + j * 2.2
        label(ax, x0 - 0.2, yy + 0.4, f"j = {j}", 7.5, ha="right")
        label(ax, x0 - 0.2, yy + 1.2, f"cols {128 * j}-{128 * j + 127}", 6.5, ha="right")
        for lane in range(WARP):
            hot = lane == 5
            cell(ax, x0 + lane * w, yy, str(lane), HILITE if hot else PLAIN, w, 0.8, 6.2,
                 color="white" if hot else "black", weight="bold" if hot else "normal")
            if lane % 8 == 0 or lane == 31:
                label(ax, x0 + lane * w + w / 2, yy + 1.15, str((32 * j + lane) * 4), 6,
                      ha="center", color="#555555")
    label(ax, x0 + 32 * w / 2, y + 5.4, "each j: the 32 lanes read 32 x 16 = 512 contiguous "
          "bytes (one LDG.E.128 each); lane 5 holds columns 20-23 and 148-151", 7, ha="center")
    label(ax, x0 + 32 * w / 2, y + 6.1, "the row's max and sum: warp_max, warp_sum (5 "
          "shuffles each), no shared memory, no barrier", 7, ha="center")

    # (b) block per row
    yb = 13.2
    label(ax, 0, yb, "(b) softmax_2_block_per_row: 8192 columns, 512 threads (16 warps) x 16 "
          "values; thread t holds vectors t, t + 512, t + 1024, t + 1536", 8, weight="bold")
    seg = 32 * w / 16  # one warp's 32 vectors in a strip of 512
    for j in range(4):
        yy = yb + 0.9 + j * 1.55
        label(ax, x0 - 0.2, yy + 0.35, f"j = {j}", 7.5, ha="right")
        label(ax, x0 - 0.2, yy + 0.95, f"cols {2048 * j}-{2048 * j + 2047}", 6.5, ha="right")
        for wp in range(16):
            face = LIGHT[wp % 2 * 2]  # alternate light blue / light green per warp
            cell(ax, x0 + wp * seg, yy, f"w{wp}", face, seg, 0.7, 6.2)
        # thread 37 = warp 1, lane 5: vector 512 j + 37
        tx = x0 + 1 * seg + 5 * seg / 32
        cell(ax, tx, yy, "", HILITE, seg / 32 * 1.6, 0.7, lw=0.3)
        if j == 0:
            label(ax, tx + seg / 32 * 0.8, yy - 0.3, "thread 37", 6.5, ha="center",
                  color=HILITE)
    label(ax, x0 + 32 * w / 2, yb + 7.25, "each strip: 512 vectors = 2048 columns, warp w "
          "reads vectors 32w ... 32w + 31 of it (512 contiguous bytes)", 7, ha="center")
    label(ax, x0 + 32 * w / 2, yb + 7.95, "marked: thread 37 (warp 1, lane 5) holds "
          "vectors 37, 549, 1061 and 1573: columns 148-151, 2196-2199, 4244-4247, 6292-6295",
          7, ha="center", color=HILITE)
    label(ax, x0 + 32 * w / 2, yb + 8.75, "max and sum: warp_max / warp_sum, then 16 partials "
          "through shared memory, one __syncthreads() per reduction (section 8.2)", 7,
          ha="center")
    legend_cells(ax, x0, yb + 9.6, [(HILITE, "the thread the labels follow"),
                                    (PLAIN, "a lane of a warp (a)"),
                                    (LIGHT[2], "a warp's 32 vectors in one strip (b)")],
                 fontsize=7, step=0.95)
    return fig


@diagram("d05_ballot_compaction")
def ballot_compaction() -> Figure:
    """One round of compact_1_scatter_kernel in one warp: ballot, popc of the lanes below."""
    keep = [1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1,
            0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 0]
    kept = sum(b << i for i, b in enumerate(keep))
    w = 0.82
    x0 = 5.4
    fig, ax = canvas(x0 + 32 * w + 0.4, 16.6, title="Day 5: stable compaction in one warp: "
                     "kept = __ballot_sync(full, keep); position = offset + popc(kept & "
                     "lanes below)")
    hot_lane = 20
    rows = ["lane", "keep", f"lanes below {hot_lane}", "popc(kept & below)"]
    for i, name in enumerate(rows):
        label(ax, x0 - 0.2, 0.9 + i * 1.1 + 0.4, name, 7.5, ha="right")
    below = (1 << hot_lane) - 1
    for lane in range(WARP):
        x = x0 + lane * w
        hot = lane == hot_lane
        cell(ax, x, 0.9, str(lane), HILITE if hot else "white", w, 0.8, 6.3,
             color="white" if hot else "black")
        k = keep[lane]
        cell(ax, x, 2.0, str(k), PALETTE[2] if k else "white", w, 0.8, 6.5,
             color="white" if k else "#777777")
        inside = below >> lane & 1
        cell(ax, x, 3.1, str(inside), LIGHT[5] if inside else "white", w, 0.8, 6.5,
             color="black" if inside else "#777777")
        if k:
            rank = bin(kept & ((1 << lane) - 1)).count("1")
            cell(ax, x, 4.2, str(rank), HILITE_LIGHT if hot else LIGHT[2], w, 0.8, 6.5)
    rank_hot = bin(kept & below).count("1")
    label(ax, x0, 12.3, f"kept = 0x{kept:08X} (bit l = lane l's keep: lane 0 is the lowest bit, "
          f"so the hex reads right to left); popc(kept) = {bin(kept).count('1')} elements "
          "this round", 7)
    label(ax, x0, 13.0, f"lane {hot_lane} keeps its element: kept & ((1u << {hot_lane}) - 1) "
          f"has {rank_hot} bits set, so it writes out[offset + {rank_hot}]", 7, color=HILITE)
    # output array
    n_out = bin(kept).count("1")
    yo = 9.4
    label(ax, x0 - 0.2, yo + 0.4, "out", 7.5, ha="right")
    ox = x0 + (32 - n_out) * w / 2
    for p in range(n_out):
        cell(ax, ox + p * w * 1.0, yo, f"+{p}", LIGHT[2], w, 0.8, 6.3)
    label(ax, ox, yo + 1.3, "offset = kept in earlier blocks + earlier warps + earlier rounds "
          "(section 4.3); the next round starts at offset + popc(kept)", 7)
    for lane in range(WARP):
        if not keep[lane]:
            continue
        rank = bin(kept & ((1 << lane) - 1)).count("1")
        hot = lane == hot_lane
        arrow(ax, (x0 + lane * w + w / 2, 5.0), (ox + rank * w + w / 2, yo),
              color=HILITE if hot else "#888888", lw=1.2 if hot else 0.6)
    label(ax, x0, 13.8, "No atomics, no shared memory: one VOTE and one POPC per lane. Kept "
          "elements keep their lane order, which is their input order: the result is stable.",
          7.5)
    legend_cells(ax, x0, 14.6, [(PALETTE[2], "keep = x[i] > threshold (a ballot bit set)"),
                                (LIGHT[2], "a kept element's rank among the kept lanes")],
                 fontsize=7, step=0.95)
    return fig


@diagram("d05_match_aggregation")
def match_aggregation() -> Figure:
    """count_keys_1_match: __match_any_sync groups equal keys; each group's lowest lane adds."""
    keys = [7, 3, 7, 7, 12, 3, 7, 12, 7, 7, 3, 7, 7, 12, 7, 3,
            7, 7, 7, 3, 12, 7, 7, 7, 3, 7, 7, 7, -1, -1, -1, -1]
    colour = {7: (PALETTE[0], "white"), 3: (PALETTE[1], "black"), 12: (PALETTE[2], "white"),
              -1: ("#DDDDDD", "black")}
    w = 0.82
    x0 = 5.0
    fig, ax = canvas(x0 + 32 * w + 0.4, 11.4, title="Day 5: warp-aggregated atomics: peers = "
                     "__match_any_sync(full, key); the lowest peer adds popc(peers)")
    label(ax, x0 - 0.2, 1.3, "lane", 7.5, ha="right")
    label(ax, x0 - 0.2, 2.4, "key", 7.5, ha="right")
    label(ax, x0 - 0.2, 3.5, "leader?", 7.5, ha="right")
    peers = {k: sum(1 << i for i, kk in enumerate(keys) if kk == k) for k in set(keys)}
    for lane, k in enumerate(keys):
        x = x0 + lane * w
        cell(ax, x, 0.9, str(lane), "white", w, 0.8, 6.3)
        face, ink = colour[k]
        cell(ax, x, 2.0, str(k), face, w, 0.8, 6.5, color=ink)
        leader = (peers[k] & -peers[k]).bit_length() - 1 == lane
        if leader:
            cell(ax, x, 3.1, "yes", face, w, 0.8, 6.0, color=ink, weight="bold")
    yb = 5.2
    for i, k in enumerate([7, 3, 12, -1]):
        face, ink = colour[k]
        y = yb + i * 1.15
        lead = (peers[k] & -peers[k]).bit_length() - 1
        n = bin(peers[k]).count("1")
        cell(ax, x0, y, f"key {k}", face, 2.6, 0.85, 7, color=ink)
        what = (f"peers = 0x{peers[k]:08X}: {n} lanes, leader lane {lead} does "
                f"atomicAdd(&counts[{k}], {n})" if k >= 0 else
                f"peers = 0x{peers[k]:08X}: the lanes past n (key -1); their leader, lane "
                f"{lead}, adds nothing")
        label(ax, x0 + 2.9, y + 0.43, what, 7)
    label(ax, x0, yb + 5.0, "3 atomics for 28 elements instead of 28. All 32 lanes call "
          "__match_any_sync, also the 4 past the end (section 2.3): they match each other.", 7.5)
    label(ax, x0, yb + 5.8, "32 equal keys cost 1 atomic; 32 different keys cost 32, as "
          "without the match.", 7.5)
    return fig
