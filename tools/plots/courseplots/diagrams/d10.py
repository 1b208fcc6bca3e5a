"""Day 10's diagrams: the GEMM tiling hierarchy (block, warp, lane; step 5's sizes) and step 7's
warp-specialised pipeline (a TMA producer, a ring of shared-memory stages with full/empty
mbarriers, two consumer warpgroups issuing wgmma), over time.

The sizes are solutions/d10_gemm/kernel.cu's: kWtBM x kWtBN = 256 x 128, kWtBK = 8, warps of
64 x 64 (kWtWM, kWtWN), four 64 x 16 sub-tiles per warp, a lane's 8 x 4 block in each (lane_m =
lane / 4, lane_n = lane % 4); kWgBM x kWgBN = 128 x 256, kWgStages = 4, 48 KiB per stage.
"""

from __future__ import annotations

from typing import Dict, List

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from . import diagram
from .draw import EDGE, LIGHT, MUTED, PALETTE, arrow, box, canvas, cell, label

GREY = "#555555"


@diagram("d10_tiling")
def tiling() -> Figure:
    """C = A B split into block tiles, warp tiles and lane tiles (step 5, lesson 10 §6)."""
    fig, ax = canvas(34.0, 33.6, inches_per_unit=0.34,
                     title="Step 5's tiling: a block tile of C, its A and B panels over K, "
                           "8 warp tiles, and each lane's 8 x 16 outputs")

    # 1. The matrices (schematic, not to scale): A [M, K], B [K, N], C [M, N].
    ax_, ay = 1.5, 9.0          # A's corner
    bx, by = 9.0, 2.0           # B's corner
    K, M, N = 6.0, 8.0, 8.0
    bm0, bn0, bm, bn = 3.0, 4.0, 2.0, 1.0  # the block tile in C (256 x 128 drawn as 2 x 1)
    label(ax, 5.0, 2.6, "1. The block's panels", 8.5, ha="center", weight="bold")
    label(ax, 5.0, 3.5, "C[M, N] = A[M, K] B[K, N]", 7.5, ha="center")
    label(ax, 5.0, 4.4, "(schematic: not to scale)", 6.8, ha="center", color=GREY)
    box(ax, ax_, ay, K, M, "", face="white")
    box(ax, bx, by, N, K, "", face="white")
    box(ax, bx, ay, N, M, "", face="white")
    label(ax, ax_ + K / 2, ay + M + 0.5, "A [M, K]", 7.5, ha="center")
    label(ax, bx + N + 0.2, by + K / 2, "B [K, N]", 7.5)
    label(ax, bx + N + 0.2, ay + M - 0.5, "C [M, N]", 7.5)
    # the row panel of A and the column panel of B that the block reads, and one K-tile of each
    box(ax, ax_, ay + bm0, K, bm, "", face=LIGHT[0])
    box(ax, bx + bn0, by, bn, K, "", face=LIGHT[1])
    kt = 2.2
    box(ax, ax_ + kt, ay + bm0, 0.45, bm, "", face=PALETTE[0])
    box(ax, bx + bn0, by + kt, bn, 0.45, "", face=PALETTE[1])
    box(ax, bx + bn0, ay + bm0, bn, bm, "", face=PALETTE[2])
    label(ax, ax_ + K / 2, ay + bm0 - 0.45, "A's row panel: BM x K", 6.8, ha="center")
    label(ax, bx - 0.2, by + 4.6, "B's column panel:", 6.8, ha="right")
    label(ax, bx - 0.2, by + 5.4, "K x BN", 6.8, ha="right")
    arrow(ax, (ax_ + kt + 0.7, ay + bm0 + bm + 0.45), (ax_ + kt + 2.6, ay + bm0 + bm + 0.45))
    label(ax, ax_ + kt + 0.2, ay + bm0 + bm + 1.2, "one K-tile (BK = 8),", 6.8)
    label(ax, ax_ + kt + 0.2, ay + bm0 + bm + 1.9, "then the next", 6.8)
    arrow(ax, (bx + bn0 + bn + 0.4, by + kt + 0.7), (bx + bn0 + bn + 0.4, by + kt + 2.6))
    label(ax, bx + bn0 + bn + 0.8, by + kt + 1.3, "the same K-tile", 6.8)
    label(ax, bx + bn0 + bn + 0.8, by + kt + 2.0, "of B", 6.8)
    label(ax, bx + bn0 + bn / 2, ay + bm0 + bm + 0.5, "block tile", 6.8, ha="center")
    label(ax, bx + bn0 + bn / 2, ay + bm0 + bm + 1.2, "BM x BN = 256 x 128", 6.8, ha="center")
    label(ax, bx + N / 2, ay + M + 0.5, "one block per tile of C", 6.8, ha="center", color=GREY)
    # to panel 2 (drawn at x 22, y 4)
    arrow(ax, (bx + bn0 + bn + 0.1, ay + bm0 + 1.0), (21.1, 13.3), rad=0.1, color=GREY)

    # 2. The block tile: 8 warps of 64 x 64, warp w at (w / 2, w % 2).
    x2, y2, wt = 22.0, 4.0, 2.9
    label(ax, x2 + wt, 2.6, "2. Block tile 256 x 128: 8 warps", 8.5, ha="center",
          weight="bold")
    label(ax, x2 + wt, 3.4, "warp w: rows 64 (w / 2), columns 64 (w % 2)", 6.8, ha="center",
          color=GREY)
    for w in range(8):
        wm, wn = w // 2, w % 2
        hot = w == 3
        cell(ax, x2 + wn * wt, y2 + wm * wt, f"warp {w}\n64 x 64",
             PALETTE[3] if hot else LIGHT[2], wt, wt, 7.5, lw=2.0 if hot else 0.8,
             weight="bold" if hot else "normal")
    label(ax, x2 - 0.2, y2 + 2 * wt, "256 rows", 7, ha="right", rotation=90)
    label(ax, x2 + wt, y2 + 4 * wt + 0.5, "128 columns", 7, ha="center")
    label(ax, x2 + 2 * wt + 0.4, y2 + 1.5 * wt, "warp 3 is", 6.8, color=GREY)
    label(ax, x2 + 2 * wt + 0.4, y2 + 1.5 * wt + 0.75, "drawn below", 6.8, color=GREY)

    # 3. A warp tile: four 64 x 16 sub-tiles; lane l owns rows 8 (l / 4) .. + 7 and columns
    # 16 s + 4 (l % 4) .. + 3 of sub-tile s. One cell = 8 rows x 4 columns of C.
    x3, y3 = 3.0, 22.3
    hot_lane = 6
    label(ax, x3 + 8, 20.0, "3. Warp tile 64 x 64: four 64 x 16 sub-tiles; a cell is "
          "8 x 4 outputs, labelled with its lane", 8.5, ha="center", weight="bold")
    for r in range(8):
        label(ax, x3 - 0.15, y3 + r + 0.5, f"rows {8 * r}-{8 * r + 7}", 6.3, ha="right")
        for c in range(16):
            s, ln = c // 4, c % 4
            lane = 4 * r + ln
            hot = lane == hot_lane
            cell(ax, x3 + c, y3 + r, f"L{lane}", PALETTE[0] if hot else LIGHT[s],
                 fontsize=7.0 if hot else 6.5, color="white" if hot else "black",
                 lw=2.0 if hot else 0.6, weight="bold" if hot else "normal")
    for s in range(5):
        ax.plot([x3 + 4 * s, x3 + 4 * s], [y3, y3 + 8], color=EDGE, lw=1.8)
    for s in range(4):
        label(ax, x3 + 4 * s + 2, y3 - 0.45, f"sub-tile {s}: cols {16 * s}-{16 * s + 15}",
              6.3, ha="center")
    label(ax, x3 + 8, y3 + 8.7, f"lane {hot_lane} (lane_m = {hot_lane // 4}, lane_n = "
          f"{hot_lane % 4}) owns 4 blocks of 8 x 4 = 8 x 16 outputs: 128 accumulators",
          7.0, ha="center")
    label(ax, x3 + 8, y3 + 9.5, "lane_m = lane / 4 picks the 8 rows, lane_n = lane % 4 the 4 "
          "columns inside each sub-tile", 7.0, ha="center", color=GREY)

    # 4. One lane, one sub-tile, one k: an outer product of 8 values of A and 4 of B.
    x4, y4 = 24.5, 23.3
    label(ax, x4 + 3.0, 20.0, "4. One lane, one k, one sub-tile", 8.5, ha="center",
          weight="bold")
    for i in range(8):
        cell(ax, x4, y4 + i * 0.8, f"a{i}", LIGHT[0], 1.0, 0.8, 6.5)
    for j in range(4):
        cell(ax, x4 + 1.6 + j, y4 - 1.2, f"b{j}", LIGHT[1], 1.0, 0.8, 6.5)
    for i in range(8):
        for j in range(4):
            cell(ax, x4 + 1.6 + j, y4 + i * 0.8, "+=", LIGHT[2], 1.0, 0.8, 6.0)
    label(ax, x4 - 0.15, y4 + 3.2, "2 float4", 6.5, ha="right")
    label(ax, x4 - 0.15, y4 + 3.9, "of A", 6.5, ha="right")
    label(ax, x4 + 6.8, y4 - 0.8, "1 float4 of B", 6.5)
    label(ax, x4 + 6.8, y4 + 1.2, "32 FMAs", 6.8)
    label(ax, x4 + 6.8, y4 + 2.6, "x 4 sub-tiles:", 6.8)
    label(ax, x4 + 6.8, y4 + 3.4, "128 FMAs", 6.8)
    label(ax, x4 + 6.8, y4 + 4.2, "per 6 float4", 6.8)
    label(ax, x4 + 6.8, y4 + 5.0, "shared loads", 6.8)
    label(ax, x4 + 3.0, y4 + 7.2, "a: column k of the A tile", 6.5, ha="center", color=GREY)
    label(ax, x4 + 3.0, y4 + 7.9, "(stored transposed, (k, m))", 6.5, ha="center",
          color=GREY)
    return fig


