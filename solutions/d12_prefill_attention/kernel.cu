// Day 12 — reference solution: FlashAttention-2-style prefill attention on mma.sync (Tensor Cores,
// any GPU from sm_80), over a variable-length batch, causal or not.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "course/check.h"
#include "course/device.h"
#include "course/vec.cuh"
#include "lab.h"

namespace d12 {

// ---------------------------------------------------------------------------------------------
// The tiles (lesson §3). A block owns kBlockM = 128 query rows of one head of one sequence: 8 warps
// of 16 rows, one m16 tile each. It streams the sequence's keys and values in tiles of kBlockN
// rows (64 for head dim 128, 128 for head dim 64: 16 KiB of K and 16 KiB of V per tile either way).
// Shared memory: the Q tile (read once into registers, reused at the end to stage O), then
// kStages K tiles and kStages V tiles, every tile XOR-swizzled (swizzled_chunk).
constexpr int kWarpSize = 32;
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * kWarpSize;
constexpr int kRowsPerWarp = kBlockM / kWarps;
constexpr int kStages = 2;       // K/V double buffer: tile t + 1 lands while tile t is computed
constexpr int kChunkElems = 8;   // 16 bytes of a 16-bit type: what cp.async and ldmatrix move
constexpr int kSwizzleRows = 8;  // ldmatrix reads 8 rows of 16 bytes at a time
static_assert(kRowsPerWarp == 16, "each warp owns one m16 row tile of the mma");
static_assert(kBlockM % kSwizzleRows == 0, "warps' rows start on a swizzle period");

template <int kHeadDim>
constexpr int kBlockN = block_n(kHeadDim);

template <int kHeadDim>
constexpr std::size_t smem_bytes() {
  return sizeof(std::uint16_t) * kHeadDim * (kBlockM + 2 * kStages * kBlockN<kHeadDim>);
}

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -INFINITY;

// ---------------------------------------------------------------------------------------------
// Exercise 1 — the key tiles of a block (lesson §4). Query row r (in its sequence) sees keys
// 0 .. r + len_kv - len_q under the causal mask (bottom-right), all len_kv keys without it.
// The block's last real row sees the most keys: the tiles up to its last visible key are visited,
// the rest skipped. The block's FIRST row sees the fewest: every tile entirely at or below its
// diagonal is visible to every row of the block, so the mask starts at the first tile reaching
// past it (or at the partial last tile, whose columns past len_kv must not count).
__host__ __device__ inline KvTileRange tile_range(int q0, int len_q, int len_kv, bool causal,
                                                  int block_m, int block_n) {
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
}

// Exercise 2 — the swizzle (lesson §5): chunk c of row r at position c ^ (r % 8) of its row.
// Rows are chunks_per_row = 8 or 16 chunks (128 or 256 bytes), a multiple of the 8 chunks of a
// 128-byte bank cycle, so a chunk's bank group is its position mod 8: the 8 rows an ldmatrix
// reads at one logical chunk get 8 different positions mod 8, i.e. 8 different bank groups.
__host__ __device__ inline int swizzle(int row, int chunk, int chunks_per_row) {
  return row * chunks_per_row + (chunk ^ (row % kSwizzleRows));
}

// ---------------------------------------------------------------------------------------------
// Given: the PTX the kernel is built from (lesson §6).
__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared (cp.async.cg: through L2 only). When !valid, 0 source bytes are read
// and the 16 bytes are zero-filled: rows past the end of a sequence arrive as zeros, so that
// nothing (in particular no NaN from stale memory multiplied by a zero probability) reaches the
// products. `src` must still be a valid address.
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(smem_dst)),
               "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Four 8x8 matrices of 16-bit elements from shared memory: lanes 8i .. 8i + 7 give the addresses
// of the 8 rows (16 bytes each) of matrix i; lane l receives, of each matrix, row l / 4, elements
// 2 (l % 4) and 2 (l % 4) + 1 (one 32-bit register per matrix). .trans hands out the transposed
// matrix: lane l gets rows 2 (l % 4) and 2 (l % 4) + 1 of column l / 4.
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], const void* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row_address))
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], const void* row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row_address))
               : "memory");
}

