// >>> STARTER
//|// Day 12 — your kernel. Read lessons/d12_prefill_attention.md first; README.md in this folder
//|// lists the exercises. Replace each TODO block; keep the names, the template parameters and the
//|// launchers (the tests call them through lab.h). Check with:  course check d12
// === SOLUTION
// Day 12 — reference solution: FlashAttention-2-style prefill attention on mma.sync (Tensor Cores,
// any GPU from sm_80), over a variable-length batch, causal or not.
// <<<
#include <cuda.h>  // CUtensorMap and its enums only: the driver is reached through the runtime
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "course/check.h"
#include "course/cp_async.cuh"
#include "course/device.h"
#include "course/mbarrier.cuh"
#include "course/mma.cuh"
#include "course/vec.cuh"
#include "course/wgmma.cuh"
#include "lab.h"

namespace d12 {

// ---------------------------------------------------------------------------------------------
// The tiles (lesson §3). A block owns kBlockM = 128 query rows of one head of one sequence: 4 warps
// of 32 rows, two m16 tiles each, so that every K and V fragment a warp loads feeds two mma. It
// streams the sequence's keys and values in tiles of kBlockN rows (64 for head dim 128, 128 for
// head dim 64: 16 KiB of K and 16 KiB of V per tile either way). Shared memory: the Q tile (read
// by ldmatrix at every key tile, reused at the end to stage O), then kStages K tiles and kStages V
// tiles, every tile XOR-swizzled (swizzled_chunk): 96 KiB, two blocks (8 warps) per SM.
constexpr int kWarpSize = 32;
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kRowsPerWarp = kBlockM / kWarps;
constexpr int kMTiles = kRowsPerWarp / 16;  // m16 tiles of a warp's rows
constexpr int kStages = 2;       // K/V double buffer: tile t + 1 lands while tile t is computed
constexpr int kChunkElems = 8;   // 16 bytes of a 16-bit type: what cp.async and ldmatrix move
constexpr int kSwizzleRows = 8;  // ldmatrix reads 8 rows of 16 bytes at a time
static_assert(kRowsPerWarp == 32, "each warp owns two m16 row tiles of the mma");
static_assert(kBlockM % kSwizzleRows == 0, "warps' rows start on a swizzle period");

template <int kHeadDim>
constexpr int kBlockN = block_n(kHeadDim);

template <int kHeadDim>
constexpr std::size_t smem_bytes() {
  return sizeof(std::uint16_t) * kHeadDim * (kBlockM + 2 * kStages * kBlockN<kHeadDim>);
}

constexpr float kLog2e = 1.4426950408889634f;
[[maybe_unused]] constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -INFINITY;

// ---------------------------------------------------------------------------------------------
// Given: the order of the blocks (lesson §8.3). The grid is 1-D: ranks x units blocks, a unit
// being one head of one sequence (unit = sequence * num_heads + head) and its `ranks` query tiles.
// Units are taken kGroupUnits at a time (Day 10's grouped tile order), and within a group the
// blocks go rank by rank: rank 0 of each unit of the group, then rank 1, ... The blocks running at
// once are thus a few ranks of kGroupUnits units, which read the same keys and values: those stay
// in the L2 (8 heads of 4096 keys of dim 128: 16 MiB of K and V) instead of coming from DRAM once
// per block. And rank 0, the query tile that starts first, is chosen in Exercise 5. Groups of 1,
// 4, 8, 16, 32 and 128 units were measured on the H100 (lesson §8.3): 8 was best for the causal
// headline of both kernels; 128 (rank-major over the whole grid) leaves the Hopper kernel
// DRAM-bound at 64% of its speed.
constexpr int kGroupUnits = 8;
struct BlockWork {
  int unit, rank;
};
__host__ __device__ inline BlockWork block_work(int block, int ranks, int units) {
  const int per_group = kGroupUnits * ranks;
  const int first = block / per_group * kGroupUnits;
  const int rows = units - first < kGroupUnits ? units - first : kGroupUnits;  // the last group
  const int in_group = block % per_group;
  return BlockWork{first + in_group % rows, in_group / rows};
}

// ---------------------------------------------------------------------------------------------
// Exercise 1 — the key tiles of a block (lesson §4). Query row r (in its sequence) sees keys
// 0 .. r + len_kv - len_q under the causal mask (bottom-right), all len_kv keys without it.
// The block's last real row sees the most keys: the tiles up to its last visible key are visited,
// the rest skipped. The block's FIRST row sees the fewest: every tile entirely at or below its
// diagonal is visible to every row of the block, so the mask starts at the first tile reaching
// past it (or at the partial last tile, whose columns past len_kv must not count).
__host__ __device__ inline KvTileRange tile_range(int q0, int len_q, int len_kv, bool causal,
                                                  int block_m, int block_n) {
  // >>> STARTER d12.1
  //|  // TODO(d12.1) (lesson §4): with offset = len_kv - len_q, the block's last real row
  //|  // (min(q0 + block_m, len_q) - 1) sees keys up to last_row + offset under the causal mask, all
  //|  // len_kv without it: tiles = ceil(end / block_n) for that end (0 when end <= 0). first_masked:
  //|  // the partial last tile len_kv / block_n, or, when causal, the first tile reaching past row q0's
  //|  // last key (q0 + offset + 1) / block_n (0 when q0 + offset + 1 <= 0), whichever comes first,
  //|  // and never more than tiles.
  //|  return KvTileRange{};  // {-1, -1}: not written yet
  // === SOLUTION
  const int offset = len_kv - len_q;  // query r sits at key position r + offset
  const int last_row = (q0 + block_m < len_q ? q0 + block_m : len_q) - 1;
  int end = len_kv;  // one past the last key some row of the block sees
  if (causal && last_row + offset + 1 < end) end = last_row + offset + 1;
  KvTileRange range;
  range.tiles = end > 0 ? (end + block_n - 1) / block_n : 0;
  int first = len_kv / block_n;  // the partial last tile (== the count of whole ones if none)
  if (causal) {
    const int first_row_end = q0 + offset + 1;  // keys row q0 sees: 0 .. first_row_end - 1
    const int diagonal = first_row_end > 0 ? first_row_end / block_n : 0;
    if (diagonal < first) first = diagonal;
  }
  range.first_masked = first < range.tiles ? first : range.tiles;
  return range;
  // <<< d12.1
}

// Exercise 2 — the swizzle (lesson §5): chunk c of row r at position c ^ (r % 8) of its row.
// Rows are chunks_per_row = 8 or 16 chunks (128 or 256 bytes), a multiple of the 8 chunks of a
// 128-byte bank cycle, so a chunk's bank group is its position mod 8: the 8 rows an ldmatrix
// reads at one logical chunk get 8 different positions mod 8, i.e. 8 different bank groups.
__host__ __device__ inline int swizzle(int row, int chunk, int chunks_per_row) {
  // >>> STARTER d12.2
  //|  // TODO(d12.2) (lesson §5): row * chunks_per_row + (chunk XOR (row % kSwizzleRows)).
  //|  return -1;
  // === SOLUTION
  return row * chunks_per_row + (chunk ^ (row % kSwizzleRows));
  // <<< d12.2
}

// ---------------------------------------------------------------------------------------------
// Given: the PTX the kernel is built from (lesson §6). cp.async comes from course/cp_async.cuh
// (Day 7): cp_async_16_zfill zero-fills the rows past the end of a sequence, so that nothing (in
// particular no NaN from stale memory multiplied by a zero probability) reaches the products.
using course::cp_async_16_zfill;
using course::cp_async_commit;
using course::cp_async_wait;
using course::smem_address;

// ldmatrix.x4 (.trans) and mma.sync.m16n8k16 for bfloat16 and half, as written on Day 9:
// course/mma.cuh, which also draws the fragments each lane holds.
using course::ldmatrix_x4;
using course::ldmatrix_x4_trans;
using course::mma_16816;

// Two floats rounded to T (to nearest) in one 32-bit register: `lo` in the low half, which is
// the element of the lower column index in every fragment above.
template <class T>
__device__ __forceinline__ std::uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  }
}

