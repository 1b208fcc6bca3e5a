// Day 11 — your kernels. Read lessons/d11_decode_attention.md first; README.md in this folder
// lists the exercises. Replace each TODO block; keep the names, the template parameters and the
// launchers (the tests call them through lab.h). Check with:  course check d11
//
//   validate_decode            Exercise 1: the page table checked on the host (lesson §3.3)
//   decode_attention_kernel    Exercise 2: one block per (sequence, KV head, split), every query
//                              head of the group; K/V tiles in a cp.async ring (lesson §4-§5)
//   split_range_of, merge_splits_kernel
//                              Exercise 3: split-KV and the merge by log-sum-exp (lesson §6)
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "course/check.h"
#include "course/cp_async.cuh"
#include "course/device.h"
#include "course/smem.cuh"
#include "course/vec.cuh"
#include "course/warp.cuh"
#include "lab.h"

namespace d11 {

using course::cp_async_16_zfill;  // Day 7
using course::cp_async_commit;
using course::cp_async_wait;
using course::kFullMask;
using course::kWarpSize;
using course::to_float;
using course::Vec;

constexpr int kThreads = 128;  // 4 warps per block
constexpr int kWarps = kThreads / kWarpSize;
constexpr int kStages = 3;          // tiles in the cp.async ring (Day 7, lesson §5): 48 KB a block
constexpr int kChunkElems = 8;      // one 16-byte chunk of half or bfloat16
constexpr int kTokensPerGroup = 4;  // tokens one lane group handles per tile
// Blocks per SM the registers must allow (lesson §5.1): four blocks' stages (4 x 48 KB) fit an
// SM's shared memory, so groups of 1 and 4 heads are held to 128 registers a thread (4 x 128
// threads x 128 = the 64K registers of an SM); a group of 8 needs ~250 and gets two blocks.
template <int kGroupSize>
constexpr int kMinBlocksPerSm = kGroupSize <= 4 ? 4 : 2;
constexpr float kLog2e = 1.4426950408889634f;
[[maybe_unused]] constexpr float kLn2 = 0.6931471805599453f;

// The thread-to-data mapping of a tile (lesson §5.1). A lane group is the kLanesPerToken lanes
// that together hold one token's row of head_dim elements, 8 each (one 16-byte chunk): 16 lanes
// for head_dim 128, 8 for 64. The warp holds kGroupsPerWarp groups, the block kGroups, and group
// k handles tokens k * kTokensPerGroup .. + kTokensPerGroup of every tile. So a tile is
// kGroups * kTokensPerGroup tokens (32 for head_dim 128, 64 for 64: 16 KB of K and V either way).
template <int kHeadDim>
struct TileShape {
  static constexpr int kLanesPerToken = kHeadDim / kChunkElems;
  static constexpr int kGroupsPerWarp = kWarpSize / kLanesPerToken;
  static constexpr int kGroups = kWarps * kGroupsPerWarp;
  static constexpr int kTokens = kGroups * kTokensPerGroup;
  static constexpr int kChunks = kTokens * kLanesPerToken;  // 16-byte chunks of K (and of V)
  static constexpr int kChunksPerThread = kChunks / kThreads;
  static constexpr int kStageElems = 2 * kTokens * kHeadDim;  // K tile, then V tile
  static_assert(kWarpSize % kLanesPerToken == 0, "a token's lanes must not straddle warps");
  static_assert(kChunks % kThreads == 0, "every thread copies the same number of chunks");
};

template <class T>
struct KernelParams {
  const T* q;
  const T* k_cache;
  const T* v_cache;
  T* o;
  float* lse;
  float* partial_o;    // split-KV only: [batch, num_qo_heads, num_splits, head_dim]
  float* partial_lse;  // split-KV only: [batch, num_qo_heads, num_splits]
  const std::int32_t* indptr;
  const std::int32_t* page_indices;
  const std::int32_t* last_page_len;
  int page_size;
  std::uint32_t page_magic;  // token / page_size = (token * page_magic) >> page_shift
  int page_shift;            // (divide_by_page_size, for 0 <= token < 2^31)
  int num_kv_heads;
  int num_qo_heads;
  int num_splits;
  float scale_log2;  // scale * log2(e): the kernel works with exp2 (lesson §4.3)
};

// ---------------------------------------------------------------------------------------------
// Given: division by page_size without a divide instruction (GPUs have none: a `/` by a runtime
// value is ~15 instructions). For a divisor d >= 1, l = ceil(log2 d), m = floor(2^(31 + l) / d) +
// 1 (< 2^32), floor(n / d) = (n * m) >> (31 + l) for every 0 <= n < 2^31 (Granlund and
// Montgomery, 1994, Theorem 4.2 with N = 31): one 32 x 32 -> 64-bit multiply and a shift. The
// launcher computes m and the shift once per call (page_divisor).
struct PageDivisor {
  std::uint32_t magic;
  int shift;
};
inline PageDivisor page_divisor(int page_size) {
  int l = 0;
  while ((std::int64_t{1} << l) < page_size) ++l;
  const std::uint64_t magic = ((std::uint64_t{1} << (31 + l)) / page_size) + 1;
  return {static_cast<std::uint32_t>(magic), 31 + l};
}
// (On sm_80, nvcc 13 spills a register of the float16 ratio-4 split kernel to hold the magic
// number and shift, so there the division stays a `/`: the course's figures are the H100's.)
template <class T>
__device__ __forceinline__ unsigned divide_by_page_size(unsigned token, const KernelParams<T>& p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  return token / static_cast<unsigned>(p.page_size);
#else
  return static_cast<unsigned>((static_cast<std::uint64_t>(token) * p.page_magic) >> p.page_shift);
#endif
}

// ---------------------------------------------------------------------------------------------
// Exercise 3 (a) — the tokens of split `split` (lesson §6.1): contiguous ranges of
// ceil(len / num_splits) tokens; the last splits of a short sequence are empty.
__host__ __device__ inline SplitRange split_range_of(std::int64_t len, int num_splits, int split) {
  // TODO(d11.3a) (lesson §6.1): chunk = ceil(len / num_splits) (64-bit); split `split` covers
  // [begin, end) with begin = min(len, split * chunk) and end = min(len, begin + chunk). Write
  // the minimum with ?: (std::min is host-only, and this function runs on both sides).
  return SplitRange{};
}

// ---------------------------------------------------------------------------------------------
// Exercise 2 (a) — where this thread's chunks of a tile are in the cache (lesson §5.2), read from
// the page table one tile AHEAD of the copies (the kernel's loop below): a tile's copies then wait
// on no global load, because its page indices came in while the previous tile was computed.
// Chunk j of this thread is token (j * kThreads + threadIdx.x) / kLanesPerToken of the tile; its
// cache row (page * page_size + slot: the cache is [num_pages * page_size] rows of num_kv_heads
// heads) fits 32 bits (upload_paged_kv checks num_pages * page_size <= 2^32). A token at or past
// `end` gets row 0 and is never read (its chunk is zero-filled), so a tile past the end of the
// range reads nothing at all, not even the page table.
template <int kHeadDim>
struct TileRows {
  std::uint32_t row[TileShape<kHeadDim>::kChunksPerThread];
};

template <class T, int kHeadDim>
__device__ TileRows<kHeadDim> lookup_tile_rows(const KernelParams<T>& p,
                                               const std::int32_t* __restrict__ pages,
                                               int tile_begin, int end) {
  // TODO(d11.2a) (lesson §5.2): for j < TileShape<kHeadDim>::kChunksPerThread, chunk j of this
  // thread is token tile_begin + (j * kThreads + threadIdx.x) / Shape::kLanesPerToken of the
  // sequence. When token < end: its page is __ldg(pages + token / p.page_size) (the quotient by
  // divide_by_page_size, given: no divide instruction), its slot token % p.page_size, and
  // rows.row[j] = page * p.page_size + slot (32-bit unsigned: the upload guarantees num_pages *
  // page_size <= 2^32). Past the end: row 0.
  TileRows<kHeadDim> rows{};  // all 0 until written
  (void)p;
  (void)pages;
  (void)tile_begin;
  (void)end;
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Exercise 2 (a), continued — one tile of K and V into shared memory (lesson §5.2). Token i of
// the tile is token tile_begin + i of the sequence; `rows` (lookup_tile_rows, a tile earlier)
// holds the cache row of each of this thread's chunks, and a row's head has its head_dim
// elements contiguous in the NHD cache. Thread t copies chunks t, t + kThreads, ... of K and the
// same chunks of V (the same offsets in the other tensor): kLanesPerToken consecutive threads
// read one 128- or 256-byte row. Tokens at or past `end` are zero-filled. Every thread issues the
// same number of copies.
template <class T, int kHeadDim>
__device__ void load_kv_tile(T* stage, const KernelParams<T>& p, const TileRows<kHeadDim>& rows,
                             int kv_head, int tile_begin, int end) {
  // TODO(d11.2a) (lesson §5.2): k_tile = stage, v_tile = stage + Shape::kTokens * kHeadDim (using
  // Shape = TileShape<kHeadDim>). For j < Shape::kChunksPerThread: chunk c = j * kThreads +
  // threadIdx.x of the tile is token i = c / Shape::kLanesPerToken, 16-byte chunk
  // c % Shape::kLanesPerToken of its row. Token tile_begin + i is valid when < end; then its
  // element offset in the cache is (rows.row[j] * num_kv_heads + kv_head) * kHeadDim + chunk * 8
  // (64-bit). cp_async_16_zfill the chunk of K and of V to i * kHeadDim + chunk * 8 in their
  // tiles, with valid = false (and offset 0) past the end: zeros, never stale rows.
}

// Given: 2^x by the special-function unit's ex2.approx.ftz.f32, for the weights of the loop
// (lesson §5.3). exp2f runs the same instruction inside a fix for results below 2^-126 (three
// more instructions a call, twenty calls a tile at ratio 4); flushed to 0 instead, such a weight
// is nothing next to the tile's largest, which is 1. exp2_approx(-inf) = 0, NaN stays NaN.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The online-softmax state of one lane group for the kGroupSize query heads (lesson §4.2), in
// base 2: m = the largest score seen (log2 units), l = sum of exp2(s - m), acc = sum of
// exp2(s - m) * v over this lane's 8 dimensions.
template <int kGroupSize>
struct OnlineState {
  float m[kGroupSize];
  float l[kGroupSize];
  float acc[kGroupSize][kChunkElems];
};

// Exercise 2 (b) — one tile (lesson §4.2, §5.3): this lane group's kTokensPerGroup tokens. Scores
// first (each lane a partial dot product over its 8 dimensions, summed over the group's lanes by
// xor shuffles that stay inside the group), masked to -inf past `valid`; then ONE rescale of
// the state per tile by exp2(m_old - m_new), and the weighted values added.
// NOTE: m_use replaces an m of -inf by 0: a group that has seen no token yet (m = -inf) would
// otherwise compute exp2(-inf - -inf) = NaN.
template <class T, int kHeadDim, int kGroupSize>
__device__ void attend_tile(const T* stage, const float (&q)[kGroupSize][kChunkElems],
                            OnlineState<kGroupSize>& st, int group, int part, int valid) {
  // TODO(d11.2b) (lesson §4.2, §5.3): this lane group's tokens are i = group * kTokensPerGroup + j,
  // j < kTokensPerGroup, and this lane's 8 elements of a row start at part * 8.
  // 1. For each j: load the lane's 8 elements of K row i (one Vec<T, 8>), and for each head g the
  //    partial dot product with q[g] (already scaled by scale * log2 e) into s[g][j].
  // 2. Sum each s[g][j] over the group's lanes: __shfl_xor_sync(kFullMask, v, offset) for offset
  //    = Shape::kLanesPerToken / 2 .. 1 (every lane of the warp must execute the shuffles).
  // 3. Tokens i >= valid get s = -INFINITY.
  // 4. Per head g: m_new = max(st.m[g], s[g][:]); m_use = m_new, or 0 when m_new is -inf;
  //    alpha = exp2_approx(st.m[g] - m_use); st.m[g] = m_new; scale st.l[g] and st.acc[g][:] by
  //    alpha; s[g][j] = exp2_approx(s[g][j] - m_use), added to st.l[g].
  // 5. For each j: load the lane's 8 elements of V row i; st.acc[g][e] += s[g][j] * v[e].
}

// Exercise 2 (c) — the block's kGroups states merged in shared memory, and the result written
// (lesson §4.4). `scratch` reuses the stages (every copy has landed and every warp is done with
// them). Each group writes its acc, m and l; thread g < kGroupSize finds head g's overall max m
// and sum L = sum_k l_k * exp2(m_k - m), and each group's weight exp2(m_k - m) / L; then every
// output element is the weighted sum of the groups' acc. A split writes float32 partials; the
// whole sequence writes o in T and lse in natural log: lse = (m + log2 L) * ln 2.
template <class T, int kHeadDim, int kGroupSize, bool kSplit>
__device__ void finish_block(float* scratch, const OnlineState<kGroupSize>& st,
                             const KernelParams<T>& p, int group, int part, int b, int kv_head,
                             int split) {
  // TODO(d11.2c) (lesson §4.4): in `scratch` (floats), lay out acc_s
  // [kGroups][kGroupSize][kHeadDim], then m_s, l_s and weight_s, each [kGroups][kGroupSize] (using
  // Shape = TileShape<kHeadDim>).
  // 1. Each lane writes its acc[g][8] at acc_s[(group * kGroupSize + g) * kHeadDim + part * 8];
  //    the group's lane with part == 0 writes m and l. __syncthreads().
  // 2. Threads g < kGroupSize: m = max over groups k of m_s; total = sum_k l_k * exp2f(m_k -
  //    m_use) (m_use: 0 when m is -inf); weight_s = exp2f(m_k - m_use) / total (0 when total is
  //    0: an empty split); lse = (m + log2f(total)) * kLn2, or -INFINITY when total is 0. Row
  //    b * num_qo_heads + kv_head * kGroupSize + g: kSplit writes partial_lse[row * num_splits +
  //    split], else lse[row]. __syncthreads().
  // 3. For idx = threadIdx.x .. kGroupSize * kHeadDim step kThreads (g = idx / kHeadDim, d = idx %
  //    kHeadDim): o = sum_k acc_s[...] * weight_s[...]; kSplit writes the float to
  //    partial_o[(row * num_splits + split) * kHeadDim + d], else o[row * kHeadDim + d] as T
  //    (course::from_float<T>).
}

// Exercise 2 — decode attention (lesson §4-§6). Block (split, kv_head, b) attends the kGroupSize
// query heads kv_head * kGroupSize .. of sequence b to the tokens of its split (the whole
// sequence when !kSplit), streaming K/V tiles through a ring of kStages cp.async stages exactly
// as Day 7's GEMV streams W (lesson 7 §5): wait for tile t, barrier, issue tile t + kStages - 1
// into the stage tile t - 1 used, compute tile t.
template <class T, int kHeadDim, int kGroupSize, bool kSplit>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm<kGroupSize>)
    decode_attention_kernel(const KernelParams<T> p) {
  using Shape = TileShape<kHeadDim>;
  extern __shared__ __align__(128) unsigned char dynamic_smem[];
  T* stages = reinterpret_cast<T*>(dynamic_smem);  // [kStages][kStageElems]
  const int split = static_cast<int>(blockIdx.x), kv_head = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const std::int32_t first_page = p.indptr[b];
  const int len = (p.indptr[b + 1] - first_page - 1) * p.page_size + p.last_page_len[b];
  const SplitRange range = kSplit ? split_range_of(len, p.num_splits, split)
                                  : SplitRange{0, static_cast<std::int64_t>(len)};
  const int begin = static_cast<int>(range.begin), end = static_cast<int>(range.end);
  const std::int32_t* pages = p.page_indices + first_page;

  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int group = warp * Shape::kGroupsPerWarp + lane / Shape::kLanesPerToken;  // lane group
  const int part = lane % Shape::kLanesPerToken;  // this lane's dimensions: part * 8 .. + 8

  // q of the group's heads, this lane's 8 dimensions, times scale * log2(e).
  float q[kGroupSize][kChunkElems];
#pragma unroll
  for (int g = 0; g < kGroupSize; ++g) {
    const std::int64_t row =
        static_cast<std::int64_t>(b) * p.num_qo_heads + kv_head * kGroupSize + g;
    Vec<T, kChunkElems> qv;
    qv.load(p.q + row * kHeadDim + part * kChunkElems);
#pragma unroll
    for (int e = 0; e < kChunkElems; ++e) q[g][e] = to_float(qv[e]) * p.scale_log2;
  }
  OnlineState<kGroupSize> st;
#pragma unroll
  for (int g = 0; g < kGroupSize; ++g) {
    st.m[g] = -INFINITY;
    st.l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < kChunkElems; ++e) st.acc[g][e] = 0.0f;
  }

