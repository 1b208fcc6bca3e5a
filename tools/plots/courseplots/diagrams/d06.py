"""Day 6's concept diagrams: the levels of a reduction tree (lanes, warps, blocks) and what
RMSNorm reduces per row.

The shapes are the solution's (solutions/d06_reduction_norms/kernel.cu): block_sum's two
levels and its two barriers, the two-pass sum's 1024 partials and its one-block second pass,
and rmsnorm_kernel's row split (hidden 4096 in bfloat16: 256 threads, 2 vectors each).
"""

from __future__ import annotations

from matplotlib.figure import Figure

from . import diagram
from .draw import EDGE, LIGHT, PALETTE, arrow, box, canvas, cell, label

HILITE = PALETTE[4]
SHARED = LIGHT[1]   # light orange: shared memory
GLOBAL = LIGHT[3]   # light pink: global memory
REGS = LIGHT[0]     # light blue: registers


def _barrier(ax, x0: float, x1: float, y: float, text: str) -> None:
    ax.plot([x0, x1], [y, y], color=EDGE, linestyle=(0, (5, 3)), linewidth=1.0)
    label(ax, x1 + 0.2, y, text, 7, color=EDGE)


@diagram("d06_reduction_levels")
def reduction_levels() -> Figure:
    """block_sum's two levels inside a block of 8 warps, and the grid level of the two-pass sum."""
    fig, ax = canvas(37.0, 27.4, title="Day 6: a reduction in levels: lanes (shuffles), warps "
                     "(shared memory), blocks (a second kernel)")
    x0 = 6.0
    ww = 2.6      # one warp's box
    gap = 0.35
    label(ax, 0, 0.9, "level", 7.5, weight="bold")
    label(ax, x0, 0.9, "one block of 256 threads = 8 warps (the two-pass sum's first pass, "
          "sum_two_pass_1_partials)", 7.5, weight="bold")
    # thread level
    label(ax, 0, 2.3, "thread", 7.5)
    for w in range(8):
        x = x0 + w * (ww + gap)
        box(ax, x, 1.7, ww, 1.2, f"warp {w}\n32 partials", face=REGS, fontsize=6.8)
    label(ax, x0 + 8 * (ww + gap) + 0.2, 2.0, "each thread: a grid-stride loop over its", 7)
    label(ax, x0 + 8 * (ww + gap) + 0.2, 2.6, "16-byte vectors, in registers", 7)
    # warp level
    label(ax, 0, 4.6, "warp", 7.5)
    for w in range(8):
        x = x0 + w * (ww + gap)
        arrow(ax, (x + ww / 2, 2.95), (x + ww / 2, 4.0))
        box(ax, x, 4.0, ww, 1.2, f"s{w} in all\n32 lanes", face=REGS, fontsize=6.8)
    label(ax, x0 + 8 * (ww + gap) + 0.2, 3.55, "warp_sum: 5 x SHFL.BFLY", 7)
    label(ax, x0 + 8 * (ww + gap) + 0.2, 4.15, "(xor 16, 8, 4, 2, 1);", 7)
    label(ax, x0 + 8 * (ww + gap) + 0.2, 4.75, "no wait: the shuffle is the exchange", 7)
    # block level: lane 0 of every warp writes warp_sums[w]
    label(ax, 0, 7.6, "block", 7.5)
    sx = x0 + 2.0
    sw = 2.2
    for w in range(8):
        x = x0 + w * (ww + gap)
        arrow(ax, (x + 0.4, 5.25), (sx + w * sw + sw / 2, 7.0), color=PALETTE[0])
    label(ax, x0 + 0.1, 6.2, "lane 0", 6.5, color=PALETTE[0])
    for w in range(8):
        cell(ax, sx + w * sw, 7.0, f"[{w}]", SHARED, sw, 0.8, 6.8)
    label(ax, sx - 0.2, 7.4, "warp_sums", 7, ha="right")
    label(ax, sx + 8 * sw + 0.3, 7.4, "__shared__ float warp_sums[32]", 7)
    _barrier(ax, x0, x0 + 8 * (ww + gap), 8.45, "__syncthreads() (3): every partial written")
    # every warp reads all eight
    for w in range(8):
        x = x0 + w * (ww + gap)
        box(ax, x, 9.5, ww, 1.5, f"warp {w}: lane l\nreads slot l\n(l < 8, else 0)",
            face=REGS, fontsize=6.3)
    for slot in range(8):
        arrow(ax, (sx + slot * sw + sw / 2, 7.85), (x0 + 3 * (ww + gap) + 0.35 + slot * 0.27,
                                                    9.45), color="#777777", lw=0.6)
    label(ax, x0 + 8 * (ww + gap) + 0.2, 9.95, "every warp reads all 8 slots", 7)
    label(ax, x0 + 8 * (ww + gap) + 0.2, 10.55, "(drawn for warp 3 only)", 7)
    for w in range(8):
        x = x0 + w * (ww + gap)
        arrow(ax, (x + ww / 2, 11.05), (x + ww / 2, 11.9))
        box(ax, x, 11.9, ww, 1.2, "block total\nin all lanes", face=LIGHT[2], fontsize=6.5)
    label(ax, x0 + 8 * (ww + gap) + 0.2, 12.2, "warp_sum again, redundantly in every", 7)
    label(ax, x0 + 8 * (ww + gap) + 0.2, 12.8, "warp: no broadcast, no third barrier", 7)
    _barrier(ax, x0, x0 + 8 * (ww + gap), 13.8, "__syncthreads() (5): every slot read")
    label(ax, x0 + 8 * (ww + gap) + 0.2, 14.45, "(a later call may write them again)", 7,
          color=EDGE)
    # grid level
    label(ax, 0, 16.5, "grid", 7.5)
    label(ax, x0, 15.2, "the grid: B = min(ceil(vectors / (256 x 4)), 1024) blocks, each "
          "doing the above; thread 0 writes its block's total", 7.5, weight="bold")
    pw = 1.5
    names = ["0", "1", "2", "3", "...", "B-2", "B-1"]
    for i, nm in enumerate(names):
        cell(ax, x0 + 2.0 + i * pw * 1.45, 16.1, f"blk {nm}", LIGHT[2], pw * 1.2, 0.8, 6.3)
        cell(ax, x0 + 2.0 + i * pw * 1.45, 17.5, f"[{nm}]", GLOBAL, pw * 1.2, 0.8, 6.3)
        arrow(ax, (x0 + 2.0 + i * pw * 1.45 + pw * 0.6, 16.95),
              (x0 + 2.0 + i * pw * 1.45 + pw * 0.6, 17.45))
    label(ax, x0 + 2.0 + 7 * pw * 1.45 + 0.2, 17.9, "partials[B] in global memory", 7)
    _barrier(ax, x0, x0 + 8 * (ww + gap), 18.9, "end of kernel 1: the grid-wide barrier "
             "(stream order)")
    box(ax, x0 + 2.0, 19.6, 18.0, 1.5, "sum_two_pass_2_final<<<1, 1024>>>: thread i takes "
        "partials[i] (0 past B),\nblock_sum (32 warps, the same two levels), thread 0 writes "
        "*out", face=LIGHT[2], fontsize=7)
    # what the levels use
    rows = [("level", "who combines", "moves through", "waits on"),
            ("thread", "one thread", "registers", "program order"),
            ("warp", "32 lanes", "__shfl_xor_sync", "nothing"),
            ("block", "up to 32 warps", "shared memory", "__syncthreads()"),
            ("grid", "all blocks", "global memory", "the end of a kernel")]
    widths = [3.4, 5.2, 6.0, 6.4]
    ty = 22.6
    for r, row in enumerate(rows):
        x = x0
        for c, text in enumerate(row):
            cell(ax, x, ty + r * 0.9, text, "#EEEEEE" if r == 0 else "white", widths[c], 0.9,
                 7, weight="bold" if r == 0 else "normal")
            x += widths[c]
    label(ax, x0 + sum(widths) + 0.4, ty + 1.0, "The order of every addition is fixed by the "
          "code:", 7)
    label(ax, x0 + sum(widths) + 0.4, ty + 1.7, "the same bits on every run (no atomics).", 7)
    label(ax, x0 + sum(widths) + 0.4, ty + 2.6, "A row of one warp (blockDim.x = 32) stops", 7)
    label(ax, x0 + sum(widths) + 0.4, ty + 3.3, "after the warp level: no barrier at all.", 7)
    return fig