// 2^x in one MUFU.EX2 (relative error ~2^-22; ex2(-inf) = +0, which the masked scores rely on).
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Given: rows 0 .. kRows - 1 of a tile, row r from src + r * row_stride (elements), into the
// swizzled tile_s; rows >= rows_valid are zero-filled. Thread x copies chunk x % kChunks of rows
// x / kChunks + i * kRowsPerPass: consecutive threads take consecutive chunks of a row, so a warp
// reads whole 16-byte-aligned row segments from global memory. kRowsPerPass is a multiple of the
// swizzle's 8 rows, so a thread's chunk lands at the same XOR-ed place in each of its rows and its
// addresses step by constants (computing each row's swizzle anew kept 16 addresses live in
// registers, which the kernel had to spill).
template <int kRows, int kHeadDim, class T>
__device__ __forceinline__ void load_tile(T* tile_s, const T* __restrict__ src,
                                          std::int64_t row_stride, int rows_valid) {
  constexpr int kChunks = kHeadDim / kChunkElems;
  constexpr int kRowsPerPass = kThreads / kChunks;
  static_assert(
      kThreads % kChunks == 0 && kRowsPerPass % kSwizzleRows == 0 && kRows % kRowsPerPass == 0,
      "whole passes of whole rows, each a multiple of the swizzle period");
  // The thread's index made opaque: recomputed at every call, its addresses need no register
  // across the kernel's loop (kept live, they were what the kernel spilled).
  int tid = static_cast<int>(threadIdx.x);
  asm volatile("" : "+r"(tid));
  const int r0 = tid / kChunks, c = tid % kChunks;
  T* dst = tile_s + swizzle(r0, c, kChunks) * kChunkElems;
  const T* from = src + r0 * row_stride + c * kChunkElems;
  // Below 2^31 elements: check_prefill_args bounds the heads.
  const int step = kRowsPerPass * static_cast<int>(row_stride);
#pragma unroll
  for (int i = 0; i < kRows / kRowsPerPass; ++i) {
    const bool valid = r0 + i * kRowsPerPass < rows_valid;
    cp_async_16_zfill(dst + i * kRowsPerPass * kChunks * kChunkElems, valid ? from : src, valid);
    from += step;
  }
}

