"""Day 11's diagrams: the paged KV cache (a CSR page table into a pool of pages), grouped-query
heads and the block that serves a group, the lane groups of a tile, and split-KV with its merge
by log-sum-exp.

The maps are the ones solutions/d11_decode_attention/kernel.cu implements: token t of sequence b
is in page page_indices[indptr[b] + t / page_size], slot t % page_size (lookup_tile_rows); query
head h reads KV head h / ratio; lane group k of a tile is warp k / 2, lanes 16 (k % 2) ..,
tokens 4k .. 4k + 3 (TileShape, head_dim 128); split s covers [min(len, s c), min(len, s c + c))
with c = ceil(len / S) (split_range_of); the merge is merge_splits_kernel's.
"""

from __future__ import annotations

import math
from typing import List, Sequence, Tuple

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from . import diagram
from .draw import EDGE, LIGHT, MUTED, PALETTE, arrow, box, canvas, cell, label

# The drawing's page table: three sequences, pages of 4 tokens in a pool of 8 pages.
PAGE_SIZE = 4
LENGTHS = [10, 4, 7]
PAGE_INDICES = [5, 1, 7, 3, 0, 6]
NUM_PAGES = 8
NUM_KV_HEADS = 8


def _indptr(lengths: Sequence[int], page_size: int) -> List[int]:
    out = [0]
    for n in lengths:
        out.append(out[-1] + (n + page_size - 1) // page_size)
    return out


def _page_of(b: int, t: int) -> Tuple[int, int]:
    """(page, slot) of token t of sequence b: the kernel's lookup."""
    indptr = _indptr(LENGTHS, PAGE_SIZE)
    return PAGE_INDICES[indptr[b] + t // PAGE_SIZE], t % PAGE_SIZE


@diagram("d11_page_table")
def page_table() -> Figure:
    """Three sequences, their CSR page table, and the pages of the pool their tokens live in."""
    indptr = _indptr(LENGTHS, PAGE_SIZE)
    last = [n - (indptr[b + 1] - indptr[b] - 1) * PAGE_SIZE for b, n in enumerate(LENGTHS)]
    assert indptr[-1] == len(PAGE_INDICES) and len(set(PAGE_INDICES)) == len(PAGE_INDICES)
    fig, ax = canvas(46, 20.0, inches_per_unit=0.27,
                     title="A paged KV cache: each sequence's tokens, through its page table, "
                           "into pages of the pool (page_size 4 here; 16 in the benchmark)")
    x0, tok_w, gap_page, gap_seq = 9.0, 1.0, 0.5, 1.6
    # Row 1: the tokens of each sequence, in pages of PAGE_SIZE slots.
    y_tok, y_idx = 2.2, 4.6
    label(ax, x0 - 0.4, y_tok + 0.5, "tokens of\nsequence b", 7.5, ha="right")
    label(ax, x0 - 0.4, y_idx + 0.5, "page_indices", 7.5, ha="right")
    page_x = []  # x of each entry of page_indices
    x = x0
    for b, n in enumerate(LENGTHS):
        first_x = x
        for p in range(indptr[b], indptr[b + 1]):
            page_x.append(x)
            for s in range(PAGE_SIZE):
                t = (p - indptr[b]) * PAGE_SIZE + s
                if t < n:
                    cell(ax, x + s * tok_w, y_tok, str(t), LIGHT[b], tok_w, 1.0, 7)
                else:
                    cell(ax, x + s * tok_w, y_tok, "", "white", tok_w, 1.0, 7, edge=MUTED)
            cell(ax, x, y_idx, str(PAGE_INDICES[p]), LIGHT[b], PAGE_SIZE * tok_w, 1.0, 8.5,
                 weight="bold")
            label(ax, x + 0.12, y_idx + 0.5, f"[{p}]", 6.3, color="#555555")
            x += PAGE_SIZE * tok_w + gap_page
        label(ax, (first_x + x - gap_page) / 2, y_tok - 0.55,
              f"sequence {b}: len {n}, last_page_len {last[b]}", 7.5, ha="center",
              color=PALETTE[b], weight="bold")
        x += gap_seq - gap_page
    # The CSR arrays in words, on the right.
    tx = x + 0.6
    label(ax, tx, y_tok + 0.1, f"indptr = {indptr}", 7.5)
    label(ax, tx, y_tok + 1.2, f"last_page_len = {last}", 7.5)
    label(ax, tx, y_tok + 2.3, f"page_size = {PAGE_SIZE}", 7.5)
    label(ax, tx, y_tok + 3.4, "sequence b owns entries", 7.0, color="#555555")
    label(ax, tx, y_tok + 4.3, "indptr[b] .. indptr[b + 1] − 1", 7.0, color="#555555")

    # Row 2: the pool. Page p: PAGE_SIZE slots (rows) x NUM_KV_HEADS heads (columns).
    y_pool, head_w, slot_h, pool_gap = 10.6, 0.45, 0.9, 0.7
    page_w = NUM_KV_HEADS * head_w
    owner = {}  # page -> (sequence, its index in the sequence)
    for b in range(len(LENGTHS)):
        for i, p in enumerate(range(indptr[b], indptr[b + 1])):
            owner[PAGE_INDICES[p]] = (b, i)
    label(ax, x0 - 0.4, y_pool + PAGE_SIZE * slot_h / 2, "k_cache\n(the pool)", 7.5, ha="right")
    px = {}
    for p in range(NUM_PAGES):
        xp = x0 + p * (page_w + pool_gap)
        px[p] = xp
        b, i = owner.get(p, (None, None))
        for s in range(PAGE_SIZE):
            used = b is not None and i * PAGE_SIZE + s < LENGTHS[b]
            for h in range(NUM_KV_HEADS):
                cell(ax, xp + h * head_w, y_pool + s * slot_h, "",
                     LIGHT[b] if used else "white", head_w, slot_h, edge=EDGE if used else MUTED,
                     lw=0.4)
        ax.add_patch(Rectangle((xp, y_pool), page_w, PAGE_SIZE * slot_h, fill=False,
                               edgecolor=EDGE, linewidth=1.2))
        label(ax, xp + page_w / 2, y_pool - 0.45, f"page {p}", 7.5, ha="center",
              weight="bold" if b is not None else "normal",
              color=PALETTE[b] if b is not None else "#777777")
        if b is None:
            label(ax, xp + page_w / 2, y_pool + PAGE_SIZE * slot_h / 2, "free", 7.5,
                  ha="center", color="#777777")
        else:
            first = i * PAGE_SIZE
            end = min(LENGTHS[b], first + PAGE_SIZE) - 1
            label(ax, xp + page_w / 2, y_pool + PAGE_SIZE * slot_h + 0.45,
                  f"seq {b}, tokens {first}..{end}", 6.5, ha="center", color=PALETTE[b])
    # The page table's arrows: entry -> page.
    for p, xe in enumerate(page_x):
        b = next(bb for bb in range(len(LENGTHS)) if indptr[bb] <= p < indptr[bb + 1])
        tgt = PAGE_INDICES[p]
        arrow(ax, (xe + PAGE_SIZE * tok_w / 2, y_idx + 1.05),
              (px[tgt] + page_w / 2, y_pool - 0.85), color=PALETTE[b], lw=0.9)
    # One worked lookup: token 9 of sequence 0.
    b, t = 0, 9
    page, slot = _page_of(b, t)
    hx = px[page] + 2 * head_w
    hy = y_pool + slot * slot_h
    ax.add_patch(Rectangle((hx, hy), head_w, slot_h, fill=False, edgecolor="black",
                           linewidth=2.0))
    # Axis notes of a page.
    xp = px[0]
    label(ax, xp - 0.15, y_pool + 0.45, "slot 0", 6.5, ha="right")
    label(ax, xp - 0.15, y_pool + (PAGE_SIZE - 0.5) * slot_h, f"slot {PAGE_SIZE - 1}", 6.5,
          ha="right")
    yb = y_pool + PAGE_SIZE * slot_h + 0.5
    label(ax, xp - 0.15, yb, "KV heads 0 .. 7 \u2192", 6.5, ha="right")
    y_notes = yb + 1.4
    notes = [
        f"Token {t} of sequence {b}: page_indices[indptr[{b}] + {t} / {PAGE_SIZE}] = "
        f"page_indices[{indptr[b] + t // PAGE_SIZE}] = {page}, slot {t} % {PAGE_SIZE} = {slot};"
        f" the outlined cell is its row for KV head 2.",
        "A cell is one token's row for one KV head: head_dim contiguous elements (256 bytes at "
        "head_dim 128 in bfloat16), at ((page \u00b7 page_size + slot) \u00b7 num_kv_heads + head)"
        " \u00b7 head_dim.",
        "v_cache is a second pool of the same shape: the same page and slot hold the token's V. "
        "Empty cells: the unused slots of each last page, the only memory paging wastes.",
        "Pages need not be in order or adjacent; two sequences with the same prefix may point at "
        "the same pages.",
    ]
    for i, n in enumerate(notes):
        label(ax, x0 - 7.5, y_notes + i * 1.25, n, 7.2)
    return fig


@diagram("d11_gqa_block")
def gqa_block() -> Figure:
    """32 query heads on 8 KV heads (ratio 4), and the block that serves one group."""
    qo, kv = 32, 8
    ratio = qo // kv
    fig, ax = canvas(40, 18.6, inches_per_unit=0.27,
                     title="Grouped-query attention: 32 query heads share 8 KV heads "
                           "(Llama 3 8B), and one block serves a whole group")
    x0, w = 4.2, 1.0
    y_q, y_kv = 2.0, 6.0
    label(ax, x0 - 0.3, y_q + 0.5, "query\nheads h", 7.5, ha="right")
    label(ax, x0 - 0.3, y_kv + 0.5, "KV heads\ng = h / 4", 7.5, ha="right")
    for h in range(qo):
        g = h // ratio
        cell(ax, x0 + h * w, y_q, str(h), LIGHT[g % len(LIGHT)], w, 1.0, 7)
    for g in range(kv):
        cell(ax, x0 + g * ratio * w, y_kv, f"KV {g}", PALETTE[g % len(PALETTE)], ratio * w,
             1.0, 8, color="white" if g in (0, 2, 4) else "black", weight="bold")
        for j in range(ratio):
            h = g * ratio + j
            arrow(ax, (x0 + (h + 0.5) * w, y_q + 1.05), (x0 + (g * ratio + ratio / 2) * w,
                                                           y_kv - 0.05), color=EDGE, lw=0.5)
    # The block of (sequence b, KV head 2).
    g = 2
    bx, by, bw, bh = 3.0, 8.4, 34.0, 9.9
    box(ax, bx, by, bw, bh, "", face="#FAFAFA", lw=1.0)
    label(ax, bx + 0.3, by + 0.6, f"the block of (sequence b, KV head {g}): 128 threads",
          8, weight="bold")
    # K and V tile in shared memory.
    sx, sy = bx + 0.8, by + 1.8
    for r in range(4):
        cell(ax, sx, sy + r * 0.9, f"K row {r}" if r < 3 else "...", LIGHT[g], 5.0, 0.9, 7)
        cell(ax, sx + 5.4, sy + r * 0.9, f"V row {r}" if r < 3 else "...", LIGHT[g], 5.0, 0.9, 7)
    label(ax, sx, sy + 4.3, "a tile of K and V of KV head 2 in shared\nmemory (cp.async ring, "
          "3 stages): each\nrow is copied from the cache ONCE", 7.0, va="top")
    # Query heads of the group in registers.
    qx = bx + 15.0
    for j in range(ratio):
        h = g * ratio + j
        cell(ax, qx, sy + j * 1.1, f"q of head {h}", LIGHT[g], 5.6, 0.9, 7)
        arrow(ax, (sx + 10.5, sy + 1.6), (qx - 0.1, sy + j * 1.1 + 0.45), color=PALETTE[g],
              lw=0.8)
    label(ax, qx, sy + 4.75, "the group's 4 query vectors\n(registers, scaled by "
          "scale \u00b7 log2 e)", 7.0, va="top")
    ox = qx + 7.2
    for j in range(ratio):
        h = g * ratio + j
        arrow(ax, (qx + 5.7, sy + j * 1.1 + 0.45), (ox - 0.1, sy + j * 1.1 + 0.45), lw=0.6)
        cell(ax, ox, sy + j * 1.1, f"o, lse of head {h}", "white", 6.8, 0.9, 7)
    label(ax, ox, sy + 4.75, "4 outputs from one pass\nover the cache", 7.0, va="top")
    label(ax, bx + 0.3, by + bh - 1.55,
          "Each K and V element read from DRAM feeds 4 query heads: 4 times fewer bytes than one "
          "block per query head. Seen as a matrix product,", 7.0)
    label(ax, bx + 0.3, by + bh - 0.65,
          "the group is the M dimension: 4 rows, a quarter of the 16 an mma.sync m16n8k16 "
          "multiplies (ratio 16 would fill them).", 7.0)
    return fig


@diagram("d11_lane_groups")
def lane_groups() -> Figure:
    """head_dim 128: which lanes compute with which tokens and chunks, and which threads copy."""
    chunks, per_group, groups, threads = 16, 4, 8, 128
    fig, ax = canvas(43.6, 13.2, inches_per_unit=0.27,
                     title="One tile at head_dim 128: 32 tokens x 16 chunks of 8 elements, "
                           "computed by lane groups, copied by consecutive threads")
    w, h = 1.0, 0.95
    # Left: the compute mapping (attend_tile). Row k stands for the 4 tokens of group k.
    x0, y0 = 5.6, 2.6
    label(ax, x0 + chunks * w / 2, y0 - 1.35, "compute (attend_tile): cell = the lane of warp "
          "k / 2", 7.5, ha="center", weight="bold")
    for c in range(chunks):
        label(ax, x0 + (c + 0.5) * w, y0 - 0.4, str(c), 6.5, ha="center")
    for k in range(groups):
        for c in range(chunks):
            cell(ax, x0 + c * w, y0 + k * h, str(16 * (k % 2) + c), LIGHT[k // 2], w, h, 6.5)
        label(ax, x0 - 0.15, y0 + (k + 0.5) * h, f"tokens {per_group * k}..{per_group * k + 3}",
              6.5, ha="right")
    label(ax, x0 - 0.15, y0 - 0.4, "chunk", 6.5, ha="right")
    # Right: the copy mapping (load_kv_tile): chunk j * 128 + t of the tile is thread t's j-th.
    x1 = x0 + chunks * w + 4.6
    label(ax, x1 + chunks * w / 2, y0 - 1.35, "copy (load_kv_tile): cell = the thread (warp = "
          "thread / 32)", 7.5, ha="center", weight="bold")
    for c in range(chunks):
        label(ax, x1 + (c + 0.5) * w, y0 - 0.4, str(c), 6.5, ha="center")
    for i in range(threads // chunks):
        for c in range(chunks):
            t = (i * chunks + c) % threads
            cell(ax, x1 + c * w, y0 + i * h, str(t), LIGHT[t // 32], w, h, 6.0)
        label(ax, x1 - 0.15, y0 + (i + 0.5) * h, f"token {i}", 6.5, ha="right")
    notes = [
        "Left: group k (lanes 16 (k % 2) .. + 15 of warp k / 2) owns tokens 4k .. 4k + 3; lane "
        "c of the group reads chunk c of each with one LDS.128 and multiplies it with its 8",
        "elements of q for every query head of the group; a score is summed over the group's 16 "
        "lanes by __shfl_xor_sync with offsets 8, 4, 2, 1, which never leave the group.",
        "Right: thread t copies chunks t, t + 128, t + 256, t + 384 of the tile (tokens t / 16 + "
        "8j, chunk t % 16): 16 consecutive threads copy one 256-byte row. Tokens 8..31 repeat",
        "the same threads (j = 1, 2, 3). Colours: warps 0-3. At head_dim 64: 8 lanes per "
        "group, 64 tokens per tile.",
    ]
    for i, n in enumerate(notes):
        label(ax, 0.3, y0 + groups * h + 0.9 + i * 0.95, n, 7.0)
    return fig


@diagram("d11_split_merge")
def split_merge() -> Figure:
    """Split-KV: a long sequence in S ranges, one block each, merged by log-sum-exp."""
    # Each split's running maximum and sum (natural-log units, as the interface's lse).
    m_s = [1.5, 3.0, 2.5, 0.5]
    l_s = [1.8, 1.5, 1.7, 1.4]
    lse = [m + math.log(l) for m, l in zip(m_s, l_s)]
    splits = len(lse)
    m = max(lse)
    w = [math.exp(v - m) for v in lse]
    total = sum(w)
    fig, ax = canvas(42, 21.2, inches_per_unit=0.27,
                     title="Split-KV (flash-decoding): S blocks per (sequence, KV head), each "
                           "over its own range of tokens, merged by log-sum-exp")
    x0, y0, seg = 3.0, 2.2, 9.0
    length = 131072
    chunk = -(-length // splits)
    for s in range(splits):
        begin, end = min(length, s * chunk), min(length, s * chunk + chunk)
        cell(ax, x0 + s * seg, y0, f"tokens {begin} .. {end - 1}", LIGHT[s], seg, 1.2, 7.5)
    label(ax, x0, y0 - 0.6, f"one sequence of {length} tokens, S = {splits} splits of "
          f"c = ceil(len / S) = {chunk}: split s covers [min(len, s c), min(len, s c + c))", 7.5)
    y_blk = y0 + 3.0
    for s in range(splits):
        bx = x0 + s * seg + 0.6
        arrow(ax, (bx + 3.9, y0 + 1.25), (bx + 3.9, y_blk - 0.05), lw=0.8)
        box(ax, bx, y_blk, seg - 1.2, 3.2, "", face=LIGHT[s], lw=0.9)
        label(ax, bx + 0.3, y_blk + 0.6, f"block: split {s}", 7.5, weight="bold")
        label(ax, bx + 0.3, y_blk + 1.55, "online softmax over its tokens:", 6.8)
        label(ax, bx + 0.3, y_blk + 2.45, f"m = {m_s[s]:.1f}, l = {l_s[s]:.1f}, acc", 6.8)
        yo = y_blk + 4.2
        arrow(ax, (bx + 3.9, y_blk + 3.25), (bx + 3.9, yo - 0.05), lw=0.8)
        cell(ax, bx, yo, f"o_{s} = acc / l", "white", seg - 1.2, 1.0, 7)
        cell(ax, bx, yo + 1.0, f"lse_{s} = m + log l = {lse[s]:.3f}", "white", seg - 1.2, 1.0,
             7)
    label(ax, x0 + splits * seg + 0.3, y_blk + 4.7, "workspace,\nfloat32", 7.0)
    # The merge.
    ym = y_blk + 7.3
    box(ax, x0, ym, splits * seg, 8.3, "", face="#FAFAFA", lw=1.0)
    label(ax, x0 + 0.3, ym + 0.6, "merge_splits_kernel: one warp per (sequence, query head)",
          7.5, weight="bold")
    rows = [
        f"m = max_s lse_s = {m:.3f}",
        "w_s = exp(lse_s \u2212 m) = " + ", ".join(f"{v:.3f}" for v in w)
        + f"   (\u03a3 w_s = {total:.3f})",
        "o = \u03a3_s w_s \u00b7 o_s / \u03a3_s w_s: weights " +
        ", ".join(f"{v / total:.3f}" for v in w) + " of o_0 .. o_3",
        f"lse = m + log \u03a3_s w_s = {m:.3f} + log {total:.3f} = {m + math.log(total):.3f}",
        "o_s \u00b7 exp(lse_s) is split s's unnormalised sum: the merge rescales each split to "
        "the common maximum m, as the online softmax rescales a tile.",
        "An empty split (a short sequence in a batch with a long one) writes o = 0, lse = "
        "\u2212inf: its weight exp(\u2212inf \u2212 m) is 0.",
    ]
    for i, r in enumerate(rows):
        label(ax, x0 + 0.5, ym + 1.7 + i * 1.1, r, 7.3)
    for s in range(splits):
        bx = x0 + s * seg + 0.6
        arrow(ax, (bx + 3.9, y_blk + 6.25), (bx + 3.9, ym - 0.05), color=PALETTE[s], lw=0.8)
    return fig