@diagram("d06_rmsnorm_row")
def rmsnorm_row() -> Figure:
    """One RMSNorm row of hidden 4096 in bfloat16: who loads what, what is reduced, from where."""
    w = 0.1   # one 16-byte vector (8 bf16)
    x0 = 5.6
    fig, ax = canvas(x0 + 256 * w + 8.0, 18.6, title="Day 6: one RMSNorm row in a block "
                     "(bfloat16, hidden 4096 = 512 vectors of 8; 256 threads, V = 2)")
    label(ax, x0, 0.8, "x[row]: thread t loads vectors t and t + 256 into registers "
          "(cached[0], cached[1]); each warp's loads are 512 contiguous bytes", 7.5)
    for j in range(2):
        y = 1.6 + j * 1.6
        label(ax, x0 - 0.2, y + 0.35, f"k = {j}", 7.5, ha="right")
        label(ax, x0 - 0.2, y + 1.0, f"cols {2048 * j}-{2048 * j + 2047}", 6.5, ha="right")
        for wp in range(8):
            cell(ax, x0 + wp * 32 * w, y, f"warp {wp}", LIGHT[wp % 2 * 2], 32 * w, 0.7, 6.5)
        cell(ax, x0 + 5 * w, y, "", HILITE, w * 1.2, 0.7, lw=0.3)
    label(ax, x0 + 5 * w, 1.25, "thread 5", 6.5, color=HILITE)
    label(ax, x0 + 256 * w + 0.4, 2.0, "thread 5: vectors 5 and 261", 7, color=HILITE)
    label(ax, x0 + 256 * w + 0.4, 2.6, "= columns 40-47 and 2088-2095", 7, color=HILITE)
    label(ax, x0 + 256 * w + 0.4, 3.5, "w: the same vectors, from the", 7)
    label(ax, x0 + 256 * w + 0.4, 4.1, "L2 after the first rows", 7)
    # steps
    steps = [
        ("1. loads first", "cached[k].load(x row + v * 8), weight[k].load(w + v * 8) for k < 2: "
         "four LDG.E.128 in flight per thread, then the math", REGS),
        ("2. per thread", "sum_sq = sum of the 16 values' squares (float32, registers)", REGS),
        ("3. per row", "block_sum(sum_sq): 8 warps x warp_sum, 8 partials in shared memory, "
         "two barriers (Exercise 1)", SHARED),
        ("4. the statistic", "rstd = rsqrtf(sum * inv_hidden + eps), inv_hidden = 1 / 4096 "
         "from the host: one number per row, in every thread", LIGHT[2]),
        ("5. from registers", "y[v * 8 + j] = cached[k][j] * rstd * weight[k][j], rounded to "
         "bfloat16 once; one STG.E.128 per vector", REGS),
    ]
    y = 5.6
    for head, text, face in steps:
        box(ax, x0, y, 6.0, 1.1, head, face=face, fontsize=7.5)
        label(ax, x0 + 6.3, y + 0.55, text, 7)
        y += 1.6
    arrow(ax, (x0 + 3.0, 6.75), (x0 + 3.0, 7.15))
    arrow(ax, (x0 + 3.0, 8.35), (x0 + 3.0, 8.75))
    arrow(ax, (x0 + 3.0, 9.95), (x0 + 3.0, 10.35))
    arrow(ax, (x0 + 3.0, 11.55), (x0 + 3.0, 11.95))
    label(ax, x0, y + 0.3, "x is read from DRAM once and y written once: rows x hidden x 2 "
          "bytes each way, the bytes the benchmark counts (plus w once).", 7.5)
    # the row classes
    ty = y + 1.3
    rows = [("vectors per row", "threads per row", "rows per block", "V (vectors/thread)"),
            ("<= 128", "32 (one warp)", "4", "1, 2, 4"),
            ("<= 1024", "256", "1", "1, 2, 4"),
            ("more", "1024", "1", "2, 4 (8, 16: scalar)")]
    widths = [5.0, 5.0, 4.2, 6.2]
    for r, row in enumerate(rows):
        x = x0
        for c, text in enumerate(row):
            hot = r == 2
            cell(ax, x, ty + r * 0.85, text,
                 "#EEEEEE" if r == 0 else (HILITE_LIGHT if hot else "white"), widths[c], 0.85,
                 7, weight="bold" if r == 0 else "normal")
            x += widths[c]
    label(ax, x0 + sum(widths) + 0.4, ty + 1.3, "the launcher's row split (at most 4 vectors,",
          7)
    label(ax, x0 + sum(widths) + 0.4, ty + 1.95, "64 bytes, per thread); this row: 512 vectors",
          7)
    label(ax, x0 + sum(widths) + 0.4, ty + 2.6, "-> 256 threads, V = 2 (shaded)", 7)
    return fig


HILITE_LIGHT = LIGHT[4]