// ---------------------------------------------------------------------------------------------
// Exercises 3-5 — prefill_1_mma (lesson §3, §6-§8).
// Grid: one block per query tile of every head of every sequence, in block_work's order: block
// computes query rows q0 .. q0 + 127 of its head and sequence, with q0 = 128 * (ranks - 1 - rank):
// the LAST tiles, which have the most keys to visit under the causal mask, start first, so the
// short ones fill the gaps at the end instead of one long block finishing alone (lesson §8.3).
// Warp w owns rows 32w .. 32w + 31 of the block, as two m16 tiles mi = 0, 1; in every fragment
// below lane l holds rows g = l / 4 and g + 8 of an m16 tile, and columns 2t, 2t + 1 (t = l % 4)
// of every 8-column tile. Per key tile: S = Q K^T (32 x kBlockN per warp, float32 in registers;
// each K fragment feeds both m16 tiles), the mask on the tiles that need it, the online softmax
// (running max m and sum l per row, O rescaled when m grows), P = exp2(S * scale * log2 e - m *
// scale * log2 e) rounded to 16 bits IN REGISTERS as the A operand of O += P V (the accumulator
// layout of S is the A layout of P: lesson §7.2), each V fragment again feeding both m16 tiles.
// Registers are the limit (lesson §6.4): O is 128 float32 per lane at head dim 128, S 64.
template <class T, int kHeadDim>
__global__ void __launch_bounds__(kThreads, 2) prefill_1_mma_kernel(const PrefillArgs<T> args) {
  constexpr int kN = kBlockN<kHeadDim>;
  [[maybe_unused]] constexpr int kChunks = kHeadDim / kChunkElems;  // 16-byte chunks per row
  [[maybe_unused]] constexpr int kQkSteps = kHeadDim / 16;          // k16 steps of Q K^T
  constexpr int kSTiles = kN / 8;                                   // n8 tiles of S (over the keys)
  [[maybe_unused]] constexpr int kPvSteps = kN / 16;  // k16 steps of P V (over the keys)
  constexpr int kOTiles = kHeadDim / 8;               // n8 tiles of O (over the head dim)
  static_assert(kSTiles % 2 == 0 && kOTiles % 2 == 0, "ldmatrix.x4 feeds two n8 tiles");

  extern __shared__ __align__(128) unsigned char smem[];
  T* q_s = reinterpret_cast<T*>(smem);     // [kBlockM][kHeadDim], swizzled
  T* k_s = q_s + kBlockM * kHeadDim;       // [kStages][kN][kHeadDim], swizzled
  T* v_s = k_s + kStages * kN * kHeadDim;  // [kStages][kN][kHeadDim], swizzled

  // The block's sequence, head and rows.
  const int ranks = static_cast<int>(gridDim.x) / (args.num_heads * args.batch);
  const BlockWork work =
      block_work(static_cast<int>(blockIdx.x), ranks, args.num_heads * args.batch);
  const int head = work.unit % args.num_heads, seq = work.unit / args.num_heads;
  const std::int64_t q_start = args.cu_seqlens_q[seq], kv_start = args.cu_seqlens_kv[seq];
  const int len_q = args.cu_seqlens_q[seq + 1] - static_cast<int>(q_start);
  const int len_kv = args.cu_seqlens_kv[seq + 1] - static_cast<int>(kv_start);

  // Exercise 5 (lesson §8): the longest-first order of the query tiles, and the KV head that
  // this query head shares with the num_heads / num_kv_heads heads of its group (GQA).
  // >>> STARTER d12.5
  //|  // TODO(d12.5) (lesson §8.3): start the LAST query tiles first: rank 0 (the blocks that start
  //|  // first) takes the last tile, q0 = kBlockM * (ranks - 1 - work.rank). And the KV head of a group
  //|  // of num_heads / num_kv_heads query heads is head / (num_heads / num_kv_heads); the
  //|  // placeholder below is right only without GQA.
  //|  const int q0 = kBlockM * work.rank;
  //|  const int kv_head = head % args.num_kv_heads;
  // === SOLUTION
  const int q0 = kBlockM * (ranks - 1 - work.rank);
  const int kv_head = head / (args.num_heads / args.num_kv_heads);
  // <<< d12.5

  // INVARIANT: q0 is the same for the whole block, so the block leaves whole (the barriers
  // below see every thread).
  if (q0 >= len_q) return;
  [[maybe_unused]] const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  [[maybe_unused]] const int g = lane / 4, tq = lane % 4;  // rows g, g + 8; columns 2tq, 2tq + 1
  const std::int64_t q_stride = static_cast<std::int64_t>(args.num_heads) * kHeadDim;
  const std::int64_t kv_stride = static_cast<std::int64_t>(args.num_kv_heads) * kHeadDim;
  const T* q_g = args.q + (q_start + q0) * q_stride + static_cast<std::int64_t>(head) * kHeadDim;
  const T* k_g = args.k + kv_start * kv_stride + static_cast<std::int64_t>(kv_head) * kHeadDim;
  const T* v_g = args.v + kv_start * kv_stride + static_cast<std::int64_t>(kv_head) * kHeadDim;
  const KvTileRange range = tile_range(q0, len_q, len_kv, args.causal, kBlockM, kN);
  [[maybe_unused]] const int offset = len_kv - len_q;  // row r sees keys <= r + offset (causal)
  const float scale_log2 = args.scale * kLog2e;
  [[maybe_unused]] const std::uint32_t q_addr = smem_address(q_s), k_addr = smem_address(k_s),
                                       v_addr = smem_address(v_s);

  [[maybe_unused]] float o_acc[kMTiles][kOTiles][4] = {};  // O, unnormalised, float32
  // m (raw scores) and this lane's part of l, of rows g and g + 8 of each m16 tile.
  [[maybe_unused]] float row_max[kMTiles][2] = {{kNegInf, kNegInf}, {kNegInf, kNegInf}};
  [[maybe_unused]] float row_sum[kMTiles][2] = {};

  if (range.tiles > 0) {
    // >>> STARTER d12.3a
    //|    // TODO(d12.3a) (lesson §5, §6.2): the prologue. Issue the Q tile (load_tile<kBlockM,
    //|    // kHeadDim>(q_s, q_g, q_stride, len_q - q0)) and commit; issue K and V tile 0 (load_tile<kN,
    //|    // kHeadDim> into k_s and v_s, len_kv valid rows) and commit.
    // === SOLUTION
    // Prologue: Q (group 0) and key tiles 0 .. kStages - 2 (one group each, empty past the
    // last tile) in flight.
    load_tile<kBlockM, kHeadDim>(q_s, q_g, q_stride, len_q - q0);
    cp_async_commit();
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < range.tiles) {
        const int kv0 = s * kN;
        load_tile<kN, kHeadDim>(k_s + s * kN * kHeadDim, k_g + kv0 * kv_stride, kv_stride,
                                len_kv - kv0);
        load_tile<kN, kHeadDim>(v_s + s * kN * kHeadDim, v_g + kv0 * kv_stride, kv_stride,
                                len_kv - kv0);
      }
      cp_async_commit();
    }
    // <<< d12.3a

    for (int t = 0; t < range.tiles; ++t) {
      // >>> STARTER d12.3b
      //|      // TODO(d12.3b) (lesson §5): the double buffer. Wait for tile t (cp_async_wait<0>()), ONE
      //|      // __syncthreads() (every thread's copies landed, Q's too; tile t - 1's stage is free), then
      //|      // issue K and V tile t + 1 (if any) into stage (t + 1) % kStages, rows kv0 = (t + 1) * kN
      //|      // on, and commit, even when there was nothing to issue.
      //|      [[maybe_unused]] const std::uint32_t kt_addr =
      //|          k_addr + (t % kStages) * kN * kHeadDim * sizeof(T);
      //|      [[maybe_unused]] const std::uint32_t vt_addr =
      //|          v_addr + (t % kStages) * kN * kHeadDim * sizeof(T);
      // === SOLUTION
      // The lane's parts of the ldmatrix addresses: row l % 8 of a matrix (which is also the
      // row's swizzle, every matrix starting on a multiple of 8 rows), and the bits l / 16 and
      // (l / 8) % 2 that pick the matrix. The empty asm makes them opaque once per tile, so that
      // the compiler recomputes each address (2-3 integer instructions) next to its ldmatrix
      // instead of keeping 24 precomputed ones live across the loop: at 255 registers it spilled
      // them, and the loop ran 20 % slower (lesson §6.4).
      int r8 = lane % 8, hi = lane / 16, mid = lane / 8 % 2;
      asm volatile("" : "+r"(r8), "+r"(hi), "+r"(mid));
      cp_async_wait<kStages - 2>();  // tile t has landed (this thread's copies) ...
      __syncthreads();               // ... every thread's; and tile t - 1's stage is no longer read
      if (t + kStages - 1 < range.tiles) {  // into the stage tile t - 1 used
        const int next = (t + kStages - 1) % kStages;
        const int kv0 = (t + kStages - 1) * kN;
        load_tile<kN, kHeadDim>(k_s + next * kN * kHeadDim, k_g + kv0 * kv_stride, kv_stride,
                                len_kv - kv0);
        load_tile<kN, kHeadDim>(v_s + next * kN * kHeadDim, v_g + kv0 * kv_stride, kv_stride,
                                len_kv - kv0);
      }
      cp_async_commit();  // always, even empty: one group per tile in every thread
      const std::uint32_t kt_addr = k_addr + (t % kStages) * kN * kHeadDim * sizeof(T);
      const std::uint32_t vt_addr = v_addr + (t % kStages) * kN * kHeadDim * sizeof(T);
      // <<< d12.3b

      // >>> STARTER d12.3c
      //|      // TODO(d12.3c) (lesson §6.2, §6.3): S = Q K^T into s_acc. For every k16 step kk of the head
      //|      // dim: this warp's two Q fragments (ldmatrix_x4; for m16 tile mi, lane l addresses row
      //|      // warp * 32 + mi * 16 + l % 8 + (l / 8) % 2 * 8, chunk 2 kk + l / 16); then for every pair
      //|      // nn of n8 key tiles one ldmatrix_x4 of K (no .trans: K stored [key][dim] is the
      //|      // column-major B operand) where lane l addresses key 16 nn + l % 8 + l / 16 * 8, chunk
      //|      // 2 kk + (l / 8) % 2, and for each mi mma_16816 into s_acc[mi][2 nn] with b[0], b[1] and
      //|      // into s_acc[mi][2 nn + 1] with b[2], b[3]. A row's byte address: tile + 16 * swizzle(row,
      //|      // chunk, kChunks). (Lesson §6.4: what to do when ptxas spills.)
      // === SOLUTION
      // S = Q K^T. Q's A fragments of step kk: matrix i = rows 8 (i % 2) .. of the m16 tile,
      // chunk 2 kk + i / 2. K is stored [key][dim], which IS the column-major B operand: ldmatrix
      // without .trans; matrix i = keys 8 (i / 2) .. of the pair, chunk 2 kk + i % 2 -> b0, b1 of
      // n8 tile 2 nn, then b0, b1 of tile 2 nn + 1. Byte address = 16 * swizzle(row, chunk).
      // <<< d12.3c
      [[maybe_unused]] float s_acc[kMTiles][kSTiles][4] = {};
      // >>> STARTER d12.3c
      // === SOLUTION
      // Unrolled at head dim 128; at 64, whose S is twice as wide (128 keys: 128 float32 per
      // lane), one step at a time, or ptxas spills.
#pragma unroll(kHeadDim == 128 ? kQkSteps : 1)
      for (int kk = 0; kk < kQkSteps; ++kk) {
        std::uint32_t qa[kMTiles][4];
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi) {
          const int row = warp * kRowsPerWarp + mi * 16 + mid * 8 + r8;
          ldmatrix_x4(qa[mi], q_addr + 16u * (row * kChunks + ((2 * kk + hi) ^ r8)));
        }
#pragma unroll
        for (int nn = 0; nn < kSTiles / 2; ++nn) {
          const int key = 16 * nn + hi * 8 + r8;
          std::uint32_t b[4];
          ldmatrix_x4(b, kt_addr + 16u * (key * kChunks + ((2 * kk + mid) ^ r8)));
#pragma unroll
          for (int mi = 0; mi < kMTiles; ++mi) {
            mma_16816<T>(s_acc[mi][2 * nn], qa[mi], b[0], b[1]);
            mma_16816<T>(s_acc[mi][2 * nn + 1], qa[mi], b[2], b[3]);
          }
        }
      }
      // <<< d12.3c

      // >>> STARTER d12.4
      //|      // TODO(d12.4) (lesson §4): only when t >= range.first_masked: s_acc[mi][j][e] = -inf where
      //|      // key col = t * kN + 8 j + 2 tq + e % 2 is >= len_kv or, when args.causal, > row + offset,
      //|      // with row = q0 + warp * 32 + mi * 16 + g + (e / 2) * 8.
      // === SOLUTION
      // The mask, only on the tiles that need it (lesson §4): keys past len_kv, and keys above
      // the causal diagonal, get -inf, which exp2 turns into a probability of exactly 0.
      if (t >= range.first_masked) {
        const int kv0 = t * kN;
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
          for (int j = 0; j < kSTiles; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int row = q0 + warp * kRowsPerWarp + mi * 16 + g + (e / 2) * 8;  // in the seq.
              const int col = kv0 + 8 * j + 2 * tq + e % 2;  // key in the sequence
              if (col >= len_kv || (args.causal && col > row + offset)) s_acc[mi][j][e] = kNegInf;
            }
          }
      }
      // <<< d12.4

      // >>> STARTER d12.3d
      //|      // TODO(d12.3d) (lesson §3.3): the online softmax of the tile, for each m16 tile mi. The
      //|      // tile's max of rows g (e = 0, 1) and g + 8 (e = 2, 3), over this lane's columns, then over
      //|      // the quad with __shfl_xor_sync 1 and 2. new max m; max_scaled = m * scale_log2 (0 while
      //|      // m = -inf); correction = fast_exp2(old m * scale_log2 - max_scaled); row_sum *=
      //|      // correction; O *= correction (skip it when no row's max changed); p = fast_exp2(s *
      //|      // scale_log2 - max_scaled) back into s_acc, added to row_sum.
      // === SOLUTION
      // The online softmax (lesson §3.3). A row's max over the tile: this lane's columns, then
      // the 4 lanes of the quad that share the row (lanes 4g .. 4g + 3: xor 1 and xor 2).
      float max_scaled[kMTiles][2], correction[kMTiles][2];
      bool grew = false;
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi) {
        float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
        for (int j = 0; j < kSTiles; ++j) {
          tile_max[0] = fmaxf(tile_max[0], fmaxf(s_acc[mi][j][0], s_acc[mi][j][1]));
          tile_max[1] = fmaxf(tile_max[1], fmaxf(s_acc[mi][j][2], s_acc[mi][j][3]));
        }
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
          tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
          const float new_max = fmaxf(row_max[mi][r], tile_max[r]);
          // A row with no visible key so far keeps m = -inf; subtracting 0 instead keeps
          // (-inf) - (-inf) = NaN out of exp2 (every p of that row is exp2(-inf) = 0).
          max_scaled[mi][r] = new_max == kNegInf ? 0.0f : new_max * scale_log2;
          correction[mi][r] = fast_exp2(row_max[mi][r] * scale_log2 - max_scaled[mi][r]);
          row_max[mi][r] = new_max;
          row_sum[mi][r] *= correction[mi][r];
          grew = grew || correction[mi][r] != 1.0f;
        }
      }
      // O is rescaled only when some row's max grew (correction 1 leaves it as it is): one vote,
      // so the warp takes the branch together.
      if (__any_sync(0xffffffffu, grew)) {
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
          for (int d = 0; d < kOTiles; ++d) {
#pragma unroll
            for (int e = 0; e < 4; ++e) o_acc[mi][d][e] *= correction[mi][e / 2];
          }
      }