// d += a b on the Tensor Cores: a 16x16 (row-major), b 16x8 (column-major), d 16x8 float32.
// With g = lane / 4 and t = lane % 4, every lane holds:
//   a[0] = A[g][2t, 2t+1]     a[1] = A[g+8][2t, 2t+1]   a[2] = A[g][2t+8, 2t+9]   a[3] =
//   A[g+8][...] b0   = B[2t, 2t+1][g]     b1   = B[2t+8, 2t+9][g] d[0], d[1] = D[g][2t, 2t+1] d[2],
//   d[3] = D[g+8][2t, 2t+1]
template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const std::uint32_t (&a)[4],
                                          std::uint32_t b0, std::uint32_t b1) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7},"
        " {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7},"
        " {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

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
// swizzled tile_s; rows >= rows_valid are zero-filled. Every thread copies
// kRows * kChunks / kThreads chunks; consecutive threads take consecutive chunks of a row, so a
// warp reads whole 16-byte-aligned row segments from global memory.
template <int kRows, int kHeadDim, class T>
__device__ __forceinline__ void load_tile(T* tile_s, const T* __restrict__ src,
                                          std::int64_t row_stride, int rows_valid) {
  constexpr int kChunks = kHeadDim / kChunkElems;
  static_assert((kRows * kChunks) % kThreads == 0, "every thread copies as many chunks");
#pragma unroll
  for (int i = 0; i < kRows * kChunks / kThreads; ++i) {
    const int idx = i * kThreads + static_cast<int>(threadIdx.x);
    const int r = idx / kChunks, c = idx % kChunks;  // row of the tile, 16-byte chunk of the row
    const bool valid = r < rows_valid;
    const T* from = src + (valid ? r : 0) * row_stride + c * kChunkElems;
    cp_async_16(tile_s + swizzle(r, c, kChunks) * kChunkElems, from, valid);
  }
}

