"""Day 7's concept diagrams: copies and compute over time (synchronous tiles, a double buffer, a
ring of four cp.async stages), the shared-memory ring itself, and one stage's mbarrier phases.

The schedules follow the solution (solutions/d07_async_pipelines/kernel.cu): gemv_1_sync loads,
waits and computes; gemv_2_double_buffer issues tile t + 1, then waits with wait_group 1;
gemv_3_multistage issues tiles 0 .. kStages - 2 in its prologue and, in iteration t, waits with
wait_group kStages - 2, passes the barrier, issues tile t + kStages - 1 into the stage of tile
t - 1 and computes tile t. The times are schematic (a copy takes 3 units from issue to landing,
a tile's compute 1): the order of events is exact, the durations are not measurements.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from . import diagram
from .draw import EDGE, LIGHT, PALETTE, arrow, box, canvas, cell, label

COPY = LIGHT[1]        # light orange: a copy in flight
COPY_EDGE = PALETTE[1]
LANDED = "#E6E6E6"     # landed, waiting to be computed
COMPUTE = PALETTE[0]   # blue: the block computes on the stage
LATENCY = 3.0          # schematic: issue to landing
WORK = 1.0             # schematic: computing one tile
TILES = 6


def _sync_schedule() -> List[Tuple[int, float, float, float]]:
    """(tile, issue, landed, compute start) for load, barrier, compute, barrier."""
    out, t0 = [], 0.0
    for k in range(TILES):
        out.append((k, t0, t0 + LATENCY, t0 + LATENCY))
        t0 += LATENCY + WORK
    return out


def _ring_schedule(stages: int) -> List[Tuple[int, float, float, float]]:
    """The same for a ring of `stages` (2: the double buffer, whose refill comes at the top of
    the next iteration; more: the multistage loop, refill right after the barrier)."""
    issue: Dict[int, float] = {k: 0.0 for k in range(stages - 1)}
    start: Dict[int, float] = {}
    end_prev = 0.0
    for t in range(TILES):
        if stages == 2 and t + 1 < TILES:
            issue[t + 1] = end_prev  # issued before the wait, after the previous compute
        start[t] = max(issue[t] + LATENCY, end_prev)
        if stages > 2 and t + stages - 1 < TILES:
            issue[t + stages - 1] = start[t]  # after the wait and the barrier
        end_prev = start[t] + WORK
    return [(k, issue[k], issue[k] + LATENCY, start[k]) for k in range(TILES)]


def _timeline(ax, y: float, x0: float, scale: float, stages: int,
              sched: List[Tuple[int, float, float, float]], t_end: float) -> None:
    for s in range(stages):
        label(ax, x0 - 0.2, y + s * 0.95 + 0.38, f"stage {s}" if stages > 1 else "the tile",
              7, ha="right")
        ax.plot([x0, x0 + t_end * scale], [y + s * 0.95 + 0.8] * 2, color="#DDDDDD", lw=0.5)
    for k, issue, landed, start in sched:
        s = k % stages
        yy = y + s * 0.95
        ax.add_patch(Rectangle((x0 + issue * scale, yy), (landed - issue) * scale, 0.75,
                               facecolor=COPY, edgecolor=COPY_EDGE, linewidth=0.6, hatch="///"))
        ax.text(x0 + (issue + landed) / 2 * scale, yy + 0.38, f"copy {k}", ha="center",
                va="center", fontsize=6.3,
                bbox=dict(facecolor=COPY, edgecolor="none", pad=0.4))
        if start > landed:
            cell(ax, x0 + landed * scale, yy, "", LANDED, (start - landed) * scale, 0.75,
                 lw=0.4)
        cell(ax, x0 + start * scale, yy, f"tile {k}", COMPUTE, WORK * scale, 0.75, 6.3,
             color="white")


@diagram("d07_pipeline_timeline")
def pipeline_timeline() -> Figure:
    """Synchronous tiles, a double buffer and a 4-stage ring on one time axis."""
    scale = 1.05
    x0 = 4.2
    sync = _sync_schedule()
    double = _ring_schedule(2)
    ring = _ring_schedule(4)
    t_end = 24.0
    fig, ax = canvas(x0 + t_end * scale + 0.6, 18.4, title="Day 7: copies in flight while the "
                     "block computes (schematic times: a copy takes 3 units, a tile's compute 1)")
    y = 1.0
    label(ax, 0, y, "(a) gemv_1_sync: load, __syncthreads(), compute, __syncthreads(): nothing "
          "overlaps inside the block", 7.5, weight="bold")
    _timeline(ax, y + 0.5, x0, scale, 1, sync, t_end)
    y = 3.4
    label(ax, 0, y, "(b) gemv_2_double_buffer: tile t + 1 is copied while tile t is computed; "
          "wait_group 1", 7.5, weight="bold")
    _timeline(ax, y + 0.5, x0, scale, 2, double, t_end)
    y = 6.8
    label(ax, 0, y, "(c) gemv_3_multistage, kStages = 4: tiles t + 1, t + 2, t + 3 in flight "
          "while tile t is computed; wait_group 2", 7.5, weight="bold")
    _timeline(ax, y + 0.5, x0, scale, 4, ring, t_end)
    # annotate one iteration of (c): t = 2
    k, issue, landed, start = ring[2]
    xs = x0 + start * scale
    ax.plot([xs, xs], [y + 0.4, y + 0.5 + 4 * 0.95 + 0.2], color=PALETTE[4], lw=1.0)
    label(ax, xs + 0.15, y + 0.5 + 4 * 0.95 + 0.55, "iteration 2: wait_group 2 (groups 0-2 "
          "complete: tile 2 is here), __syncthreads(),", 7, color=PALETTE[4])
    label(ax, xs + 0.15, y + 0.5 + 4 * 0.95 + 1.2, "then copy 5 into stage 1 (tile 1's, "
          "done by every warp) and compute tile 2", 7, color=PALETTE[4])
    # time axis
    ya = 14.0
    arrow(ax, (x0, ya), (x0 + t_end * scale, ya))
    for tt in range(0, int(t_end) + 1, 2):
        ax.plot([x0 + tt * scale] * 2, [ya - 0.12, ya + 0.12], color=EDGE, lw=0.6)
        label(ax, x0 + tt * scale, ya + 0.45, str(tt), 6.5, ha="center")
    label(ax, x0 + t_end * scale, ya - 0.5, "time", 7, ha="right")
    label(ax, x0, 15.3, f"{TILES} tiles end at t = {sync[-1][3] + WORK:g} (a), "
          f"{double[-1][3] + WORK:g} (b) and {ring[-1][3] + WORK:g} (c). With 4 stages the "
          "block computes back to back once 3 copies cover a copy's latency:", 7.5)
    label(ax, x0, 16.0, "(kStages - 1) x compute >= latency. Each thread commits one group per "
          "tile (group j = tile j), empty or not, so wait_group counts tiles.", 7.5)
    items = [(COPY, "copy in flight (issued, not landed)"), (LANDED, "landed, waiting its turn"),
             (COMPUTE, "the block computes on the stage")]
    for i, (face, text) in enumerate(items):
        xx = x0 + i * 9.0
        ax.add_patch(Rectangle((xx, 17.0), 0.8, 0.8, facecolor=face, edgecolor=EDGE,
                               linewidth=0.6, hatch="///" if face == COPY else None))
        label(ax, xx + 1.1, 17.4, text, 7)
    return fig


@diagram("d07_smem_ring")
def smem_ring() -> Figure:
    """The four stages of gemv_3_multistage at iteration t = 5, and what one stage holds."""
    fig, ax = canvas(34.0, 15.8, title="Day 7: the shared-memory ring of gemv_3_multistage "
                     "(4 stages, batch 1), at iteration t = 5")
    sw, sh = 6.6, 4.6
    x0, y0 = 1.5, 1.2
    state = [("stage 0", "tile 4 was computed here;", "after the barrier: copy 8", COPY),
             ("stage 1", "tile 5: landed", "computing now", LIGHT[0]),
             ("stage 2", "tile 6: in flight", "(or landed)", COPY),
             ("stage 3", "tile 7: in flight", "", COPY)]
    for s, (name, l1, l2, face) in enumerate(state):
        x = x0 + s * (sw + 1.3)
        box(ax, x, y0, sw, sh, "", face=face, lw=1.2 if s == 1 else 0.8)
        label(ax, x + sw / 2, y0 + 0.6, name, 8, ha="center", weight="bold")
        label(ax, x + sw / 2, y0 + 1.6, l1, 7, ha="center")
        label(ax, x + sw / 2, y0 + 2.3, l2, 7, ha="center")
        label(ax, x + sw / 2, y0 + 3.5, "8 W rows + 1 x row", 6.8, ha="center")
        label(ax, x + sw / 2, y0 + 4.1, "x 1 KiB = 9 KiB", 6.8, ha="center")
    for s in range(3):
        x = x0 + s * (sw + 1.3) + sw
        arrow(ax, (x + 0.1, y0 + sh / 2), (x + 1.2, y0 + sh / 2))
    arrow(ax, (x0 + 3 * (sw + 1.3) + sw / 2, y0 + sh + 0.15),
          (x0 + sw / 2, y0 + sh + 0.15), rad=-0.16, color=EDGE)
    label(ax, x0 + 2 * (sw + 1.3) - 0.65, y0 + sh + 2.3, "the ring wraps: tile t lives in "
          "stage t % 4", 7, ha="center")
    label(ax, x0 + (sw + 1.3) + sw / 2, y0 - 0.55, "read_stage", 7, ha="center",
          color=PALETTE[0], weight="bold")
    label(ax, x0 + sw / 2, y0 - 0.55, "write_stage", 7, ha="center", color=PALETTE[4],
          weight="bold")
    # one stage's layout
    y1 = 9.0
    label(ax, x0, y1, "One stage (stage_elems = (8 + batch) x 512 bfloat16): the 8 row "
          "segments of W, then the batch segments of x; each segment is 64 chunks of 16 bytes",
          7.5, weight="bold")
    cw = 0.37
    for r in range(9):
        y = y1 + 0.6 + r * 0.62
        name = f"W row 8b + {r}" if r < 8 else "x row 0"
        label(ax, x0 + 3.6, y + 0.27, name, 6.8, ha="right")
        for c in range(64):
            face = LIGHT[r % 2 * 2] if r < 8 else LIGHT[3]
            if r == 3 and c in (5, 37):
                face = PALETTE[4]
            cell(ax, x0 + 3.8 + c * cw, y, "", face, cw, 0.55, lw=0.3)
    label(ax, x0 + 3.8 + 64 * cw + 0.3, y1 + 0.9, "warp w reads W row w;", 7)
    label(ax, x0 + 3.8 + 64 * cw + 0.3, y1 + 1.55, "lane l: chunks l and l + 32", 7)
    label(ax, x0 + 3.8 + 64 * cw + 0.3, y1 + 2.2, "(marked: warp 3, lane 5)", 7,
          color=PALETTE[4])
    label(ax, x0 + 3.8 + 64 * cw + 0.3, y1 + 3.3, "every warp reads all of x:", 7)
    label(ax, x0 + 3.8 + 64 * cw + 0.3, y1 + 3.95, "W is used once, x 8 times", 7)
    return fig


@diagram("d07_mbarrier_phases")
def mbarrier_phases() -> Figure:
    """One stage's mbarrier (full[s]) over two uses in gemv_4_bulk, batch 1."""
    fig, ax = canvas(36.0, 13.4, title="Day 7: one stage's mbarrier in gemv_4_bulk: arrivals, "
                     "transaction bytes and the phase parity (batch 1: 9 bulk copies of 1 KiB)")
    x0 = 6.2
    # event columns (x positions) for two uses of the stage
    ev = [
        (0.0, "mbarrier.init\n(count 1)", 1, 0),
        (2.0, "thread 0:\narrive.expect_tx\n(9216 bytes)", 0, 9216),
        (4.2, "3 copies\nlanded", 0, 6144),
        (6.2, "8 copies\nlanded", 0, 1024),
        (8.2, "9th copy: tx = 0,\nphase 0 completes:\nwaits on parity 0\nreturn", 1, 0),
        (12.6, "after the use +\n__syncthreads():\narrive.expect_tx", 0, 9216),
        (16.4, "9 copies landed:\nphase 1\ncompletes", 1, 0),
    ]
    scale = 1.3
    yp, yt = 5.0, 7.9
    label(ax, x0 - 0.3, yp - 0.6, "pending", 7.5, ha="right")
    label(ax, x0 - 0.3, yp, "arrivals", 7.5, ha="right")
    label(ax, x0 - 0.3, yt - 0.9, "bytes still", 7.5, ha="right")
    label(ax, x0 - 0.3, yt - 0.3, "expected (tx)", 7.5, ha="right")
    # step lines: arrivals (0 or 1), tx (0 .. 9216) drawn downwards in canvas y
    t_end = 20.0
    xs, arr, tx = [], [], []
    for t, _, a, b in ev:
        xs.append(t)
        arr.append(a)
        tx.append(b)
    xs.append(t_end)
    arr.append(arr[-1])
    tx.append(tx[-1])
    for i in range(len(ev)):
        xa, xb = x0 + xs[i] * scale, x0 + xs[i + 1] * scale
        ya = yp + 0.3 - arr[i] * 1.0
        ax.plot([xa, xb], [ya, ya], color=PALETTE[0], lw=1.6)
        if i + 1 < len(ev):
            ax.plot([xb, xb], [ya, yp + 0.3 - arr[i + 1] * 1.0], color=PALETTE[0], lw=1.6)
        yb = yt + 0.3 - tx[i] / 9216 * 2.0
        ax.plot([xa, xb], [yb, yb], color=PALETTE[4], lw=1.6)
        if i + 1 < len(ev):
            ax.plot([xb, xb], [yb, yt + 0.3 - tx[i + 1] / 9216 * 2.0], color=PALETTE[4], lw=1.6)
    label(ax, x0 + t_end * scale + 0.2, yp - 0.7, "1", 6.5)
    label(ax, x0 + t_end * scale + 0.2, yp + 0.3, "0", 6.5)
    label(ax, x0 + t_end * scale + 0.2, yt - 1.7, "9216", 6.5)
    label(ax, x0 + t_end * scale + 0.2, yt + 0.3, "0", 6.5)
    for t, text, _, _ in ev:
        xx = x0 + t * scale
        ax.plot([xx, xx], [3.2, 9.4], color="#BBBBBB", lw=0.5, linestyle=":")
        ax.text(xx, 1.0, text, ha="center", va="top", fontsize=6.3)
    # phases
    yph = 9.4
    label(ax, x0 - 0.3, yph + 0.4, "phase (parity)", 7.5, ha="right")
    cell(ax, x0, yph, "phase 0 (parity 0): tile t = s", LIGHT[0], 8.2 * scale, 0.8, 7)
    cell(ax, x0 + 8.2 * scale, yph, "phase 1 (parity 1): tile s + 4", LIGHT[2],
         (16.4 - 8.2) * scale, 0.8, 7)
    cell(ax, x0 + 16.4 * scale, yph, "phase 2 (parity 0)", LIGHT[0], (t_end - 16.4) * scale, 0.8,
         7)
    label(ax, x0, 11.0, "Every thread waits with mbarrier.try_wait.parity(full[s], (t / 4) % 2): "
          "the k-th use of the stage completes phase k. A phase completes when both counts "
          "reach 0.", 7.5)
    label(ax, x0, 11.7, "Expect 16 bytes too many and the tx count never reaches 0 (the "
          "bounded wait reports it); expect too few and phase 0 completes with a copy still "
          "landing.", 7.5)
    label(ax, x0, 12.4, "9216 = stage_tx_bytes(8 rows, batch 1, 64 chunks) = (8 + 1) x 64 x 16.",
          7.5)
    return fig