#pragma unroll
      for (int mi = 0; mi < kMTiles; ++mi)
#pragma unroll
        for (int j = 0; j < kSTiles; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            // One FFMA and one MUFU.EX2 per score: scale and log2 e folded into scale_log2.
            const float p = fast_exp2(s_acc[mi][j][e] * scale_log2 - max_scaled[mi][e / 2]);
            s_acc[mi][j][e] = p;
            row_sum[mi][e / 2] += p;
          }
        }
        // <<< d12.3d

        // >>> STARTER d12.3e
        //|      // TODO(d12.3e) (lesson §7.2): O += P V. For every k16 step kk of the keys, m16 tile mi's A
        //|      // fragment is {pack2<T>(s_acc[mi][2kk][0], [1]), pack2<T>(s_acc[mi][2kk][2], [3]), the same
        //|      // of s_acc[mi][2kk + 1]}; for every pair dd of n8 dim tiles one ldmatrix_x4_trans of V
        //|      // where lane l addresses key 16 kk + l % 8 + (l / 8) % 2 * 8, chunk 2 dd + l / 16; for each
        //|      // mi, mma_16816 into o_acc[mi][2 dd] with b[0], b[1] and o_acc[mi][2 dd + 1] with b[2], b[3].
        // === SOLUTION
        // O += P V. P's A fragment of key step kk is S's accumulators of n8 tiles 2 kk and
        // 2 kk + 1, rounded to T: no shared memory. V is stored [key][dim]: the B operand (k = key,
        // n = dim) needs two keys of one dim per register, so ldmatrix .trans; matrix i = keys
        // 8 (i % 2) .. of the step, chunk 2 dd + i / 2 -> b0, b1 of dim tile 2 dd, then 2 dd + 1.
#pragma unroll
      for (int kk = 0; kk < kPvSteps; ++kk) {
        std::uint32_t a[kMTiles][4];
#pragma unroll
        for (int mi = 0; mi < kMTiles; ++mi) {
          a[mi][0] = pack2<T>(s_acc[mi][2 * kk][0], s_acc[mi][2 * kk][1]);
          a[mi][1] = pack2<T>(s_acc[mi][2 * kk][2], s_acc[mi][2 * kk][3]);
          a[mi][2] = pack2<T>(s_acc[mi][2 * kk + 1][0], s_acc[mi][2 * kk + 1][1]);
          a[mi][3] = pack2<T>(s_acc[mi][2 * kk + 1][2], s_acc[mi][2 * kk + 1][3]);
        }
#pragma unroll
        for (int dd = 0; dd < kOTiles / 2; ++dd) {
          const int key = 16 * kk + mid * 8 + r8;
          std::uint32_t b[4];
          ldmatrix_x4_trans(b, vt_addr + 16u * (key * kChunks + ((2 * dd + hi) ^ r8)));
#pragma unroll
          for (int mi = 0; mi < kMTiles; ++mi) {
            mma_16816<T>(o_acc[mi][2 * dd], a[mi], b[0], b[1]);
            mma_16816<T>(o_acc[mi][2 * dd + 1], a[mi], b[2], b[3]);
          }
        }
      }
      // <<< d12.3e
    }
    cp_async_wait<0>();  // nothing of this block is in flight when it writes and leaves
  }

  // >>> STARTER d12.3f
  //|  // TODO(d12.3f) (lesson §3.4): the epilogue, for every block (also one with no tile). Sum
  //|  // row_sum over the quad (__shfl_xor_sync 1 and 2). o = o_acc / l (0 when l == 0), rounded with
  //|  // pack2<T>, written for the rows < len_q of o at (q_start + row) * q_stride + head * kHeadDim
  //|  // (16-byte stores through this warp's own 32 rows of q_s are fastest: __syncwarp() first, then
  //|  // swizzled like Q, then a __syncwarp()); lse[head * total_q + q_start + row] = (m * scale_log2 +
  //|  // log2 l) * kLn2, or -inf when l == 0, by the lanes with tq == 0.
  // === SOLUTION
  // The epilogue (lesson §3.4): l is the quad's sum; O / l rounded to T, staged in this warp's
  // own rows of the Q tile (only this warp ever read them: the __syncwarp makes sure its last
  // ldmatrix is done) and written with 16-byte stores; lse = m * scale + ln l. A row with no
  // visible key has l = 0: o = 0 and lse = -inf.
  __syncwarp();
  T* o_s = q_s + warp * kRowsPerWarp * kHeadDim;  // this warp's 32 rows, swizzled as Q's