def _schedule(stages: int, kts: int, load: float, mma: float, issue: float) -> List[Dict]:
    """An idealised timeline of step 7's ring: TMA latency `load`, a stage's 4 wgmma `mma`.

    issue(kt) waits for the release of kt - stages; the consumers start kt's wgmma when its
    bytes have landed and the previous group is done; the wait_group<1> of iteration kt + 1
    returns when kt's group is done (and not before kt + 1 was issued): then kt's stage is
    released."""
    ev: List[Dict] = []
    for kt in range(kts):
        e: Dict = {"kt": kt, "s": kt % stages}
        t = ev[-1]["issue"] + issue if ev else 0.0
        if kt >= stages:
            t = max(t, ev[kt - stages]["release"])
            e["waited"] = ev[kt - stages]["release"] > ev[-1]["issue"] + issue
        e["issue"] = t
        e["land"] = t + load
        e["start"] = max(e["land"], ev[-1]["end"] if ev else 0.0)
        e["end"] = e["start"] + mma
        ev.append(e)
        # kt - 1's release is known once kt's start is (issue(kt + 3) needs it, later)
        if kt >= 1:
            ev[kt - 1]["release"] = max(ev[kt - 1]["end"], e["start"])
    ev[-1]["release"] = ev[-1]["end"]
    return ev


