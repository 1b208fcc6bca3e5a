"""Day 12's diagrams: the causal tile grid a block walks, the online softmax of one row, the S
accumulators that are already P V's A operand, and the Hopper kernel's producer and consumers.

Every map is the one solutions/d12_prefill_attention/kernel.cu implements: tile_range (a block of
kBlockM = 128 query rows visits key tiles 0 .. tiles - 1 of kBlockN = 64, the mask from
first_masked on), the online softmax of TODO d12.4a, the PTX ISA's fragments of
mma.sync.m16n8k16 (C: rows g, g + 8, columns 2t, 2t + 1; A: registers 0-3 = (g, 2t), (g + 8, 2t),
(g, 2t + 8), (g + 8, 2t + 8), two 16-bit elements each; g = lane / 4, t = lane % 4) and
prefill_1_mma_kernel's pack2 of s_acc into a[], and prefill_2_wgmma_kernel's roles, stages,
mbarriers and named barriers.
"""

from __future__ import annotations

import math
from typing import List, Tuple

from matplotlib.figure import Figure
from matplotlib.patches import Polygon, Rectangle

from . import diagram
from .draw import EDGE, LIGHT, MUTED, PALETTE, arrow, box, canvas, cell, label, legend_cells

BLOCK_M, BLOCK_N = 128, 64


def tile_range(q0: int, len_q: int, len_kv: int, causal: bool) -> Tuple[int, int]:
    """(tiles, first_masked) of the block whose first row is q0: the kernel's tile_range."""
    offset = len_kv - len_q
    last_row = min(q0 + BLOCK_M, len_q) - 1
    end = len_kv
    if causal and last_row + offset + 1 < end:
        end = last_row + offset + 1
    tiles = (end + BLOCK_N - 1) // BLOCK_N if end > 0 else 0
    first = len_kv // BLOCK_N
    if causal:
        first_row_end = q0 + offset + 1
        diagonal = first_row_end // BLOCK_N if first_row_end > 0 else 0
        first = min(first, diagonal)
    return tiles, min(first, tiles)


def _above_diagonal(k0: float, k1: float, r0: float, r1: float) -> List[Tuple[float, float]]:
    """The part of the rectangle keys [k0, k1] x rows [r0, r1] where key > row, as a polygon
    (the rectangle clipped by the half-plane key - row > 0)."""
    corners = [(k0, r0), (k1, r0), (k1, r1), (k0, r1)]
    out = []
    for i, (a, b) in enumerate(zip(corners, corners[1:] + corners[:1])):
        da, db = a[0] - a[1], b[0] - b[1]
        if da > 0:
            out.append(a)
        if (da > 0) != (db > 0):
            f = da / (da - db)
            out.append((a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1])))
    return out