#pragma unroll
  for (int mi = 0; mi < kMTiles; ++mi) {
    float inv_sum[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_sum[mi][r] += __shfl_xor_sync(0xffffffffu, row_sum[mi][r], 1);
      row_sum[mi][r] += __shfl_xor_sync(0xffffffffu, row_sum[mi][r], 2);
      inv_sum[r] = row_sum[mi][r] > 0.0f ? 1.0f / row_sum[mi][r] : 0.0f;
    }
#pragma unroll
    for (int d = 0; d < kOTiles; ++d) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = mi * 16 + g + 8 * r;
        *reinterpret_cast<std::uint32_t*>(o_s + swizzle(row, d, kChunks) * kChunkElems + 2 * tq) =
            pack2<T>(o_acc[mi][d][2 * r] * inv_sum[r], o_acc[mi][d][2 * r + 1] * inv_sum[r]);
      }
    }
    if (tq == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int q_row = q0 + warp * kRowsPerWarp + mi * 16 + g + 8 * r;
        if (q_row < len_q)
          args.lse[static_cast<std::int64_t>(head) * args.total_q + q_start + q_row] =
              row_sum[mi][r] > 0.0f ? (row_max[mi][r] * scale_log2 + __log2f(row_sum[mi][r])) * kLn2
                                    : kNegInf;
      }
    }
  }
  __syncwarp();  // the warp's staged rows are complete before its lanes read them back
  // NOTE: 16 bytes as a Vec of four 32-bit words, not of eight T: nvcc 13 copies a Vec<T, 8>
  // of a 16-bit T with four 4-byte stores here (the SASS shows STG.E, not STG.E.128).
  using Chunk = course::Vec<std::uint32_t, 4>;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp * kChunks / kWarpSize; ++i) {
    const int idx = i * kWarpSize + lane;
    const int row = idx / kChunks, c = idx % kChunks;  // row of the warp, chunk of the row
    const int q_row = q0 + warp * kRowsPerWarp + row;  // in the sequence
    if (q_row < len_q) {
      const Chunk v = *reinterpret_cast<const Chunk*>(o_s + swizzle(row, c, kChunks) * kChunkElems);
      *reinterpret_cast<Chunk*>(args.o + (q_start + q_row) * q_stride +
                                static_cast<std::int64_t>(head) * kHeadDim + c * kChunkElems) = v;
    }
  }
  // <<< d12.3f
}

// ---------------------------------------------------------------------------------------------
// Exercise 6 — Hopper (lesson §9). Given: the mbarrier, TMA and wgmma instructions as small
// functions, and the bounded wait of Day 7 (a phase that never completes makes the kernel record
// it and return; check_mbarrier_timeouts() turns that into an error with a message).
__device__ course::MbarrierTimeout g_mbarrier_timeout;

// Exercise 6a — the 64-bit wgmma matrix descriptor of a tile in shared memory, 128-byte swizzle
// (PTX ISA "Matrix Descriptor Format"): bits 0-13 the start address, 16-29 the leading byte
// offset, 32-45 the stride byte offset (each (x & 0x3FFFF) >> 4), 49-51 the base offset (0: every
// tile here starts on a 1024-byte boundary, where the swizzle pattern starts), 62-63 the swizzle
// mode (1: 128 bytes). Host and device share it: the test checks it on the host.
__host__ __device__ inline std::uint64_t descriptor_bits(std::uint32_t address, std::uint32_t lbo,
                                                         std::uint32_t sbo) {
  // >>> STARTER d12.6a
  //|  // TODO(d12.6a) (lesson §9.3): the four fields above, each (x & 0x3FFFF) >> 4 shifted to its bit,
  //|  // and 1 << 62 for the 128-byte swizzle.
  //|  return 0;
  // === SOLUTION
  const auto field = [](std::uint32_t x) { return static_cast<std::uint64_t>((x & 0x3FFFF) >> 4); };
  return field(address) | field(lbo) << 16 | field(sbo) << 32 | std::uint64_t{1} << 62;
  // <<< d12.6a
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
using course::fence_barrier_init;
using course::mbarrier_arrive;
using course::mbarrier_arrive_expect_tx;
using course::mbarrier_init;
// Waits for the phase `parity` of *bar for at most kMbarrierTimeoutNs; false when it gave up.
__device__ bool mbarrier_wait_bounded(std::uint64_t* bar, std::uint32_t parity,
                                      long long expected_bytes) {
  return course::mbarrier_wait_bounded<false, course::TimeoutBlock::kLinear>(
      bar, parity, expected_bytes, g_mbarrier_timeout, kMbarrierTimeoutNs);
}
// The box of a 3-D tensor map at (c0, c1, c2) = (column, head, row) to shared memory; its bytes
// count toward *bar's transaction count.
__device__ __forceinline__ void tma_load_3d(void* smem_dst, const CUtensorMap* map, int c0, int c1,
                                            int c2, std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(smem_address(smem_dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_address(bar))
      : "memory");
}

// The descriptor of a tile at `start` in shared memory (descriptor_bits of its address).
__device__ __forceinline__ std::uint64_t smem_descriptor(const void* start, std::uint32_t lbo,
                                                         std::uint32_t sbo) {
  return descriptor_bits(smem_address(start), lbo, sbo);
}
// wgmma.fence / commit_group / wait_group, and fence_registers: course/wgmma.cuh.
using course::fence_registers;
using course::wgmma_commit;
using course::wgmma_fence;
using course::wgmma_wait;
// Named barriers 1 and 2 (0 is __syncthreads'): course/mbarrier.cuh.
using course::named_barrier_arrive;
using course::named_barrier_sync;
// d (64 x 128, float32: 64 registers per thread) = or += A (64 x 16, shared memory, K-major) times
// B (16 x 128, shared memory, K-major), by the 128 threads of a warpgroup.
template <class T>
__device__ __forceinline__ void wgmma_ss_m64n128k16(float (&d)[64], std::uint64_t desc_a,
                                                    std::uint64_t desc_b, int accumulate) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n"
        " wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16\n"
        " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63},"
        " %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
  } else {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %66, 0;\n"
        " wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16\n"
        " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63},"
        " %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
  }
}
// d += A (64 x 16 in registers: a fragment per thread as mma.sync's, warp w owning rows
// 16w .. 16w + 15) times B (16 x 128, shared memory, MN-major: imm-trans-b = 1).
template <class T>
__device__ __forceinline__ void wgmma_rs_m64n128k16_trans_b(float (&d)[64],
                                                            const std::uint32_t (&a)[4],
                                                            std::uint64_t desc_b, int accumulate) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %69, 0;\n"
        " wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16\n"
        " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63},"
        " {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
  } else {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %69, 0;\n"
        " wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16\n"
        " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63},"
        " {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
  }
}
#endif

// prefill_2_wgmma (lesson §9): head dim 128, blocks of kBlockM = 128 query rows and key tiles of
// kHopperBlockN = 128, three warpgroups. Warpgroup 0 is the producer: its thread 0 loads the Q tile
// and, for every key tile, the K and V tiles with the TMA (boxes of 64 columns = 128 bytes, the
// widest the 128-byte swizzle takes: two per tile) into kHopperStages stages, each with a `full`
// mbarrier (counted in bytes) and an `empty` one (the consumers' 8 warps arrive when they are done
// with it). Warpgroups 1 and 2 are consumers of 64 query rows each: S = Q K^T by wgmma from shared
// memory, the mask and the online softmax of Exercises 3-4 on the accumulators (the same
// fragment layout per warp as mma.sync's), then O += P V by wgmma with P from registers and V
// N-major from shared memory. Every wait is bounded. Layout of a tile in shared memory: [64-column
// half][row][64], each half rows of 128 bytes swizzled by the TMA exactly as swizzle(r, c, 8).
constexpr int kHopperHeadDim = 128;
constexpr int kHopperBlockN = 128;
constexpr int kHopperStages = 3;  // 3 x 64 KiB of K and V + 32 KiB of Q: 225 of 227 KiB
constexpr int kHopperThreads = 3 * 128;
constexpr int kBoxCols = 64;                        // 128 bytes of a 16-bit type
constexpr int kHalves = kHopperHeadDim / kBoxCols;  // boxes per row of a tile
constexpr int kTileAlign = 1024;                    // the 128-byte swizzle's period
constexpr int kHalfBytes = kBlockM * kBoxCols * 2;  // one box of 128 rows: 16 KiB
constexpr int kTileBytes = kHalves * kHalfBytes;    // Q, K or V tile: 32 KiB
static_assert(kHopperBlockN == kBlockM, "K, V and Q tiles have the same shape here");
static_assert(kHalfBytes % kTileAlign == 0, "every box starts on a swizzle period");