  const int tiles = (end - begin + Shape::kTokens - 1) / Shape::kTokens;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles)
      load_kv_tile<T, kHeadDim>(
          stages + s * Shape::kStageElems, p,
          lookup_tile_rows<T, kHeadDim>(p, pages, begin + s * Shape::kTokens, end), kv_head,
          begin + s * Shape::kTokens, end);
    cp_async_commit();  // always: group s is tile s, even when it is empty
  }
  // The rows of the next tile to copy, one iteration early (lookup_tile_rows).
  TileRows<kHeadDim> ahead_rows =
      lookup_tile_rows<T, kHeadDim>(p, pages, begin + (kStages - 1) * Shape::kTokens, end);
  int read_stage = 0, write_stage = kStages - 1;
  for (int t = 0; t < tiles; ++t) {
    cp_async_wait<kStages - 2>();  // tile t has landed (this thread's copies of it)
    __syncthreads();  // ... every thread's; and tile t - 1 (in write_stage) is no longer read
    const int ahead = t + kStages - 1;
    if (ahead < tiles)
      load_kv_tile<T, kHeadDim>(stages + write_stage * Shape::kStageElems, p, ahead_rows, kv_head,
                                begin + ahead * Shape::kTokens, end);
    cp_async_commit();
    // Next iteration's rows: their page indices land while this tile is computed.
    ahead_rows = lookup_tile_rows<T, kHeadDim>(p, pages, begin + (ahead + 1) * Shape::kTokens, end);
    const int tile_begin = begin + t * Shape::kTokens;
    attend_tile<T, kHeadDim, kGroupSize>(stages + read_stage * Shape::kStageElems, q, st, group,
                                         part, end - tile_begin);
    read_stage = read_stage + 1 == kStages ? 0 : read_stage + 1;
    write_stage = write_stage + 1 == kStages ? 0 : write_stage + 1;
  }
  cp_async_wait<0>();  // (only empty groups are left: nothing lands in the scratch below)
  __syncthreads();     // every warp is done with the stages: they become the merge's scratch
  finish_block<T, kHeadDim, kGroupSize, kSplit>(reinterpret_cast<float*>(dynamic_smem), st, p,
                                                group, part, b, kv_head, split);
}