@diagram("d12_causal_tiles")
def causal_tiles() -> Figure:
    """S = Q K^T in (query tile, key tile) blocks under the causal mask, L = 1024."""
    length = 1024
    q_tiles, k_tiles = length // BLOCK_M, length // BLOCK_N
    fig, ax = canvas(40, 22.0, inches_per_unit=0.27,
                     title="S = Q K\u1d40 for one head, L = 1024, causal: blocks of 128 query rows "
                           "walk key tiles of 64")
    x0, y0, w, h = 7.0, 2.6, 1.0, 2.0  # a key tile is 64 keys wide, a query tile 128 rows tall
    full, masked, skipped = LIGHT[0], LIGHT[1], "#F2F2F2"
    counts: List[Tuple[int, int]] = []
    for z in range(q_tiles):
        tiles, first_masked = tile_range(BLOCK_M * z, length, length, True)
        counts.append((tiles, first_masked))
        for j in range(k_tiles):
            x, y = x0 + j * w, y0 + z * h
            if j >= tiles:
                ax.add_patch(Rectangle((x, y), w, h, facecolor=skipped, edgecolor=MUTED,
                                       linewidth=0.5, hatch="////"))
            elif j >= first_masked:
                cell(ax, x, y, "", masked, w, h)
                # The part above the diagonal (key > row) inside the tile: set to -inf.
                r0, r1 = BLOCK_M * z, BLOCK_M * (z + 1)
                k0, k1 = BLOCK_N * j, BLOCK_N * (j + 1)

                poly = [(x0 + k / BLOCK_N * w, y0 + r / BLOCK_M * h)
                        for k, r in _above_diagonal(k0, k1, r0, r1)]
                ax.add_patch(Polygon(poly, closed=True, facecolor="white", edgecolor="#666666",
                                     linewidth=0.0, hatch="xx"))
                ax.add_patch(Rectangle((x, y), w, h, fill=False, edgecolor=EDGE, linewidth=0.6))
            else:
                cell(ax, x, y, "", full, w, h)
    ax.plot([x0, x0 + k_tiles * w], [y0, y0 + q_tiles * h], color="black", lw=1.2)
    for j in range(k_tiles):
        label(ax, x0 + (j + 0.5) * w, y0 - 0.4, str(j), 6.5, ha="center")
    label(ax, x0 + k_tiles * w / 2, y0 - 1.25, "key tile j (keys 64j .. 64j + 63)", 7.5,
          ha="center")
    for z in range(q_tiles):
        label(ax, x0 - 0.2, y0 + (z + 0.5) * h, f"z = {z}", 7.0, ha="right")
        tiles, first_masked = counts[z]
        label(ax, x0 + k_tiles * w + 0.4, y0 + (z + 0.5) * h,
              f"rank {q_tiles - 1 - z}: {first_masked} full + {tiles - first_masked} masked, "
              f"{k_tiles - tiles} skipped", 6.8)
    label(ax, x0 - 1.9, y0 + q_tiles * h / 2, "query tile z\n(rows 128z ..\n128z + 127)", 7.0,
          ha="right")
    label(ax, x0 + k_tiles * w + 0.4, y0 - 0.6, "rank = launch order (rank 0 first: "
          "longest first)", 6.8, color="#555555")
    # The walk of one block.
    z = 5
    tiles, _ = counts[z]
    yw = y0 + (z + 0.5) * h
    arrow(ax, (x0 + 0.1, yw), (x0 + tiles * w - 0.1, yw), color=PALETTE[4], lw=1.6)
    ax.text(x0 + 0.2, yw - 0.55, "block z = 5: key tiles 0 \u2192 11, one at a time",
            fontsize=6.8, color=PALETTE[4], weight="bold", va="center",
            bbox=dict(facecolor="white", edgecolor="none", pad=0.8))
    yl = y0 + q_tiles * h + 0.8
    legend_cells(ax, x0, yl, [(full, "full: every row sees every key; no mask code"),
                              (masked, "masked (first_masked .. tiles \u2212 1): the hatched "
                                       "scores (key > row) become \u2212inf")],
                 fontsize=7.0, step=1.05)
    ax.add_patch(Rectangle((x0 + 20.0, yl), 0.8, 0.8, facecolor=skipped, edgecolor=MUTED,
                           linewidth=0.5, hatch="////"))
    label(ax, x0 + 21.1, yl + 0.4, "skipped: never loaded, never computed", 7.0)
    label(ax, x0 + 20.0, yl + 1.45, "black line: the diagonal key = row", 7.0)
    return fig