constexpr std::size_t hopper_smem_bytes() {
  return kTileAlign + static_cast<std::size_t>(kTileBytes) * (1 + 2 * kHopperStages) +
         sizeof(std::uint64_t) * (1 + 2 * kHopperStages);
}

template <class T>
__global__ void __launch_bounds__(kHopperThreads, 1)
    prefill_2_wgmma_kernel(const PrefillArgs<T> args, const __grid_constant__ CUtensorMap q_map,
                           const __grid_constant__ CUtensorMap k_map,
                           const __grid_constant__ CUtensorMap v_map) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // >>> STARTER d12.6
  //|  // TODO(d12.6) (lesson §9): the Hopper kernel, as the comment above describes. Carve the dynamic
  //|  // shared memory from its first 1024-byte boundary: Q (kTileBytes), kHopperStages K tiles,
  //|  // kHopperStages V tiles, then the mbarriers q_full, full[stages] (1 arrival) and
  //|  // empty[stages] (8 arrivals: the consumer warps). Thread 0 inits them, fence_barrier_init(),
  //|  // __syncthreads() (the last block-wide barrier). Warpgroup 0 (setmaxnreg.dec 40): thread 0
  //|  // issues Q (two tma_load_3d boxes at (64 h, head, q_start + q0), expect kTileBytes), then for
  //|  // each tile waits for `empty` (bounded) from tile kHopperStages on, expects 2 * kTileBytes and
  //|  // issues K and V. Warpgroups 1-2 (setmaxnreg.inc 232): wait q_full, then per tile wait full[s],
  //|  // S by 8 wgmma_ss_m64n128k16 (descriptors: 16 / 1024, 32 bytes per k16 step, box kk / 4),
  //|  // mask and online softmax as in TODO(d12.3d) and (d12.4) on s_acc[4 j + e], P packed as
  //|  // mma.sync's A fragments, wgmma_fence(), 8 wgmma_rs_m64n128k16_trans_b (V at 2048 bytes per
  //|  // k16 step, descriptors kHalfBytes / 1024), commit, wgmma_wait<0>(), and one arrive on
  //|  // empty[s] per warp. The epilogue as TODO(d12.3f), straight from the registers. Correct first;
  //|  // then the speed-ups of lesson §9.5 (wgmma_wait<1>, the named barriers).
  // === SOLUTION
  extern __shared__ __align__(128) unsigned char smem[];
  const std::uint32_t base = smem_address(smem);
  unsigned char* tiles = smem + (kTileAlign - base % kTileAlign) % kTileAlign;
  unsigned char* q_s = tiles;                                     // [2][128][64]
  unsigned char* k_s = tiles + kTileBytes;                        // [stages][2][128][64]
  unsigned char* v_s = tiles + kTileBytes * (1 + kHopperStages);  // [stages][2][128][64]
  auto* bars = reinterpret_cast<std::uint64_t*>(tiles + kTileBytes * (1 + 2 * kHopperStages));
  std::uint64_t* q_full = bars;                     // Q has landed
  std::uint64_t* full = bars + 1;                   // [stages]: K and V of the stage landed
  std::uint64_t* empty = bars + 1 + kHopperStages;  // [stages]: the consumers are done with it
  constexpr int kConsumerWarps = 8;

  const int ranks = static_cast<int>(gridDim.x) / (args.num_heads * args.batch);
  const BlockWork work =
      block_work(static_cast<int>(blockIdx.x), ranks, args.num_heads * args.batch);
  const int head = work.unit % args.num_heads, seq = work.unit / args.num_heads;
  const int q0 = kBlockM * (ranks - 1 - work.rank);  // Exercise 5's longest-first order
  const int q_start = args.cu_seqlens_q[seq], kv_start = args.cu_seqlens_kv[seq];
  const int len_q = args.cu_seqlens_q[seq + 1] - q_start;
  const int len_kv = args.cu_seqlens_kv[seq + 1] - kv_start;
  if (q0 >= len_q) return;  // the whole block: no barrier below is left waiting
  const int kv_head = head / (args.num_heads / args.num_kv_heads);
  const KvTileRange range = tile_range(q0, len_q, len_kv, args.causal, kBlockM, kHopperBlockN);
  const int warpgroup = static_cast<int>(threadIdx.x) / 128;

  if (threadIdx.x == 0) {
    mbarrier_init(q_full, 1);
    for (int s = 0; s < kHopperStages; ++s) {
      mbarrier_init(&full[s], 1);                // the producer's arrive.expect_tx
      mbarrier_init(&empty[s], kConsumerWarps);  // one arrival per consumer warp
    }
    fence_barrier_init();
  }
  __syncthreads();  // the last block-wide barrier: the roles part here

  if (warpgroup == 0) {
    // The producer: one thread issues every copy. It needs few registers: the warpgroup gives
    // most of its share to the consumers (setmaxnreg: 40 + 2 x 232 per thread of a warpgroup
    // fits the 168 x 3 of the launch bound).
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (threadIdx.x == 0 && range.tiles > 0) {
      mbarrier_arrive_expect_tx(q_full, kTileBytes);
      for (int h = 0; h < kHalves; ++h)
        tma_load_3d(q_s + h * kHalfBytes, &q_map, h * kBoxCols, head, q_start + q0, q_full);
      for (int t = 0; t < range.tiles; ++t) {
        const int s = t % kHopperStages;
        // The (t / stages)-th use of stage s needs its previous use released.
        if (t >= kHopperStages && !mbarrier_wait_bounded(&empty[s], (t / kHopperStages - 1) % 2, 0))
          return;
        mbarrier_arrive_expect_tx(&full[s], 2 * kTileBytes);  // full boxes, zero-filled or not
        const int row = kv_start + t * kHopperBlockN;
        for (int h = 0; h < kHalves; ++h) {
          tma_load_3d(k_s + (s * kHalves + h) * kHalfBytes, &k_map, h * kBoxCols, kv_head, row,
                      &full[s]);
          tma_load_3d(v_s + (s * kHalves + h) * kHalfBytes, &v_map, h * kBoxCols, kv_head, row,
                      &full[s]);
        }
      }
    }
    return;
  }

  // A consumer: 64 rows, warp w of the warpgroup rows 16w .. 16w + 15 of them; lane l holds rows
  // g, g + 8 and columns 2 tq, 2 tq + 1 of every 8 columns (accumulator d[4 j + e]).
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  const int consumer = warpgroup - 1;
  const int warp = static_cast<int>(threadIdx.x) % 128 / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int g = lane / 4, tq = lane % 4;
  const int row0 = q0 + 64 * consumer + 16 * warp + g;  // in the sequence; and row0 + 8
  const int offset = len_kv - len_q;
  const float scale_log2 = args.scale * kLog2e;
  float o_acc[64] = {};
  float row_max[2] = {kNegInf, kNegInf};
  float row_sum[2] = {0.0f, 0.0f};

  // The loop is software-pipelined (lesson §9.5): in step t the warpgroup issues S_t = Q K_t^T and
  // O += P_{t-1} V_{t-1} back to back, waits for the first group only (wait_group 1), then runs
  // the mask and the softmax of tile t; wait_group 0 frees O and P_{t-1} (and stage t - 1). O is
  // rescaled by tile t's factor and P_t packed over P_{t-1} at the start of step t + 1, just
  // before its products are issued. The two consumers take turns to issue (ping-pong, below).
  if (range.tiles > 0) {
    if (!mbarrier_wait_bounded(q_full, 0, kTileBytes)) return;
    float s_acc[64];
    std::uint32_t p_frag[kHopperBlockN / 16][4];
    float correction[2];

    // S = Q K^T: 8 k16 steps over the head dim; step kk is 32 bytes into the rows of box kk / 4.
    // K-major with the 128-byte swizzle: leading offset unused (16), stride 1024 bytes (8 rows).
    const auto issue_s = [&](const unsigned char* kt_s) {
#pragma unroll
      for (int kk = 0; kk < kHopperHeadDim / 16; ++kk) {
        const int box = kk / 4, bytes = (kk % 4) * 32;
        const std::uint64_t desc_q =
            smem_descriptor(q_s + box * kHalfBytes + consumer * 64 * 128 + bytes, 16, 1024);
        const std::uint64_t desc_k = smem_descriptor(kt_s + box * kHalfBytes + bytes, 16, 1024);
        wgmma_ss_m64n128k16<T>(s_acc, desc_q, desc_k, kk > 0 ? 1 : 0);
      }
      wgmma_commit();
    };
    // O += P V: 8 k16 steps over the keys; step kk starts 16 rows (2048 bytes) into V's boxes.
    // MN-major with the 128-byte swizzle: leading offset = the next 64 columns (the other box),
    // stride = the next 8 keys (1024 bytes).
    const auto issue_pv = [&](const unsigned char* vt_s) {
#pragma unroll
      for (int kk = 0; kk < kHopperBlockN / 16; ++kk) {
        const std::uint64_t desc_v = smem_descriptor(vt_s + kk * 16 * 128, kHalfBytes, 1024);
        wgmma_rs_m64n128k16_trans_b<T>(o_acc, p_frag[kk], desc_v, 1);
      }
      wgmma_commit();
    };
    // The mask and the online softmax of tile t on s_acc (which ends holding P in float32), the
    // running max and sum updated, and the factor O must be rescaled by. O is not touched here.
    const auto softmax = [&](int t) {
      if (t >= range.first_masked) {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = row0 + (e / 2) * 8;
            const int col = t * kHopperBlockN + 8 * j + 2 * tq + e % 2;
            if (col >= len_kv || (args.causal && col > row + offset)) s_acc[4 * j + e] = kNegInf;
          }
        }
      }
      float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        tile_max[0] = fmaxf(tile_max[0], fmaxf(s_acc[4 * j], s_acc[4 * j + 1]));
        tile_max[1] = fmaxf(tile_max[1], fmaxf(s_acc[4 * j + 2], s_acc[4 * j + 3]));
      }
      float max_scaled[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
        const float new_max = fmaxf(row_max[r], tile_max[r]);
        max_scaled[r] = new_max == kNegInf ? 0.0f : new_max * scale_log2;
        correction[r] = fast_exp2(row_max[r] * scale_log2 - max_scaled[r]);
        row_max[r] = new_max;
        row_sum[r] *= correction[r];
      }