// Exercise 3 (b) — the merge of the splits (lesson §6.2). One warp per (sequence, query head)
// row: m = max_s lse_s, w_s = exp(lse_s - m), o = sum_s w_s o_s / sum_s w_s, lse = m + log(sum_s
// w_s). Lane l holds dimensions l * kDims .. + kDims. An empty split (lse = -inf) has w = 0.
constexpr int kMergeThreads = 128;
constexpr int kMergeWarps = kMergeThreads / kWarpSize;

template <class T, int kHeadDim>
__global__ void __launch_bounds__(kMergeThreads)
    merge_splits_kernel(const float* __restrict__ partial_o, const float* __restrict__ partial_lse,
                        T* __restrict__ o, float* __restrict__ lse, std::int64_t rows,
                        int num_splits) {
  // TODO(d11.3b) (lesson §6.2): one warp per row: row = blockIdx.x * kMergeWarps + warp (64-bit);
  // return when row >= rows (the whole warp). m = the warp's max of partial_lse[row * num_splits
  // + s] (lanes stride over s, then course::warp_max). Then for every split s: w = expf(lse_s -
  // m), total += w, and the lane's kHeadDim / 32 floats of partial_o[(row * num_splits + s) *
  // kHeadDim + lane * kDims ...] added times w. Write o[row * kHeadDim + lane * kDims + e] =
  // acc / total as T, and (lane 0) lse[row] = m + logf(total).
}