@diagram("d12_online_softmax")
def online_softmax() -> Figure:
    """One row's running (m, l, O) over three key tiles, checked against the softmax."""
    scores = [[1.0, 3.0, 2.0, 0.5], [2.5, 4.0, 1.0, 3.5], [0.0, 2.0, 3.0, 1.5]]
    values = [[1.0, -1.0, 2.0, 0.5], [0.0, 3.0, -2.0, 1.0], [2.0, 1.0, -1.0, 0.0]]
    fig, ax = canvas(36, 13.9, inches_per_unit=0.27,
                     title="The online softmax of one query row over three key tiles of 4 keys "
                           "(one dimension of V)")
    x0, y0, w, gap = 7.6, 2.4, 1.7, 2.6
    names = ["score s", "value v", "p = exp(s \u2212 m')"]
    for i, n in enumerate(names):
        label(ax, x0 - 0.2, y0 + 0.4 + 0.8 * i, n, 7.0, ha="right")
    rows = ["m' = max(m, rowmax(s))", "c = exp(m \u2212 m')", "l = c \u00b7 l + \u03a3 p",
            "O = c \u00b7 O + \u03a3 p \u00b7 v"]
    ys = y0 + 3.2
    for i, r in enumerate(rows):
        label(ax, x0 - 0.2, ys + 0.5 + i * 1.0, r, 7.0, ha="right")
    label(ax, x0 - 0.2, ys - 0.45, "start: m = \u2212inf, l = 0, O = 0", 7.0, ha="right",
          color="#555555")
    m, l, o = -math.inf, 0.0, 0.0
    tile_x = []
    for t, (ss, vv) in enumerate(zip(scores, values)):
        xt = x0 + t * (4 * w + gap)
        tile_x.append(xt)
        m_new = max(m, max(ss))
        c = math.exp(m - m_new) if m != -math.inf else 0.0
        p = [math.exp(sv - m_new) for sv in ss]
        l = c * l + sum(p)
        o = c * o + sum(pi * v for pi, v in zip(p, vv))
        m = m_new
        label(ax, xt + 2 * w, y0 - 0.55, f"key tile {t}", 7.5, ha="center", weight="bold")
        for i, (sv, v, pi) in enumerate(zip(ss, vv, p)):
            cell(ax, xt + i * w, y0, f"{sv:g}", LIGHT[t], w, 0.8, 7)
            cell(ax, xt + i * w, y0 + 0.8, f"{v:g}", "white", w, 0.8, 7)
            cell(ax, xt + i * w, y0 + 1.6, f"{pi:.4f}", "white", w, 0.8, 6.8)
        for i, text in enumerate([f"{m:.2f}", f"{c:.4f}" if t else "0 (m was \u2212inf)",
                                  f"{l:.4f}", f"{o:.4f}"]):
            cell(ax, xt, ys + i * 1.0, text, "white" if i == 1 and c == 1.0 else LIGHT[t],
                 4 * w, 1.0, 7.2)
        if t:
            for i in (2, 3):
                arrow(ax, (tile_x[t - 1] + 4 * w + 0.1, ys + i + 0.5), (xt - 0.1, ys + i + 0.5),
                      "\u00d7 c", fontsize=7.0)
    # The end, and the check against the plain softmax.
    flat_s = [v for ss in scores for v in ss]
    flat_v = [v for vv in values for v in vv]
    top = max(flat_s)
    ref_l = sum(math.exp(v - top) for v in flat_s)
    ref = sum(math.exp(sv - top) * v for sv, v in zip(flat_s, flat_v)) / ref_l
    assert abs(ref - o / l) < 1e-12
    yf = ys + 4.8
    label(ax, 0.3, yf, f"End: O / l = {o:.4f} / {l:.4f} = {o / l:.6f},   lse = m + log l = "
          f"{m:.2f} + log {l:.4f} = {m + math.log(l):.6f}.", 7.5, weight="bold")
    label(ax, 0.3, yf + 1.0, f"The softmax of all 12 scores at once, times v: {ref:.6f}; "
          f"log \u03a3 exp(s) = {top + math.log(ref_l):.6f}. The same, without the 12 scores "
          "ever being in one place.", 7.2)
    label(ax, 0.3, yf + 2.0, "c < 1 only where a tile raises the maximum (tile 1); tile 2 leaves "
          "it (c = 1), and the kernel skips the rescale of O when no row of the warp grew.", 7.2)
    label(ax, 0.3, yf + 3.0, "The kernel works in base 2: p = exp2(s \u00b7 scale \u00b7 log2 e "
          "\u2212 m \u00b7 scale \u00b7 log2 e), one FFMA and one MUFU.EX2 per score.", 7.2)
    return fig