#pragma unroll
      for (int i = 0; i < 64; ++i) {
        s_acc[i] = fast_exp2(s_acc[i] * scale_log2 - max_scaled[(i % 4) / 2]);
        row_sum[(i % 4) / 2] += s_acc[i];
      }
    };
    // P rounded to T as mma.sync's A fragments: k16 step kk = n8 tiles 2 kk and 2 kk + 1.
    const auto pack_p = [&] {
#pragma unroll
      for (int kk = 0; kk < kHopperBlockN / 16; ++kk) {
        const float* p = s_acc + 8 * kk;
        p_frag[kk][0] = pack2<T>(p[0], p[1]);  // rows g, keys 2tq (n8 tile 2kk)
        p_frag[kk][1] = pack2<T>(p[2], p[3]);  // row g + 8
        p_frag[kk][2] = pack2<T>(p[4], p[5]);  // row g, n8 tile 2kk + 1
        p_frag[kk][3] = pack2<T>(p[6], p[7]);  // row g + 8
      }
    };
    // This warp is done with stage s (the whole warp: its wgmma groups have completed).
    const auto release = [&](int s) {
      __syncwarp();
      if (lane == 0) mbarrier_arrive(&empty[s]);
    };

    // Ping-pong (lesson §9.5): the two consumers take turns to ISSUE their products, so that one
    // warpgroup's softmax runs while the other's wgmmas keep the Tensor Cores busy. Consumer c
    // waits on named barrier 1 + c (its turn: the other consumer issued, 256 threads with it),
    // issues, then arrives on the other's. Consumer 1 lets consumer 0 start, and skips its very
    // last signal: both consumers issue range.tiles + 1 times, so every bar.sync is matched by
    // exactly one bar.arrive and none is left over when the block exits.
    const int other = 1 - consumer;
    const auto my_turn = [&] { named_barrier_sync(1 + consumer, 256); };
    const auto your_turn = [&] { named_barrier_arrive(1 + other, 256); };
    if (consumer == 1) your_turn();

    // O rescaled by the last softmax's factor, and that tile's P packed (over the previous P,
    // whose wgmma has completed), just before the next products are issued.
    const auto rescale_and_pack = [&] {
#pragma unroll
      for (int i = 0; i < 64; ++i) o_acc[i] *= correction[(i % 4) / 2];
      pack_p();
      fence_registers(o_acc);  // written here, before the wgmma_fence() that follows
      fence_registers(p_frag);
    };

    // Tile 0: S alone.
    if (!mbarrier_wait_bounded(&full[0], 0, 2 * kTileBytes)) return;
    my_turn();
    wgmma_fence();
    issue_s(k_s);
    your_turn();
    wgmma_wait<0>();
    fence_registers(s_acc);
    softmax(0);
    for (int t = 1; t < range.tiles; ++t) {
      const int s = t % kHopperStages, prev = (t - 1) % kHopperStages;
      if (!mbarrier_wait_bounded(&full[s], (t / kHopperStages) % 2, 2 * kTileBytes)) return;
      rescale_and_pack();  // O and P_{t-1}, for O += P_{t-1} V_{t-1}
      my_turn();
      wgmma_fence();  // O and P_{t-1} were written since the last wgmma read them
      issue_s(k_s + s * kTileBytes);
      issue_pv(v_s + prev * kTileBytes);
      your_turn();
      wgmma_wait<1>();  // S_t has landed; P_{t-1} V_{t-1} may still run
      fence_registers(s_acc);
      softmax(t);
      wgmma_wait<0>();  // P_{t-1} V_{t-1} is done: O and P_{t-1} are free, and so is stage t - 1
      fence_registers(o_acc);
      release(prev);
    }
    // The last tile's P V.
    const int last = (range.tiles - 1) % kHopperStages;
    rescale_and_pack();
    my_turn();
    wgmma_fence();
    issue_pv(v_s + last * kTileBytes);
    if (consumer == 0) your_turn();
    wgmma_wait<0>();
    fence_registers(o_acc);
    release(last);
  }

  // The epilogue: as prefill_1_mma's, with 4-byte stores straight from the registers.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
  }
  const std::int64_t q_stride = static_cast<std::int64_t>(args.num_heads) * kHopperHeadDim;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (row >= len_q) continue;
    const float inv = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;
    T* o_row =
        args.o + (q_start + row) * q_stride + static_cast<std::int64_t>(head) * kHopperHeadDim;