// ---------------------------------------------------------------------------------------------
// Host side.

// Exercise 1 — the page table and shapes checked on the host (lesson §3.3).
void validate_decode(const CacheShape& shape, const PageTable& table, int num_qo_heads) {
  // TODO(d11.1) (lesson §3.3): course::require(condition, "decode_attention: ...") for each
  // rule of lab.h (Exercise 1): the shape (page_size, num_pages, num_kv_heads, head_dim), the head
  // ratio, the batch, indptr (size, first entry, never decreasing, at least one page per
  // sequence, last entry = page_indices.size()), every page index in 0 .. num_pages - 1, every
  // last_page_len in 1 .. page_size, and every length below 2^31. Say in the message what is
  // wrong and what was expected.
}

std::int64_t sequence_length(const PageTable& table, int page_size, int b) {
  const std::int64_t pages = table.indptr[b + 1] - table.indptr[b];
  return (pages - 1) * page_size + table.last_page_len[b];
}

PagedKv upload_paged_kv(const CacheShape& shape, const PageTable& table) {
  // The one O(pages) check, before anything is allocated (lab.h: plan once, run many times).
  validate_decode(shape, table, shape.num_kv_heads);
  // The kernel indexes cache rows (page * page_size + slot) in 32 bits (lookup_tile_rows).
  course::require(
      shape.num_pages * static_cast<std::int64_t>(shape.page_size) <= (std::int64_t{1} << 32),
      "upload_paged_kv: num_pages * page_size = " +
          std::to_string(shape.num_pages * static_cast<std::int64_t>(shape.page_size)) +
          " token slots: at most 2^32 (the kernel indexes cache rows in 32 bits)");
  static std::atomic<std::uint64_t> next_id{1};
  PagedKv kv;
  kv.shape_ = shape;
  kv.batch_ = table.batch();
  kv.num_page_entries_ = static_cast<std::int64_t>(table.page_indices.size());
  kv.indptr_ = course::DeviceBuffer<std::int32_t>(table.indptr);
  kv.page_indices_ = course::DeviceBuffer<std::int32_t>(table.page_indices);
  kv.last_page_len_ = course::DeviceBuffer<std::int32_t>(table.last_page_len);
  for (int b = 0; b < table.batch(); ++b)
    kv.max_len_ = std::max(kv.max_len_, sequence_length(table, shape.page_size, b));
  kv.id_ = next_id.fetch_add(1);  // last: only a complete upload is "uploaded"
  return kv;
}

