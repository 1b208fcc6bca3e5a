"""Day 1's diagrams: the thread hierarchy of a 1-D launch (a grid of blocks, a block of warps, a
warp of 32 lanes, and the global index one thread computes), the bracketed timing of the
benchmark harness on a host and a GPU timeline, and wave quantization on the H100's 132 SMs.

The launch is the lesson's vector add: blocks of kBlockThreads = 256 threads
(solutions/d01_first_kernels/kernel.cu), i = blockIdx.x * blockDim.x + threadIdx.x. The timing
is course::bench::BracketedTimer (common/src/bench.cpp): flush(1), start, flush(0), mid, work,
flush(1), stop. No time in these pictures is a measurement: they are not to scale.
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Polygon, Rectangle

from . import diagram
from .draw import EDGE, LIGHT, PALETTE, arrow, box, canvas, cell, label

THREADS = 256
WARP = 32
HOT = "#E69F00"


def _fan(ax, x_from: float, w_from: float, y_from: float, x_to: float, w_to: float,
         y_to: float) -> None:
    """A light trapezoid from a box's bottom edge to the row that expands it."""
    ax.add_patch(Polygon([(x_from, y_from), (x_from + w_from, y_from), (x_to + w_to, y_to),
                          (x_to, y_to)], closed=True, facecolor="#FBE6C2", edgecolor="none",
                         alpha=0.55, zorder=0))