@diagram("d10_wgmma_pipeline")
def wgmma_pipeline() -> Figure:
    """Step 7: one producer thread, 4 stages with full/empty barriers, 2 consumer warpgroups."""
    stages, kts = 4, 9
    fig, ax = canvas(40.0, 26.6, inches_per_unit=0.33,
                     title="Step 7: a TMA producer fills a ring of 4 stages, two consumer "
                           "warpgroups run wgmma on them (one block, 384 threads)")
    # --- the ring, as a block diagram
    y0 = 0.6
    box(ax, 0.5, y0 + 1.2, 8.0, 4.6, "", face=LIGHT[7])
    label(ax, 4.5, y0 + 1.9, "warpgroup 0: producer", 7.8, ha="center", weight="bold")
    for i, text in enumerate(["setmaxnreg.dec 40", "thread 0, for each K-stage kt:",
                              "wait empty[s] (if reused)", "arrive.expect_tx(full[s], 48 KiB)",
                              "TMA: A box, B box -> stage s"]):
        label(ax, 0.9, y0 + 2.8 + 0.7 * i, text, 6.8)
    sx = 11.5
    for s in range(stages):
        x = sx + s * 4.6
        box(ax, x, y0 + 1.2, 4.0, 3.2, "", face=LIGHT[s])
        label(ax, x + 2.0, y0 + 1.8, f"stage {s}", 7.5, ha="center", weight="bold")
        label(ax, x + 2.0, y0 + 2.6, "A 128 x 64 (16 KiB)", 6.3, ha="center")
        label(ax, x + 2.0, y0 + 3.3, "B 256 x 64 (32 KiB)", 6.3, ha="center")
        label(ax, x + 2.0, y0 + 3.95, "128B-swizzled", 6.0, ha="center", color=GREY)
        cell(ax, x, y0 + 4.6, f"full[{s}]", "white", 1.9, 0.8, 6.3)
        cell(ax, x + 2.1, y0 + 4.6, f"empty[{s}]", "white", 1.9, 0.8, 6.3)
    label(ax, sx + 9.0, y0 + 0.6, "4 x 48 KiB of shared memory, kt -> stage kt % 4", 7.0,
          ha="center", color=GREY)
    cx = 30.4
    box(ax, cx, y0 + 1.2, 9.2, 4.6, "", face=LIGHT[5])
    label(ax, cx + 4.6, y0 + 1.9, "warpgroups 1, 2: consumers", 7.8, ha="center",
          weight="bold")
    for i, text in enumerate(["setmaxnreg.inc 232; rows 64c .. 64c + 63",
                              "wait full[s]; wgmma.fence", "4 x wgmma m64n256k16 (32 B steps)",
                              "commit_group; wait_group 1", "arrive empty[previous stage]"]):
        label(ax, cx + 0.35, y0 + 2.8 + 0.7 * i, text, 6.8)
    arrow(ax, (8.6, y0 + 3.4), (sx - 0.1, y0 + 3.4))
    arrow(ax, (sx + 3 * 4.6 + 4.1, y0 + 3.4), (cx - 0.1, y0 + 3.4))
    label(ax, 4.5, y0 + 6.5, "full[s]: 1 arrival + 48 KiB of transactions", 6.6, ha="center")
    label(ax, cx + 4.6, y0 + 6.5, "empty[s]: 8 arrivals, one per consumer warp", 6.6,
          ha="center")

    # --- the timeline
    ev = _schedule(stages, kts, load=3.0, mma=2.0, issue=0.25)
    t_end = ev[-1]["end"] + 0.5
    x0, scale = 6.0, 33.0 / t_end
    ty = 9.6

    def tx(t: float) -> float:
        return x0 + t * scale

    label(ax, 20.0, ty - 1.3, "Over time (an idealised schedule: a stage's TMA takes longer "
          "than its wgmma, so the ring fills and the Tensor Cores never wait after the start)",
          7.2, ha="center", weight="bold")
    rows = ["producer"] + [f"stage {s}" for s in range(stages)] + ["consumers (WG 1, 2)"]
    rh = 1.9
    for i, name in enumerate(rows):
        label(ax, x0 - 0.3, ty + i * rh + 0.6, name, 7.2, ha="right")
        ax.plot([x0, tx(t_end)], [ty + i * rh + 1.35, ty + i * rh + 1.35], color=MUTED,
                lw=0.5)
    for e in ev:
        kt, s = e["kt"], e["s"]
        # producer: one mark per issued stage
        px = tx(e["issue"])
        cell(ax, px - 0.45, ty + 0.1, f"{kt}", PALETTE[s], 0.9, 1.0, 6.8, color="white",
             weight="bold")
        if e.get("waited"):
            label(ax, px - 0.6, ty + 1.55, "waited on empty", 5.8, ha="center", color=GREY)
        y = ty + (1 + s) * rh
        # the stage's life: TMA in flight, landed (full), read by wgmma, released (empty)
        _bar(ax, tx(e["issue"]), tx(e["land"]), y + 0.1, LIGHT[s], f"TMA kt={kt}", hatch="///")
        if e["start"] > e["land"]:
            _bar(ax, tx(e["land"]), tx(e["start"]), y + 0.1, "white", "full")
        _bar(ax, tx(e["start"]), tx(e["end"]), y + 0.1, PALETTE[s], "wgmma", color="white")
        # (released when the next iteration's wait_group 1 returns: here, as the group ends)
        # consumers: the wgmma groups, back to back
        yc = ty + (1 + stages) * rh
        _bar(ax, tx(e["start"]), tx(e["end"]), yc + 0.1, PALETTE[s], f"kt={kt}, stage {s}",
             color="white")
    ax.plot([x0, tx(t_end)], [ty + len(rows) * rh + 0.2] * 2, color=EDGE, lw=0.8)
    label(ax, tx(t_end), ty + len(rows) * rh + 0.65, "time", 7, ha="right")
    ky = ty + len(rows) * rh + 1.5
    items = [("///", LIGHT[0], "TMA in flight: the stage's 48 KiB arriving on full[s]"),
             ("", "white", "landed (full[s] complete), waiting for the Tensor Cores"),
             ("", PALETTE[0], "read by the consumers' 4 wgmma; then empty[s] is released")]
    for i, (hatch, face, text) in enumerate(items):
        _bar(ax, 6.0, 7.6, ky + i * 1.1, face, "", hatch=hatch, h=0.8)
        label(ax, 7.9, ky + i * 1.1 + 0.4, text, 6.8)
    for i, text in enumerate(["Use k of stage s is K-stage kt = 4k + s. It completes phase k "
                              "of full[s]: the consumers wait",
                              "with parity k % 2. The producer reuses the stage only after "
                              "phase k - 1 of empty[s] (8 consumer",
                              "warps arrived, parity (k - 1) % 2): a stage is never "
                              "overwritten while a wgmma may still read it."]):
        label(ax, 24.5, ky + 0.4 + i * 1.1, text, 6.8)
    return fig