def _c_owner(lane: int, e: int) -> Tuple[int, int]:
    g, t = lane // 4, lane % 4
    return g + 8 * (e // 2), 2 * t + e % 2


def _a_register(lane: int, reg: int) -> List[Tuple[int, int]]:
    """The two (row, column) elements of register reg (0-3) of A, m16n8k16 16-bit."""
    g, t = lane // 4, lane % 4
    row = g + 8 * (reg % 2)
    col = 2 * t + 8 * (reg // 2)
    return [(row, col), (row, col + 1)]


@diagram("d12_p_fragment")
def p_fragment() -> Figure:
    """S's accumulators of n8 tiles 2kk, 2kk + 1 are P V's A fragment of key step kk."""
    fig, ax = canvas(40.6, 22.0, inches_per_unit=0.27,
                     title="P never leaves the registers: the C fragments of S are, lane for "
                           "lane, the A fragment of P V")
    w = 0.95
    # Which A register each (row, key) of the 16 x 16 block lands in, and its lane.
    a_of = {}
    for lane in range(32):
        for reg in range(4):
            for rc in _a_register(lane, reg):
                assert rc not in a_of
                a_of[rc] = (lane, reg)
    c_of = {}
    for n8 in range(2):
        for lane in range(32):
            for e in range(4):
                r, c = _c_owner(lane, e)
                c_of[(r, c + 8 * n8)] = (lane, n8, e)
    assert len(a_of) == len(c_of) == 256
    for rc, (lane, n8, e) in c_of.items():  # the identity the kernel relies on
        assert a_of[rc] == (lane, 2 * n8 + e // 2), rc
    colors = [LIGHT[0], LIGHT[1], LIGHT[2], LIGHT[3]]

    marked = 5  # one lane's elements outlined in both panels

    def panel(x0: float, y0: float, title: str, sub: List[str]) -> None:
        for (r, c), (lane, reg) in a_of.items():
            cell(ax, x0 + c * w, y0 + r * w, str(lane), colors[reg], w, w, 6.0,
                 weight="bold" if lane == marked else "normal")
        for (r, c), (lane, reg) in a_of.items():
            if lane == marked:
                ax.add_patch(Rectangle((x0 + c * w, y0 + r * w), w, w, fill=False,
                                       edgecolor="black", linewidth=1.8))
        for c in range(16):
            label(ax, x0 + (c + 0.5) * w, y0 - 0.35, str(c), 6.0, ha="center")
        for r in range(16):
            label(ax, x0 - 0.15, y0 + (r + 0.5) * w, str(r), 6.0, ha="right")
        for k in (0, 8, 16):
            ax.plot([x0 + k * w, x0 + k * w], [y0, y0 + 16 * w], color=EDGE, lw=1.6)
            ax.plot([x0, x0 + 16 * w], [y0 + k * w, y0 + k * w], color=EDGE, lw=1.6)
        label(ax, x0 + 8 * w, y0 - 1.95, title, 7.8, ha="center", weight="bold")
        for i, s in enumerate(sub):
            label(ax, x0 + 8 * w, y0 - 1.15 + i * 0.0, s, 6.8, ha="center")

    xl, xr, y0 = 2.2, 24.6, 3.6
    panel(xl, y0, "S (float32 accumulators), n8 tiles 2kk | 2kk + 1",
          ["rows: the warp's m16 tile;  columns: keys 16kk + 0 .. 15"])
    panel(xr, y0, "A operand of O += P V, key step kk (bf16)",
          ["rows: the same m16 tile;  columns: k = keys 16kk + 0 .. 15"])
    arrow(ax, (xl + 16 * w + 0.4, y0 + 8 * w), (xr - 1.0, y0 + 8 * w), "pack2", fontsize=7.5,
          lw=1.4)
    yk = y0 + 16 * w + 0.8
    legend_cells(ax, xl, yk, [
        (colors[0], "c0, c1 of tile 2kk (row g, keys 2t, 2t+1) \u2192 register a[0]"),
        (colors[1], "c2, c3 of tile 2kk (row g + 8)  \u2192 a[1]"),
    ], fontsize=7.0, step=1.0)
    legend_cells(ax, xl + 21.5, yk, [
        (colors[2], "c0, c1 of tile 2kk + 1 (row g, keys 8 + 2t, 9 + 2t) \u2192 a[2]"),
        (colors[3], "c2, c3 of tile 2kk + 1 (row g + 8) \u2192 a[3]"),
    ], fontsize=7.0, step=1.0)
    lane = marked
    g, t = lane // 4, lane % 4
    label(ax, xl, yk + 2.5, f"Cell text: the lane that holds the element, in both. Lane {lane} "
          "(outlined) "
          f"(g = {g}, t = {t}) holds S({g}, {2 * t}..{2 * t + 1}), S({g + 8}, {2 * t}..{2 * t + 1})"
          f", S({g}, {2 * t + 8}..{2 * t + 9}), S({g + 8}, {2 * t + 8}..{2 * t + 9}) as four pairs"
          " of floats;", 7.0)
    label(ax, xl, yk + 3.4, "pack2 rounds each pair to one bf16x2 register, and those four "
          "registers are exactly the A fragment mma.sync wants: no shared memory, no shuffle.",
          7.0)
    return fig


def _pingpong_schedule(tiles: int = 4, product: float = 1.0, softmax: float = 1.5,
                       pack: float = 0.3) -> dict:
    """A schematic timeline of prefill_2_wgmma's loop, in made-up units (not measured): the
    order of events is the kernel's, the durations only illustrate (a product of 64 x 128 x 128
    per wgmma group: 1; one tile's softmax: 1.5; rescale and pack: 0.3).

    Consumer c issues its step t (S_t, then P_{t-1} V_{t-1}) once it has packed P_{t-1}, tile t
    has landed (full[t % 3]) and the other consumer has issued (named barrier); the Tensor Cores
    run the wgmma groups in the order issued; wait_group 1 lets the softmax of tile t start when
    S_t is done, wait_group 0 releases stage t - 1 (empty) when P_{t-1} V_{t-1} is done too."""
    out = {"tc": [], "issue": [], "soft": [], "pack": [], "load": [], "stage": []}
    land, issue_t, release = {}, {}, {}
    for t in range(min(3, tiles)):
        issue_t[t] = 0.4 + 0.3 * t
        land[t] = max(issue_t[t] + 1.2, land.get(t - 1, 0.0) + 0.5)
    ready = [0.0, 0.0]
    turn = [0.0, math.inf]
    tc_free = 0.0
    rel: dict = {}
    for t in range(tiles + 1):
        for c in (0, 1):
            if t >= 3 and t < tiles and t not in land:
                issue_t[t] = max(release[t - 3], issue_t[t - 1])
                land[t] = max(issue_t[t] + 1.2, land[t - 1] + 0.5)
            full = land[t] if t < tiles else 0.0
            begin_pack = max(ready[c], full)
            if t > 0:
                out["pack"].append((c, begin_pack, begin_pack + pack))
                begin_pack += pack
            start = max(begin_pack, turn[c])
            out["issue"].append((c, start))
            turn[1 - c] = start
            s_end = pv_end = None
            names = ([f"S{t}"] if t < tiles else []) + ([f"P{t - 1}V{t - 1}"] if t > 0 else [])
            for n in names:
                b = max(tc_free, start)
                tc_free = b + product
                out["tc"].append((c, b, tc_free, n))
                if n.startswith("S"):
                    s_end = tc_free
                else:
                    pv_end = tc_free
            if t < tiles:
                out["soft"].append((c, s_end, s_end + softmax, t))
                done = s_end + softmax if pv_end is None else max(s_end + softmax, pv_end)
            else:
                done = pv_end
            ready[c] = done
            if t > 0:
                rel.setdefault(t - 1, []).append(done)
                if len(rel[t - 1]) == 2:
                    release[t - 1] = max(rel[t - 1])
    for t in range(tiles):
        out["load"].append((t, issue_t[t], land[t]))
        out["stage"].append((t % 3, t, issue_t[t], land[t], release[t]))
    return out


@diagram("d12_hopper_pipeline")
def hopper_pipeline() -> Figure:
    """prefill_2_wgmma: the producer's TMA loads into 3 stages, two consumers taking turns."""
    tiles = 4
    sched = _pingpong_schedule(tiles)
    fig, ax = canvas(44, 20.0, inches_per_unit=0.27,
                     title="prefill_2_wgmma, schematic (order of events from the code; "
                           "durations illustrative): a producer, 3 stages, 2 consumers")
    x0, u, bh = 9.2, 1.55, 0.9
    rows = {"prod": 2.4, "st0": 4.2, "st1": 5.3, "st2": 6.4, "wg0": 8.6, "tc": 10.8,
            "wg1": 13.0}
    names = {"prod": "producer: warpgroup 0,\nthread 0 (TMA)", "st0": "stage 0",
             "st1": "stage 1", "st2": "stage 2", "wg0": "consumer 0\n(warpgroup 1, rows 0-63)",
             "tc": "Tensor Cores", "wg1": "consumer 1\n(warpgroup 2, rows 64-127)"}
    for k, y in rows.items():
        label(ax, x0 - 0.3, y + bh / 2, names[k], 7.0, ha="right")
    face = [LIGHT[0], LIGHT[1]]
    dark = [PALETTE[0], PALETTE[1]]

    def X(t: float) -> float:
        return x0 + t * u
    # Producer: one issue per tile (Q with tile 0), and the stage each tile occupies from its
    # issue to the release by all 8 consumer warps (empty), landed from `full` on.
    for t, issue, land in sched["load"]:
        box(ax, X(issue), rows["prod"], 0.3 * u, bh, "", face=EDGE, lw=0.4)
    first = sched["load"][0][1]
    label(ax, X(first), rows["prod"] - 0.35, "Q, K0 V0, K1 V1, K2 V2", 6.4)
    label(ax, X(sched["load"][3][1]), rows["prod"] - 0.35, "K3 V3", 6.4)
    for st, t, issue, land, release in sched["stage"]:
        y = rows[f"st{st}"]
        box(ax, X(issue), y, (land - issue) * u, bh, "", face="white", lw=0.5, style="--")
        box(ax, X(land), y, (release - land) * u, bh, f"tile {t}: full[{st}] phase {t // 3}",
            face=LIGHT[2 if t < 3 else 5], fontsize=6.4)
    st, t, issue, land, release = sched["stage"][0]
    arrow(ax, (X(release), rows["st0"] - 0.05), (X(sched["load"][3][1]) + 0.2,
                                                rows["prod"] + bh + 0.05),
          color=PALETTE[3], lw=1.0)
    label(ax, X(release) + 1.0, rows["prod"] + 0.45, "empty[0] complete (8 warps released "
          "tile 0): the producer issues tile 3 into stage 0", 6.6, color=PALETTE[3])
    # The Tensor Cores: the wgmma groups in the order issued.
    for c, b, e, n in sched["tc"]:
        box(ax, X(b), rows["tc"], (e - b) * u, bh, n, face=face[c], fontsize=6.4)
    # The consumers.
    for c, when in sched["issue"]:
        y = rows[f"wg{c}"]
        box(ax, X(when), y, 0.18 * u, bh, "", face=dark[c], lw=0.4)
    for c, b, e, t in sched["soft"]:
        box(ax, X(b), rows[f"wg{c}"], (e - b) * u, bh, f"softmax {t}", face="white",
            fontsize=6.4)
    for c, b, e in sched["pack"]:
        box(ax, X(b), rows[f"wg{c}"], (e - b) * u, bh, "", face="#DDDDDD", lw=0.4)
    end = max(e for _, _, e, _ in sched["tc"])
    ax.plot([X(0), X(end) + 0.3], [rows["tc"] + bh + 0.55] * 2, color=MUTED, lw=0.8)
    label(ax, X(end) + 0.4, rows["tc"] + bh + 0.55, "time", 6.8, color="#555555")
    yk = 15.0
    legend_cells(ax, 0.3, yk, [
        (dark[0], "issue (consumer 0; consumer 1's in orange): bar.sync on its named barrier "
                  "(its turn), wgmma.fence, 8 wgmma for S_t and 8 for O += P_{t\u22121} V_{t\u22121}, two commit "
                  "groups, bar.arrive on the other's"),
        ("white", "wgmma.wait_group 1 (S_t landed), then the mask and the online softmax of "
                  "tile t, while the Tensor Cores run the other consumer's products"),
        ("#DDDDDD", "wait_group 0 (P_{t\u22121} V_{t\u22121} done: one arrive per warp on "
                    "empty), wait on full for tile t + 1, O rescaled and P_t packed into A "
                    "fragments"),
    ], fontsize=6.9, step=1.05)
    label(ax, 0.3, yk + 3.6, "Stages: dashed while the TMA copies (the producer's "
          "mbarrier.arrive.expect_tx of 64 KiB, completed by the bytes of four boxes), "
          "filled from full to the release. Registers: producer 40,", 6.9)
    label(ax, 0.3, yk + 4.5, "consumers 232 a thread (setmaxnreg): S (64 floats), O (64) and "
          "P (32 registers of bf16 pairs) live at once. Consumer 0 goes first: consumer 1 "
          "arrives on its barrier before its first turn.", 6.9)
    return fig


@diagram("d12_tma_boxes")
def tma_boxes() -> Figure:
    """A 128 x 128 tile of the Hopper kernel: two TMA boxes of 128-byte rows, swizzled, and
    where wgmma's k-steps find their 32 bytes."""
    fig, ax = canvas(44, 16.6, inches_per_unit=0.27,
                     title="prefill_2_wgmma's tiles: 128 rows x 128 dims = two TMA boxes of 64 "
                           "columns (128-byte rows), written with the 128-byte swizzle")
    chunks, rows_shown = 16, 8
    w, h = 1.0, 0.9
    kk_face = [LIGHT[0], LIGHT[1], LIGHT[2], LIGHT[3]]
    # Left: the tile as it is in global memory (one head's 128 dims of 128 rows).
    x0, y0 = 3.2, 3.4
    label(ax, x0 + chunks * w / 2, y0 - 1.9, "in global memory: rows of 256 bytes (one head)",
          7.5, ha="center", weight="bold")
    for c in range(chunks):
        label(ax, x0 + (c + 0.5) * w, y0 - 0.35, str(c), 6.3, ha="center")
    label(ax, x0 - 0.2, y0 - 0.35, "chunk", 6.3, ha="right")
    for r in range(rows_shown):
        for c in range(chunks):
            cell(ax, x0 + c * w, y0 + r * h, f"{c // 2}", kk_face[(c // 2) % 4], w, h, 6.3)
        label(ax, x0 - 0.2, y0 + (r + 0.5) * h, f"row {r}", 6.3, ha="right")
    label(ax, x0, y0 + rows_shown * h + 0.45, "... rows 8 .. 127 alike", 6.5, color="#555555")
    for b in range(2):
        ax.add_patch(Rectangle((x0 + 8 * b * w, y0), 8 * w, rows_shown * h, fill=False,
                               edgecolor=PALETTE[4 + b], linewidth=2.0))
        label(ax, x0 + (8 * b + 4) * w, y0 - 1.05, f"box {b}: dims {64 * b} .. {64 * b + 63}",
              7.0, ha="center", color=PALETTE[4 + b], weight="bold")
    # Right: the two boxes in shared memory, 16 KiB each, chunk c of row r at c ^ (r % 8).
    x1 = x0 + chunks * w + 4.0
    label(ax, x1 + chunks * w / 2 + 0.5, y0 - 1.9, "in shared memory: [box][128 rows][128 bytes],"
          " swizzled", 7.5, ha="center", weight="bold")
    for b in range(2):
        xb = x1 + b * (8 * w + 1.0)
        label(ax, xb + 4 * w, y0 - 1.05, f"box {b} (+{16 * b} KiB)", 7.0, ha="center",
              color=PALETTE[4 + b], weight="bold")
        for p in range(8):
            label(ax, xb + (p + 0.5) * w, y0 - 0.35, str(p), 6.3, ha="center")
        for r in range(rows_shown):
            for p in range(8):
                c = p ^ (r % 8)  # the chunk stored at position p
                kk = 4 * b + c // 2
                cell(ax, xb + p * w, y0 + r * h, f"{kk}", kk_face[kk % 4], w, h, 6.3)
        ax.add_patch(Rectangle((xb, y0), 8 * w, rows_shown * h, fill=False,
                               edgecolor=PALETTE[4 + b], linewidth=2.0))
    label(ax, x1 - 0.2, y0 - 0.35, "position", 6.3, ha="right")
    label(ax, x1, y0 + rows_shown * h + 0.45, "8 rows = 1024 bytes: the swizzle's period; "
          "every tile starts on a 1024-byte boundary", 6.5, color="#555555")
    arrow(ax, (x0 + chunks * w + 0.3, y0 + 4 * h), (x1 - 1.3, y0 + 4 * h), "TMA", fontsize=7.0,
          lw=1.2)
    notes = [
        "Cell text: the k16 step kk of S = Q K\u1d40 that reads the chunk (16 dims = 32 bytes = "
        "two chunks). The tensor map of q, k or v is 3-D, innermost first: (128 dims, heads, "
        "rows),",
        "box (64, 1, 128), CU_TENSOR_MAP_SWIZZLE_128B: a box row is at most 128 bytes wide with "
        "that swizzle, so a tile takes two boxes, and the TMA writes chunk c of row r at "
        "position c ^ (r % 8).",
        "Q and K (K-major, for S): the descriptor of step kk starts at box kk / 4, + 32 bytes "
        "\u00b7 (kk % 4); SBO = 1024 bytes (the next 8 rows); wgmma applies the same XOR to the "
        "addresses it forms.",
        "V (N-major, for O += P V): step kk starts 16 keys (2048 bytes) down, LBO = 16 KiB (dims "
        "64 .. 127 are in the other box), SBO = 1024 bytes (the next 8 keys).",
    ]
    for i, n in enumerate(notes):
        label(ax, 0.3, y0 + rows_shown * h + 1.7 + i * 0.95, n, 6.9)
    return fig