SplitRange split_range(std::int64_t len, int num_splits, int split) {
  course::require(len >= 0 && num_splits >= 1 && split >= 0 && split < num_splits,
                  "split_range: expected len >= 0 and 0 <= split < num_splits");
  return split_range_of(len, num_splits, split);
}

int choose_num_splits(int batch, int num_kv_heads, std::int64_t max_len, int sm_count) {
  const std::int64_t blocks = static_cast<std::int64_t>(batch) * num_kv_heads;
  // As many splits as keep the blocks within one wave of kWaveBlocksPerSm blocks per SM: more
  // would start a second, partial wave; fewer would leave warps of the SM idle.
  const std::int64_t wanted = kWaveBlocksPerSm * static_cast<std::int64_t>(sm_count) / blocks;
  const std::int64_t by_length = std::max<std::int64_t>(1, max_len / kMinSplitTokens);
  return static_cast<int>(std::clamp<std::int64_t>(std::min(wanted, by_length), 1, kMaxSplits));
}

namespace {

template <class T, int kHeadDim, int kGroupSize, bool kSplit>
void launch_attention(const KernelParams<T>& p, int batch) {
  using Shape = TileShape<kHeadDim>;
  constexpr std::size_t smem = static_cast<std::size_t>(kStages) * Shape::kStageElems * sizeof(T);
  constexpr std::size_t scratch =
      sizeof(float) * Shape::kGroups * kGroupSize * (kHeadDim + 3);  // finish_block's
  static_assert(scratch <= smem, "the merge scratch must fit in the stages it reuses");
  auto kernel = decode_attention_kernel<T, kHeadDim, kGroupSize, kSplit>;
  // Once per kernel and process, not per call (a launch does O(1) host work, lab.h). All of the
  // unified L1/shared storage as shared memory: kMinBlocksPerSm blocks of stages must fit (the
  // copies bypass L1 anyway), which the driver's default split need not give. (A static's
  // initialiser that throws runs again at the next call.)
  static const bool attributes_set = [kernel] {
    course::allow_dynamic_smem(kernel, smem);
    COURSE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                           cudaSharedmemCarveoutMaxShared));
    return true;
  }();
  (void)attributes_set;
  const dim3 grid(p.num_splits, p.num_kv_heads, batch);
  kernel<<<grid, kThreads, smem>>>(p);
  COURSE_LAUNCH_CHECK();
}