#pragma unroll
    for (int j = 0; j < 16; ++j)
      *reinterpret_cast<std::uint32_t*>(o_row + 8 * j + 2 * tq) =
          pack2<T>(o_acc[4 * j + 2 * r] * inv, o_acc[4 * j + 2 * r + 1] * inv);
    if (tq == 0)
      args.lse[static_cast<std::int64_t>(head) * args.total_q + q_start + row] =
          row_sum[r] > 0.0f ? (row_max[r] * scale_log2 + __log2f(row_sum[r])) * kLn2 : kNegInf;
  }
  // <<< d12.6
#else
  // NOTE: never runs: the launcher refuses GPUs other than compute capability 9.0. The trap makes
  // it loud if it ever did, and lets the SASS checks tell this architecture's kernel from an
  // unwritten one (they look for HGMMA and UTMALDG, or this trap).
  __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// Launchers.

KvTileRange kv_tile_range(int q0, int len_q, int len_kv, bool causal, int block_m, int block_n) {
  return tile_range(q0, len_q, len_kv, causal, block_m, block_n);
}

int swizzled_chunk(int row, int chunk, int chunks_per_row) {
  return swizzle(row, chunk, chunks_per_row);
}

std::uint64_t wgmma_descriptor(std::uint32_t smem_address, std::uint32_t leading_bytes,
                               std::uint32_t stride_bytes) {
  return descriptor_bits(smem_address, leading_bytes, stride_bytes);
}

namespace {

// Checks the arguments; false when there is nothing to launch.
template <class T>
bool check_prefill_args(const char* who, const PrefillArgs<T>& a) {
  const std::string name = who;
  course::require(a.batch >= 0 && a.total_q >= 0 && a.total_kv >= 0 && a.max_seqlen_q >= 0,
                  name + ": batch, total_q, total_kv and max_seqlen_q must be >= 0");
  course::require(a.head_dim == 64 || a.head_dim == 128,
                  name + ": head_dim = " + std::to_string(a.head_dim) +
                      " is not one of the compiled head dims (64, 128)");
  course::require(a.num_heads >= 1 && a.num_kv_heads >= 1 && a.num_heads % a.num_kv_heads == 0,
                  name + ": num_heads (" + std::to_string(a.num_heads) +
                      ") must be a positive multiple of num_kv_heads (" +
                      std::to_string(a.num_kv_heads) + ")");
  course::require(
      a.num_heads <= 65535,
      name + ": num_heads must be at most 65535 (a tile's rows step by 32-bit offsets)");
  course::require(std::isfinite(a.scale) && a.scale > 0.0f,
                  name + ": scale must be positive and finite (usually 1 / sqrt(head_dim))");
  course::require(
      course::ceil_div<std::int64_t>(a.max_seqlen_q, kBlockM) * a.num_heads * a.batch <
          (std::int64_t{1} << 31),
      name + ": query tiles x num_heads x batch must be below 2^31 (the grid's blocks)");
  course::require(a.total_q < (std::int64_t{1} << 31) && a.total_kv < (std::int64_t{1} << 31),
                  name + ": total_q and total_kv must be below 2^31 (int32 cu_seqlens)");
  if (a.batch == 0 || a.max_seqlen_q == 0 || a.total_q == 0) return false;
  course::require(a.q != nullptr && a.o != nullptr && a.lse != nullptr &&
                      a.cu_seqlens_q != nullptr && a.cu_seqlens_kv != nullptr &&
                      ((a.k != nullptr && a.v != nullptr) || a.total_kv == 0),
                  name + ": null pointer (k and v may be null only when total_kv == 0)");
  course::require(course::is_aligned(a.q, 16) && course::is_aligned(a.k, 16) &&
                      course::is_aligned(a.v, 16) && course::is_aligned(a.o, 16),
                  name +
                      ": q, k, v and o must be 16-byte aligned: every row then starts on a "
                      "16-byte boundary, as cp.async and the 16-byte stores need");
  return true;
}

template <class T, int kHeadDim>
void launch_prefill_1(const PrefillArgs<T>& args) {
  constexpr std::size_t smem = smem_bytes<kHeadDim>();
  course::allow_dynamic_smem(prefill_1_mma_kernel<T, kHeadDim>, smem);
  const unsigned grid = static_cast<unsigned>(course::ceil_div(args.max_seqlen_q, kBlockM)) *
                        static_cast<unsigned>(args.num_heads) * static_cast<unsigned>(args.batch);
  prefill_1_mma_kernel<T, kHeadDim><<<grid, kThreads, smem>>>(args);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void prefill_1(const PrefillArgs<T>& args) {
  if (!check_prefill_args("prefill_1_mma", args)) return;
  if (args.head_dim == 64) return launch_prefill_1<T, 64>(args);
  launch_prefill_1<T, 128>(args);
}

using course::tensor_map_encoder;  // cuTensorMapEncodeTiled, through the runtime

// The tensor map of a packed [rows, heads, 128] tensor of 16-bit values: 3-D, innermost first
// (128 columns, heads, rows), boxes of kBoxCols x 1 x kBlockM (one head's 64 columns of 128 rows:
// 128-byte rows, what the 128-byte swizzle takes), zeros past the last row. A tensor with no rows
// gets an empty map: no block loads from it.
template <class T>
CUtensorMap make_head_map(const T* base, std::int64_t rows, int heads) {
  CUtensorMap map{};
  if (rows == 0) return map;
  const CUtensorMapDataType type = std::is_same_v<T, bfloat16> ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(kHopperHeadDim),
                              static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(rows)};
  const cuuint64_t pitch[2] = {sizeof(T) * kHopperHeadDim,
                               sizeof(T) * kHopperHeadDim * static_cast<cuuint64_t>(heads)};
  const cuuint32_t box[3] = {kBoxCols, 1, kBlockM};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUresult result =
      tensor_map_encoder()(&map, type, 3, const_cast<T*>(base), dims, pitch, box, element_strides,
                           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS)
    throw std::runtime_error("cuTensorMapEncodeTiled failed with CUresult " +
                             std::to_string(static_cast<int>(result)));
  return map;
}

template <class T>
void prefill_2(const PrefillArgs<T>& args) {
  course::require_hopper("prefill_2_wgmma", "wgmma and the Tensor Memory Accelerator");
  if (!check_prefill_args("prefill_2_wgmma", args)) return;
  course::require(args.head_dim == kHopperHeadDim,
                  "prefill_2_wgmma: head_dim must be 128 (the Hopper kernel is compiled for it "
                  "only; prefill_1_mma takes 64 too)");
  const CUtensorMap q_map = make_head_map(args.q, args.total_q, args.num_heads);
  const CUtensorMap k_map = make_head_map(args.k, args.total_kv, args.num_kv_heads);
  const CUtensorMap v_map = make_head_map(args.v, args.total_kv, args.num_kv_heads);
  constexpr std::size_t smem = hopper_smem_bytes();
  course::allow_dynamic_smem(prefill_2_wgmma_kernel<T>, smem);
  const unsigned grid = static_cast<unsigned>(course::ceil_div(args.max_seqlen_q, kBlockM)) *
                        static_cast<unsigned>(args.num_heads) * static_cast<unsigned>(args.batch);
  prefill_2_wgmma_kernel<T><<<grid, kHopperThreads, smem>>>(args, q_map, k_map, v_map);
  COURSE_LAUNCH_CHECK();
}

}  // namespace

void prefill_1_mma(const PrefillArgs<bfloat16>& args) { prefill_1(args); }
void prefill_1_mma(const PrefillArgs<half>& args) { prefill_1(args); }
void prefill_2_wgmma(const PrefillArgs<bfloat16>& args) { prefill_2(args); }
void prefill_2_wgmma(const PrefillArgs<half>& args) { prefill_2(args); }

void check_mbarrier_timeouts() {
  course::throw_if_mbarrier_timed_out(g_mbarrier_timeout,
                                      "a copy that never arrived, a wrong transaction count or "
                                      "a wrong phase parity (lesson §9)");
}

}  // namespace d12