// ---------------------------------------------------------------------------------------------
// Exercises 3-5 — prefill_1_mma (lesson §3, §6-§8).
// Grid (num_heads, batch, query tiles): block (h, b, z) computes query rows q0 .. q0 + 127 of head
// h of sequence b, with q0 = 128 * (gridDim.z - 1 - z): the LAST tiles of the longest sequences,
// which have the most keys to visit under the causal mask, are started first, so the short ones
// fill the gaps at the end instead of one long block finishing alone (lesson §8.3).
// Warp w owns rows 16w .. 16w + 15 of the block; in every fragment below lane l holds rows
// g = l / 4 and g + 8 of them, and columns 2t, 2t + 1 (t = l % 4) of every 8-column tile.
// Per key tile: S = Q K^T (16 x kBlockN per warp, float32 in registers), the mask on the tiles
// that need it, the online softmax (running max m and sum l per row, O rescaled when m grows),
// P = exp2(S * scale * log2 e - m * scale * log2 e) rounded to 16 bits IN REGISTERS as the A
// operand of O += P V (the accumulator layout of S is the A layout of P: lesson §7.2).
template <class T, int kHeadDim>
__global__ void __launch_bounds__(kThreads, 1) prefill_1_mma_kernel(const PrefillArgs<T> args) {
  constexpr int kN = kBlockN<kHeadDim>;
  constexpr int kChunks = kHeadDim / kChunkElems;  // 16-byte chunks per row
  constexpr int kQkSteps = kHeadDim / 16;          // k16 steps of Q K^T (over the head dim)
  constexpr int kSTiles = kN / 8;                  // n8 tiles of S (over the keys)
  constexpr int kPvSteps = kN / 16;                // k16 steps of P V (over the keys)
  constexpr int kOTiles = kHeadDim / 8;            // n8 tiles of O (over the head dim)
  static_assert(kSTiles % 2 == 0 && kOTiles % 2 == 0, "ldmatrix.x4 feeds two n8 tiles");

  extern __shared__ __align__(128) unsigned char smem[];
  T* q_s = reinterpret_cast<T*>(smem);     // [kBlockM][kHeadDim], swizzled
  T* k_s = q_s + kBlockM * kHeadDim;       // [kStages][kN][kHeadDim], swizzled
  T* v_s = k_s + kStages * kN * kHeadDim;  // [kStages][kN][kHeadDim], swizzled

  // The block's sequence, head and rows.
  const int head = static_cast<int>(blockIdx.x), seq = static_cast<int>(blockIdx.y);
  const std::int64_t q_start = args.cu_seqlens_q[seq], kv_start = args.cu_seqlens_kv[seq];
  const int len_q = args.cu_seqlens_q[seq + 1] - static_cast<int>(q_start);
  const int len_kv = args.cu_seqlens_kv[seq + 1] - static_cast<int>(kv_start);

  // Exercise 5 (lesson §8): the longest-first order of the query tiles, and the KV head that
  // this query head shares with the num_heads / num_kv_heads heads of its group (GQA).
  const int q0 = kBlockM * static_cast<int>(gridDim.z - 1 - blockIdx.z);
  const int kv_head = head / (args.num_heads / args.num_kv_heads);

  // INVARIANT: q0 is the same for the whole block, so the block leaves whole (the barriers
  // below see every thread).
  if (q0 >= len_q) return;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int g = lane / 4, tq = lane % 4;  // rows g, g + 8; columns 2tq, 2tq + 1
  const std::int64_t q_stride = static_cast<std::int64_t>(args.num_heads) * kHeadDim;
  const std::int64_t kv_stride = static_cast<std::int64_t>(args.num_kv_heads) * kHeadDim;
  const T* q_g = args.q + (q_start + q0) * q_stride + static_cast<std::int64_t>(head) * kHeadDim;
  const T* k_g = args.k + kv_start * kv_stride + static_cast<std::int64_t>(kv_head) * kHeadDim;
  const T* v_g = args.v + kv_start * kv_stride + static_cast<std::int64_t>(kv_head) * kHeadDim;
  const KvTileRange range = tile_range(q0, len_q, len_kv, args.causal, kBlockM, kN);
  const int offset = len_kv - len_q;  // row r sees keys <= r + offset (causal)
  const float scale_log2 = args.scale * kLog2e;

  float o_acc[kOTiles][4] = {};           // O, unnormalised, float32
  float row_max[2] = {kNegInf, kNegInf};  // m of rows g and g + 8 (raw scores)
  float row_sum[2] = {0.0f, 0.0f};        // this lane's part of l (its columns only)

  if (range.tiles > 0) {
    // Prologue: Q (group 0) and key tile 0 (group 1) in flight; Q into registers once it landed.
    load_tile<kBlockM, kHeadDim>(q_s, q_g, q_stride, len_q - q0);
    cp_async_commit();
    load_tile<kN, kHeadDim>(k_s, k_g, kv_stride, len_kv);
    load_tile<kN, kHeadDim>(v_s, v_g, kv_stride, len_kv);
    cp_async_commit();
    cp_async_wait<1>();  // Q has landed (this thread's copies) ...
    __syncthreads();     // ... and every thread's
    // Q's A fragments for the whole loop: matrix i of step kk = rows 8 (i % 2) .., chunk
    // 2 kk + i / 2 (a[0] rows 0-7 low k, a[1] rows 8-15 low k, a[2] rows 0-7 high k, a[3] ...).
    std::uint32_t q_frag[kQkSteps][4];
#pragma unroll
    for (int kk = 0; kk < kQkSteps; ++kk) {
      const int r = warp * kRowsPerWarp + lane % 8 + (lane / 8) % 2 * 8;
      const int c = 2 * kk + lane / 16;
      ldmatrix_x4(q_frag[kk], q_s + swizzle(r, c, kChunks) * kChunkElems);
    }

    for (int t = 0; t < range.tiles; ++t) {
      cp_async_wait<0>();  // tile t has landed (this thread's copies) ...
      __syncthreads();     // ... every thread's; and tile t - 1's stage is no longer read
      if (t + 1 < range.tiles) {
        const int next = (t + 1) % kStages;
        const int kv0 = (t + 1) * kN;
        load_tile<kN, kHeadDim>(k_s + next * kN * kHeadDim, k_g + kv0 * kv_stride, kv_stride,
                                len_kv - kv0);
        load_tile<kN, kHeadDim>(v_s + next * kN * kHeadDim, v_g + kv0 * kv_stride, kv_stride,
                                len_kv - kv0);
      }
      cp_async_commit();  // always, even empty: one group per tile in every thread
      const T* kt_s = k_s + (t % kStages) * kN * kHeadDim;
      const T* vt_s = v_s + (t % kStages) * kN * kHeadDim;

      // S = Q K^T. K is stored [key][dim], which IS the column-major B operand: ldmatrix without
      // .trans; matrix i = keys 8 (i / 2) .. of the pair, chunk 2 kk + i % 2 -> b0, b1 of n8 tile
      // 2 nn, then b0, b1 of tile 2 nn + 1.
      float s_acc[kSTiles][4] = {};
#pragma unroll
      for (int kk = 0; kk < kQkSteps; ++kk) {
#pragma unroll
        for (int nn = 0; nn < kSTiles / 2; ++nn) {
          const int key = 16 * nn + lane % 8 + lane / 16 * 8;
          const int c = 2 * kk + (lane / 8) % 2;
          std::uint32_t b[4];
          ldmatrix_x4(b, kt_s + swizzle(key, c, kChunks) * kChunkElems);
          mma_16816<T>(s_acc[2 * nn], q_frag[kk], b[0], b[1]);
          mma_16816<T>(s_acc[2 * nn + 1], q_frag[kk], b[2], b[3]);
        }
      }

      // The mask, only on the tiles that need it (lesson §4): keys past len_kv, and keys above
      // the causal diagonal, get -inf, which exp2 turns into a probability of exactly 0.
      if (t >= range.first_masked) {
        const int kv0 = t * kN;
#pragma unroll
        for (int j = 0; j < kSTiles; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int row = q0 + warp * kRowsPerWarp + g + (e / 2) * 8;  // in the sequence
            const int col = kv0 + 8 * j + 2 * tq + e % 2;                // key in the sequence
            if (col >= len_kv || (args.causal && col > row + offset)) s_acc[j][e] = kNegInf;
          }
        }
      }

      // The online softmax (lesson §3.3). The row's max over the tile: this lane's columns, then
      // the 4 lanes of the quad that share the row (lanes 4g .. 4g + 3: xor 1 and xor 2).
      float tile_max[2] = {kNegInf, kNegInf};
#pragma unroll
      for (int j = 0; j < kSTiles; ++j) {
        tile_max[0] = fmaxf(tile_max[0], fmaxf(s_acc[j][0], s_acc[j][1]));
        tile_max[1] = fmaxf(tile_max[1], fmaxf(s_acc[j][2], s_acc[j][3]));
      }
      float max_scaled[2], correction[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
        const float new_max = fmaxf(row_max[r], tile_max[r]);
        // A row with no visible key so far keeps m = -inf; subtracting 0 instead keeps
        // (-inf) - (-inf) = NaN out of exp2 (every p of that row is exp2(-inf) = 0).
        max_scaled[r] = new_max == kNegInf ? 0.0f : new_max * scale_log2;
        correction[r] = fast_exp2(row_max[r] * scale_log2 - max_scaled[r]);  // 0 from -inf
        row_max[r] = new_max;
        row_sum[r] *= correction[r];
      }
      // O is rescaled only when some row's max grew (correction 1 leaves it as it is): one vote,
      // so the warp takes the branch together.
      if (__any_sync(0xffffffffu, correction[0] != 1.0f || correction[1] != 1.0f)) {
#pragma unroll
        for (int d = 0; d < kOTiles; ++d) {
#pragma unroll
          for (int e = 0; e < 4; ++e) o_acc[d][e] *= correction[e / 2];
        }
      }
#pragma unroll
      for (int j = 0; j < kSTiles; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          // One FFMA and one MUFU.EX2 per score: scale and log2 e folded into scale_log2.
          const float p = fast_exp2(s_acc[j][e] * scale_log2 - max_scaled[e / 2]);
          s_acc[j][e] = p;
          row_sum[e / 2] += p;
        }
      }

      // O += P V. P's A fragment of key step kk is S's accumulators of n8 tiles 2 kk and
      // 2 kk + 1, rounded to T: no shared memory. V is stored [key][dim]: the B operand (k = key,
      // n = dim) needs two keys of one dim per register, so ldmatrix .trans; matrix i = keys
      // 8 (i % 2) .. of the step, chunk 2 dd + i / 2 -> b0, b1 of dim tile 2 dd, then 2 dd + 1.
#pragma unroll
      for (int kk = 0; kk < kPvSteps; ++kk) {
        const std::uint32_t a[4] = {
            pack2<T>(s_acc[2 * kk][0], s_acc[2 * kk][1]),
            pack2<T>(s_acc[2 * kk][2], s_acc[2 * kk][3]),
            pack2<T>(s_acc[2 * kk + 1][0], s_acc[2 * kk + 1][1]),
            pack2<T>(s_acc[2 * kk + 1][2], s_acc[2 * kk + 1][3]),
        };
#pragma unroll
        for (int dd = 0; dd < kOTiles / 2; ++dd) {
          const int key = 16 * kk + lane % 8 + (lane / 8) % 2 * 8;
          const int c = 2 * dd + lane / 16;
          std::uint32_t b[4];
          ldmatrix_x4_trans(b, vt_s + swizzle(key, c, kChunks) * kChunkElems);
          mma_16816<T>(o_acc[2 * dd], a, b[0], b[1]);
          mma_16816<T>(o_acc[2 * dd + 1], a, b[2], b[3]);
        }
      }
    }
    cp_async_wait<0>();  // nothing of this block is in flight when it writes and leaves
  }

  // The epilogue (lesson §3.4): l is the quad's sum; O / l rounded to T, staged in this warp's
  // own rows of the Q tile (only this warp ever read them) and written with 16-byte stores;
  // lse = m * scale + ln l. A row with no visible key has l = 0: o = 0 and lse = -inf.
  float inv_sum[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
    inv_sum[r] = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;
  }
  T* o_s = q_s + warp * kRowsPerWarp * kHeadDim;  // this warp's 16 rows, swizzled as Q's