template <class T, int kHeadDim, bool kSplit>
void launch_ratio(const KernelParams<T>& p, int batch, int ratio) {
  switch (ratio) {
    case 1:
      return launch_attention<T, kHeadDim, 1, kSplit>(p, batch);
    case 4:
      return launch_attention<T, kHeadDim, 4, kSplit>(p, batch);
    case 8:
      return launch_attention<T, kHeadDim, 8, kSplit>(p, batch);
  }
}

template <class T, int kHeadDim>
void launch_all(const KernelParams<T>& p, int batch, int ratio) {
  if (p.num_splits == 1) return launch_ratio<T, kHeadDim, false>(p, batch, ratio);
  launch_ratio<T, kHeadDim, true>(p, batch, ratio);
  const std::int64_t rows = static_cast<std::int64_t>(batch) * p.num_qo_heads;
  const auto blocks = static_cast<unsigned>((rows + kMergeWarps - 1) / kMergeWarps);
  merge_splits_kernel<T, kHeadDim>
      <<<blocks, kMergeThreads>>>(p.partial_o, p.partial_lse, p.o, p.lse, rows, p.num_splits);
  COURSE_LAUNCH_CHECK();
}

// The checks of a launch: O(1), and the message strings are built only when one fails.
template <class T>
void decode_attention_impl(const DecodeArgs<T>& a, const PagedKv& kv, DecodePlan& plan) {
  using course::require;
  const char* f = "decode_attention: ";
  if (!kv.uploaded())
    require(false, std::string(f) + "the PagedKv was not made by upload_paged_kv()");
  if (plan.kv_id != kv.id())
    require(false, std::string(f) +
                       "the plan was not made by plan_decode() for this PagedKv (plan again after "
                       "each upload)");
  const CacheShape& shape = kv.shape();
  const int batch = kv.batch();
  // NOTE: upload_paged_kv and plan_decode checked these; checked again (cheap) because the
  // dispatch below divides by num_kv_heads and picks the kernel by head_dim and group size (a
  // starter's empty validate_decode, or a plan edited by hand, must not become a crash).
  const bool shape_ok = shape.num_kv_heads >= 1 &&
                        (shape.head_dim == 64 || shape.head_dim == 128) && a.num_qo_heads >= 1 &&
                        a.num_qo_heads % shape.num_kv_heads == 0 &&
                        a.num_qo_heads == plan.num_qo_heads && plan.batch == batch &&
                        plan.head_dim == shape.head_dim && batch >= 1 && batch <= 65535 &&
                        shape.num_kv_heads <= 65535;
  if (!shape_ok)
    require(false, std::string(f) + "num_qo_heads = " + std::to_string(a.num_qo_heads) +
                       " does not match the plan (" + std::to_string(plan.num_qo_heads) +
                       ") or the cache's shape: make the plan with plan_decode(kv, num_qo_heads)");
  const int ratio = a.num_qo_heads / shape.num_kv_heads;
  if (ratio != 1 && ratio != 4 && ratio != 8)
    require(false, std::string(f) + "num_qo_heads / num_kv_heads = " + std::to_string(ratio) +
                       " is not one of the compiled group sizes (1, 4, 8)");
  if (!(a.q && a.k_cache && a.v_cache && a.o && a.lse))
    require(false, std::string(f) + "a pointer is null");
  if (!(course::is_aligned(a.q, 16) && course::is_aligned(a.k_cache, 16) &&
        course::is_aligned(a.v_cache, 16) && course::is_aligned(a.o, 16)))
    require(false, std::string(f) +
                       "q, k_cache, v_cache and o must be 16-byte aligned (rows move in 16-byte "
                       "chunks)");
  if (!std::isfinite(a.scale)) require(false, std::string(f) + "scale must be finite");
  const int splits = plan.num_splits;
  if (splits < 1 || splits > kMaxSplits)
    require(false, std::string(f) + "the plan's num_splits is not 1 .. kMaxSplits");
  KernelParams<T> p{};
  p.q = a.q;
  p.k_cache = a.k_cache;
  p.v_cache = a.v_cache;
  p.o = a.o;
  p.lse = a.lse;
  p.indptr = kv.indptr();
  p.page_indices = kv.page_indices();
  p.last_page_len = kv.last_page_len();
  p.page_size = shape.page_size;
  const PageDivisor divisor = page_divisor(shape.page_size);
  p.page_magic = divisor.magic;
  p.page_shift = divisor.shift;
  p.num_kv_heads = shape.num_kv_heads;
  p.num_qo_heads = a.num_qo_heads;
  p.num_splits = splits;
  p.scale_log2 = a.scale * kLog2e;
  if (splits > 1) {
    const std::size_t lse_floats = static_cast<std::size_t>(batch) * a.num_qo_heads * splits;
    const std::size_t o_floats = lse_floats * shape.head_dim;
    if (plan.workspace.partial_o.size() < o_floats ||
        plan.workspace.partial_lse.size() < lse_floats)
      require(false, std::string(f) +
                         "the plan's workspace is too small for its splits (make it with "
                         "plan_decode)");
    p.partial_o = plan.workspace.partial_o.data();
    p.partial_lse = plan.workspace.partial_lse.data();
  }
  if (shape.head_dim == 64)
    launch_all<T, 64>(p, batch, ratio);
  else
    launch_all<T, 128>(p, batch, ratio);
}

}  // namespace