def _bar(ax, x0: float, x1: float, y: float, face: str, text: str, color: str = "black",
         hatch: str = "", h: float = 1.1) -> None:
    ax.add_patch(Rectangle((x0, y), x1 - x0, h, facecolor=face, edgecolor=EDGE, linewidth=0.6,
                           hatch=hatch or None))
    if text and x1 - x0 > 1.2:
        ax.text((x0 + x1) / 2, y + h / 2, text, ha="center", va="center", fontsize=6.3,
                color=color, bbox=dict(facecolor=face, edgecolor="none", pad=0.3)
                if hatch else None)


@diagram("d10_sw128_descriptor")
def sw128_descriptor() -> Figure:
    """Step 7's A box in shared memory: 1024-byte swizzle atoms, and what one descriptor names."""
    fig, ax = canvas(36.0, 13.8, inches_per_unit=0.34,
                     title="Step 7: the A box of a stage (128 rows x 128 bytes, 128B-swizzled) "
                           "as wgmma's descriptors see it")
    # 1. One atom: 8 rows of 128 bytes; the TMA stored logical chunk c of row r at c ^ r.
    x0, y0 = 2.2, 3.0
    label(ax, x0 + 4, 1.3, "One swizzle atom: 8 rows x 128 bytes = 1024 bytes", 8.5,
          ha="center", weight="bold")
    label(ax, x0 + 4, 2.1, "cell: the k range stored there (bfloat16), colour: the k16 step",
          6.8, ha="center", color=GREY)
    for r in range(8):
        label(ax, x0 - 0.15, y0 + r + 0.5, f"row {r}", 6.8, ha="right")
        for p in range(8):
            c = p ^ r  # logical chunk at physical chunk p of row r
            cell(ax, x0 + p, y0 + r, f"k{8 * c}-\n{8 * c + 7}", LIGHT[c // 2], fontsize=6.2,
                 lw=2.0 if c // 2 == 0 else 0.6, weight="bold" if c // 2 == 0 else "normal")
    for p in range(8):
        label(ax, x0 + p + 0.5, y0 - 0.35, f"{16 * p}", 6.2, ha="center", color=GREY)
    label(ax, x0 + 4, y0 + 8.6, "byte offset of the chunk in its row (above); bold: what the "
          "k16 step 0 reads", 6.8, ha="center")
    label(ax, x0 + 4, y0 + 9.4, "k16 step kk reads k 16kk .. 16kk + 15: logical chunks 2kk, "
          "2kk + 1", 6.8, ha="center")

    # 2. The box: 16 atoms, consumer 0 reads atoms 0-7, consumer 1 atoms 8-15.
    x1, y1, ah = 15.0, 2.6, 0.62
    label(ax, x1 + 2.5, 1.3, "The A box: 16 atoms (16 KiB)", 8.5, ha="center", weight="bold")
    for j in range(16):
        cons = j // 8
        box(ax, x1, y1 + j * ah, 5.0, ah, f"atom {j}: rows {8 * j}-{8 * j + 7}",
            face=LIGHT[5] if cons == 0 else LIGHT[3], fontsize=6.2)
    for cons in range(2):
        yc = y1 + (8 * cons + 4) * ah
        label(ax, x1 + 5.3, yc - 0.3, f"consumer {cons}:", 6.8)
        label(ax, x1 + 5.3, yc + 0.4, f"rows {64 * cons}-{64 * cons + 63}", 6.8)
    arrow(ax, (x1 - 0.3, y1 + 0.3), (x1 - 0.3, y1 + ah + 0.3), color=EDGE)
    label(ax, x1 - 0.5, y1 + 0.62, "SBO", 6.8, ha="right")
    label(ax, x1 - 0.5, y1 + 1.3, "1024 B", 6.8, ha="right")

    # 3. The descriptor of consumer c, k16 step kk.
    x2 = 24.0
    label(ax, x2 + 5.8, 1.3, "Descriptor of consumer c, k16 step kk", 8.5, ha="center",
          weight="bold")
    lines = [
        ("start address", "stage + 8192 c + 32 kk"),
        ("", "(>> 4, bits 0-13)"),
        ("leading offset", "16 bytes, unused here (bits 16-29)"),
        ("stride offset", "1024 bytes: next atom (bits 32-45)"),
        ("base offset", "0: atoms start 1024-aligned"),
        ("swizzle mode", "1 = 128B (bits 62-63)"),
    ]
    for i, (k, v) in enumerate(lines):
        label(ax, x2, 2.7 + 0.8 * i, k, 7.0, weight="bold")
        label(ax, x2 + 3.6, 2.7 + 0.8 * i, v, 7.0)
    notes = [
        "The hardware reads row r, logical chunk 2kk + h at",
        "start + 128 r + 16 h, then XORs address bits 4-6",
        "(the chunk) with bits 7-9 (the row in the atom):",
        "chunk (2kk + h) ^ (r % 8), where the TMA wrote it.",
        "",
        "So moving 32 bytes along K is one add to the start",
        "address, for every k16 step, and 64 rows further",
        "(the other consumer) is 8 atoms = 8192 bytes.",
    ]
    for i, text in enumerate(notes):
        label(ax, x2, 8.0 + 0.75 * i, text, 7.0)
    return fig