#pragma unroll
  for (int d = 0; d < kOTiles; ++d) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = g + 8 * r;
      *reinterpret_cast<std::uint32_t*>(o_s + swizzle(row, d, kChunks) * kChunkElems + 2 * tq) =
          pack2<T>(o_acc[d][2 * r] * inv_sum[r], o_acc[d][2 * r + 1] * inv_sum[r]);
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
  if (tq == 0) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int q_row = q0 + warp * kRowsPerWarp + g + 8 * r;
      if (q_row < len_q)
        args.lse[static_cast<std::int64_t>(head) * args.total_q + q_start + q_row] =
            row_sum[r] > 0.0f ? (row_max[r] * scale_log2 + __log2f(row_sum[r])) * kLn2 : kNegInf;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Launchers.

KvTileRange kv_tile_range(int q0, int len_q, int len_kv, bool causal, int block_m, int block_n) {
  return tile_range(q0, len_q, len_kv, causal, block_m, block_n);
}

int swizzled_chunk(int row, int chunk, int chunks_per_row) {
  return swizzle(row, chunk, chunks_per_row);
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
  course::require(std::isfinite(a.scale) && a.scale > 0.0f,
                  name + ": scale must be positive and finite (usually 1 / sqrt(head_dim))");
  course::require(a.batch <= 65535, name + ": batch must be at most 65535 (the grid's y)");
  course::require(a.total_q < (std::int64_t{1} << 31) && a.total_kv < (std::int64_t{1} << 31),
                  name + ": total_q and total_kv must be below 2^31 (int32 cu_seqlens)");
  course::require(course::ceil_div<std::int64_t>(a.max_seqlen_q, kBlockM) <= 65535,
                  name + ": max_seqlen_q is too large for the grid's z");
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
  COURSE_CUDA_CHECK(cudaFuncSetAttribute(prefill_1_mma_kernel<T, kHeadDim>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(smem)));
  const dim3 grid(static_cast<unsigned>(args.num_heads), static_cast<unsigned>(args.batch),
                  static_cast<unsigned>(course::ceil_div(args.max_seqlen_q, kBlockM)));
  prefill_1_mma_kernel<T, kHeadDim><<<grid, kThreads, smem>>>(args);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void prefill_1(const PrefillArgs<T>& args) {
  if (!check_prefill_args("prefill_1_mma", args)) return;
  if (args.head_dim == 64) return launch_prefill_1<T, 64>(args);
  launch_prefill_1<T, 128>(args);
}

}  // namespace

void prefill_1_mma(const PrefillArgs<bfloat16>& args) { prefill_1(args); }
void prefill_1_mma(const PrefillArgs<half>& args) { prefill_1(args); }

}  // namespace d12