DecodePlan plan_decode(const PagedKv& kv, int num_qo_heads, int num_splits) {
  using course::require;
  using std::to_string;
  const std::string f = "plan_decode: ";
  require(kv.uploaded(), f + "the PagedKv was not made by upload_paged_kv()");
  const CacheShape& shape = kv.shape();
  require(num_qo_heads >= 1 && shape.num_kv_heads >= 1 && num_qo_heads % shape.num_kv_heads == 0,
          f + "num_qo_heads = " + to_string(num_qo_heads) +
              " is not a positive multiple of num_kv_heads = " + to_string(shape.num_kv_heads));
  const int ratio = num_qo_heads / shape.num_kv_heads;
  require(ratio == 1 || ratio == 4 || ratio == 8,
          f + "num_qo_heads / num_kv_heads = " + to_string(ratio) +
              " is not one of the compiled group sizes (1, 4, 8)");
  require(num_splits == kAutoSplits || (num_splits >= 1 && num_splits <= kMaxSplits),
          f + "num_splits = " + to_string(num_splits) + " must be kAutoSplits or 1 .. " +
              to_string(kMaxSplits));
  DecodePlan plan;
  plan.kv_id = kv.id();
  plan.batch = kv.batch();
  plan.num_qo_heads = num_qo_heads;
  plan.head_dim = shape.head_dim;
  plan.num_splits = num_splits == kAutoSplits
                        ? choose_num_splits(kv.batch(), shape.num_kv_heads, kv.max_len(),
                                            course::device_facts().sm_count)
                        : num_splits;
  if (plan.num_splits > 1) {
    const std::size_t lse_floats =
        static_cast<std::size_t>(kv.batch()) * num_qo_heads * plan.num_splits;
    plan.workspace.partial_lse = course::DeviceBuffer<float>(lse_floats);
    plan.workspace.partial_o = course::DeviceBuffer<float>(lse_floats * shape.head_dim);
  }
  return plan;
}

void decode_attention(const DecodeArgs<half>& args, const PagedKv& kv, DecodePlan& plan) {
  decode_attention_impl(args, kv, plan);
}

void decode_attention(const DecodeArgs<bfloat16>& args, const PagedKv& kv, DecodePlan& plan) {
  decode_attention_impl(args, kv, plan);
}

}  // namespace d11