@diagram("d01_thread_hierarchy")
def thread_hierarchy() -> Figure:
    """Grid -> block -> warp -> lane, and the element one thread owns."""
    block, thread = 2, 37
    warp, lane = thread // WARP, thread % WARP
    i = block * THREADS + thread
    fig, ax = canvas(45.5, 17.6, inches_per_unit=0.25,
                     title="A 1-D launch: grid, block, warp, lane, and the element thread "
                           f"{thread} of block {block} owns")
    x0 = 7.0
    # The grid: blocks.
    label(ax, x0 - 0.3, 1.9, "grid", 8, ha="right", weight="bold")
    label(ax, x0 - 0.3, 2.55, "gridDim.x blocks", 6.5, ha="right", color="#555555")
    bw = 4.0
    names = ["block 0", "block 1", "block 2", "block 3", "block 4", "...", "last block"]
    for k, name in enumerate(names):
        face = HOT if k == block else ("white" if name == "..." else LIGHT[0])
        box(ax, x0 + k * (bw + 0.4), 1.4, bw, 1.6, name, face, fontsize=7.5,
            lw=0.4 if name == "..." else 0.8)
    label(ax, x0 + 7 * (bw + 0.4) - 0.2, 3.5, "blocks run on any SM, in any order, and cannot "
          "wait for each other", 6.6, ha="right", color="#555555")
    # One block: 8 warps of 32 threads.
    yb = 5.6
    bx = x0 + block * (bw + 0.4)
    ww = 4.0
    _fan(ax, bx, bw, 3.0, x0, 8 * ww, yb)
    label(ax, x0 - 0.3, yb + 0.5, f"block {block}", 8, ha="right", weight="bold")
    label(ax, x0 - 0.3, yb + 1.15, f"blockDim.x = {THREADS}", 6.5, ha="right", color="#555555")
    for w in range(THREADS // WARP):
        box(ax, x0 + w * ww, yb, ww, 1.6, f"warp {w}\nthreads {WARP * w}-{WARP * w + WARP - 1}",
            HOT if w == warp else LIGHT[2], fontsize=6.8)
    label(ax, x0 + 8 * ww + 0.4, yb + 0.5, "one SM; shared memory", 6.6, color="#555555")
    label(ax, x0 + 8 * ww + 0.4, yb + 1.15, "and __syncthreads()", 6.6, color="#555555")
    # One warp: 32 lanes.
    yw = 9.6
    _fan(ax, x0 + warp * ww, ww, yb + 1.6, x0, 32, yw)
    label(ax, x0 - 0.3, yw + 0.5, f"warp {warp}", 8, ha="right", weight="bold")
    for ln in range(WARP):
        cell(ax, x0 + ln, yw, f"{ln}", HOT if ln == lane else LIGHT[5], fontsize=6.2)
        label(ax, x0 + ln + 0.5, yw + 1.45, f"{WARP * warp + ln}", 5.6, ha="center",
              color="#555555")
    label(ax, x0 - 0.3, yw + 1.45, "threadIdx.x", 6.2, ha="right", color="#555555")
    label(ax, x0 + 32.4, yw + 0.5, "one instruction", 6.6, color="#555555")
    label(ax, x0 + 32.4, yw + 1.15, "for all 32 lanes", 6.6, color="#555555")
    # The global index and the array.
    ya = 12.4
    label(ax, x0, 15.9, f"i = blockIdx.x * blockDim.x + threadIdx.x = {block} * {THREADS} + "
          f"{thread} = {i}     (warp = threadIdx.x / 32 = {warp}, lane = threadIdx.x % 32 = "
          f"{lane})", 8, weight="bold")
    label(ax, x0 - 0.3, ya + 0.5, "array", 8, ha="right", weight="bold")
    label(ax, x0 - 0.3, ya + 1.15, "element i", 6.5, ha="right", color="#555555")
    segs = [("0 .. 255", "block 0", LIGHT[0]), ("256 .. 511", "block 1", LIGHT[0]),
            (f"{2 * THREADS} .. {i - 1}", "", LIGHT[1]), (f"{i}", "", HOT),
            (f"{i + 1} .. {3 * THREADS - 1}", "", LIGHT[1]), ("768 ..", "block 3, ...",
                                                               LIGHT[0])]
    widths = [5.0, 5.0, 7.5, 2.0, 7.5, 5.0]
    x = x0
    for (text, owner, face), wdt in zip(segs, widths):
        box(ax, x, ya, wdt, 1.2, text, face, fontsize=6.8)
        if owner:
            label(ax, x + wdt / 2, ya + 1.65, owner, 6.5, ha="center", color="#555555")
        x += wdt
    label(ax, x0 + 10.0 + (7.5 + 2.0 + 7.5) / 2, ya + 1.65, f"block {block}: elements "
          f"{2 * THREADS} .. {3 * THREADS - 1}, one per thread", 6.5, ha="center",
          color="#555555")
    arrow(ax, (x0 + lane + 0.5, yw + 1.75), (x0 + 10.0 + 7.5 + 1.0, ya - 0.05), color=HOT, lw=1.2)
    label(ax, x0, 16.9, "Consecutive threads own consecutive elements: the 32 loads of a warp "
          "are 128 contiguous bytes (Day 2). The last block's threads past n do nothing "
          "(the bounds test).", 6.8)
    return fig


@diagram("d01_bracketed_timing")
def bracketed_timing() -> Figure:
    """What the host does and what the GPU does during one timed iteration of the harness."""
    fig, ax = canvas(44.0, 12.6, inches_per_unit=0.25,
                     title="One timed iteration of course::bench::measure: the host queues, the "
                           "GPU runs (not to scale)")
    x0 = 6.0
    yh, yg = 2.0, 6.4
    label(ax, x0 - 0.3, yh + 0.7, "host thread", 8, ha="right", weight="bold")
    label(ax, x0 - 0.3, yg + 0.7, "GPU stream", 8, ha="right", weight="bold")
    ax.plot([x0, x0 + 37], [yh + 1.4, yh + 1.4], color="#BBBBBB", lw=0.6)
    ax.plot([x0, x0 + 37], [yg + 1.4, yg + 1.4], color="#BBBBBB", lw=0.6)
    # Host: seven calls that each return at once, then the wait.
    calls = ["flush\n(B)", "rec.\nstart", "flush\n(A)", "rec.\nmid", "work()", "flush\n(B)",
             "rec.\nstop"]
    for k, text in enumerate(calls):
        box(ax, x0 + 1.55 * k, yh, 1.4, 1.4, text, LIGHT[5] if text != "work()" else HOT,
            fontsize=5.6)
    box(ax, x0 + 11.0, yh, 26.0, 1.4, "cudaEventSynchronize(stop): the host waits", "#F4F4F4",
        fontsize=7.2)
    # GPU: the same work, in stream order, when the GPU gets to it.
    segs = [("flush(B): reads 2 x L2\n(100 MiB)", 7.0, LIGHT[0]),
            ("flush(A): reads 2 x L2\n(100 MiB)", 7.0, LIGHT[2]),
            ("work", 9.0, HOT), ("flush(B) + the work's\ndirty lines written back", 9.0,
                                 LIGHT[0])]
    x = x0 + 1.2
    marks = {}
    for k, (text, wdt, face) in enumerate(segs):
        box(ax, x, yg, wdt, 1.4, text, face, fontsize=6.8)
        if k == 0:
            marks["start"] = x + wdt
        if k == 1:
            marks["mid"] = x + wdt
        x += wdt
    marks["stop"] = x
    for name, xm in marks.items():
        ax.plot([xm, xm], [yg - 0.6, yg + 2.0], color=PALETTE[4], lw=1.6)
        label(ax, xm, yg - 0.95, name, 7.2, ha="center", color=PALETTE[4], weight="bold")
    # Arrows from the host's calls to the GPU's work they queued.
    for k, xg in ((0, x0 + 1.2 + 3.5), (2, x0 + 8.2 + 3.5), (4, x0 + 15.2 + 4.5),
                  (5, x0 + 24.2 + 4.5)):
        arrow(ax, (x0 + 1.55 * k + 0.7, yh + 1.45), (xg, yg - 0.05), color="#999999", lw=0.7)
    # The two intervals and the result.
    yb = yg + 2.6
    for a, b, text in ((marks["start"], marks["mid"], "mid - start: one flush alone"),
                       (marks["mid"], marks["stop"], "stop - mid: the work, then the same "
                                                     "flush, which also writes back what the "
                                                     "work left dirty")):
        ax.annotate("", xy=(a, yb), xytext=(b, yb),
                    arrowprops=dict(arrowstyle="<->", color=EDGE, lw=0.8))
        label(ax, (a + b) / 2, yb + 0.55, text, 6.6, ha="center")
    label(ax, x0, yb + 1.9, "time = (stop - mid) - (mid - start): the work, with its own "
          "write-backs and nobody else's (lesson §5.5). The first flush, untimed, leaves a "
          "cold and clean L2.", 7.3, weight="bold")
    label(ax, x0, yb + 2.9, "A host clock read right after the host's work() returns stops "
          "at the left of the figure: it times the launch, not the kernel (§5.1).", 7.0)
    return fig


@diagram("d01_waves")
def waves() -> Figure:
    """Wave quantization: 132 and 133 one-SM blocks on an H100's 132 SMs."""
    sms = 132
    fig, ax = canvas(44.0, 10.6, inches_per_unit=0.25,
                     title="Blocks that fill an SM each, on 132 SMs: 132 blocks take one wave, "
                           "133 take two")
    x0 = 6.0
    cw = 36.0 / sms   # one column per SM
    for blocks, y in ((132, 1.6), (133, 5.6)):
        label(ax, x0 - 0.3, y + 1.0, f"{blocks} blocks", 8, ha="right", weight="bold")
        for wave in range(2):
            yy = y + wave * 1.1
            label(ax, x0 + 36.3, yy + 0.5, f"wave {wave + 1}", 6.6)
            for sm in range(sms):
                k = wave * sms + sm
                face = (LIGHT[0] if wave == 0 else HOT) if k < blocks else "white"
                ax.add_patch(Rectangle((x0 + sm * cw, yy), cw, 1.0, facecolor=face,
                                       edgecolor="#777777", linewidth=0.25))
        used = blocks / (sms * ((blocks + sms - 1) // sms))
        label(ax, x0 + 18, y + 2.55, f"{(blocks + sms - 1) // sms} x T: {100 * used:.1f}% of the "
              "SMs' time does work", 6.9, ha="center")
    label(ax, x0, 9.5, "One column per SM (132 on an H100 SXM5). Each block takes time T; the "
          "133rd runs alone while 131 SMs wait (lesson §1.5).", 6.9)
    return fig
