// >>> STARTER
//|// Day 9 — your kernels. Read lessons/d09_tensor_cores.md first; README.md in this folder lists
//|// the exercises. Replace each TODO block; keep the names, the template parameters and the
//|// launchers (the tests call them through lab.h). Check with:  course check d09
// === SOLUTION
// Day 9 — reference solution: Tensor Cores through WMMA, mma.sync with its fragment layouts,
// ldmatrix, swizzled shared memory, a small GEMM from mma.sync tiles, and one Hopper wgmma tile.
// <<<
#include <cuda_runtime.h>
#include <mma.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "course/check.h"
#include "course/device.h"
#include "course/smem.cuh"
#include "course/vec.cuh"
#include "course/warp.cuh"
#include "lab.h"

namespace d09 {

using course::kWarpSize;
using course::Vec;

// The raw 16 bits of a 16-bit float, and two of them packed into one 32-bit register: the
// element with the lower index (lower address) in the low half, as the Tensor Cores read it.
__device__ __forceinline__ std::uint16_t bits16(half v) { return __half_as_ushort(v); }
__device__ __forceinline__ std::uint16_t bits16(bfloat16 v) { return __bfloat16_as_ushort(v); }
template <class T>
__device__ __forceinline__ std::uint32_t pack2(T lo, T hi) {
  return static_cast<std::uint32_t>(bits16(lo)) | (static_cast<std::uint32_t>(bits16(hi)) << 16);
}

// A shared-memory address as the 32-bit value PTX's .shared instructions take.
__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---------------------------------------------------------------------------------------------
// Exercise 1 — WMMA (lesson §3). Warp w of block b computes tile t = 4b + w of C (16x16, tiles
// numbered row by row): for k = 0, 16, ...: load the 16x16 A tile (row-major, leading dimension
// K) and the 16x16 B tile (B is [N, K]: "column-major" K x N, leading dimension K), and
// accumulate a 16x16x16 product in float32. Which lane holds which element is the library's
// business: fragments are opaque here (Exercise 2 opens them).
constexpr int kWmmaWarps = 4;  // tiles of C per block
constexpr int kWmmaThreads = kWmmaWarps * kWarpSize;

template <class T>
__global__ void __launch_bounds__(kWmmaThreads)
    wmma_gemm_kernel(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C,
                     std::int64_t M, std::int64_t N, std::int64_t K) {
  // >>> STARTER d09.1
  //|  // TODO(d09.1) (lesson §3): tile = blockIdx.x * kWmmaWarps + warp (64-bit); return if tile >=
  //|  // (M / 16) * (N / 16) (the whole warp leaves: the _sync calls need all 32 lanes). m0, n0 = the
  //|  // tile's corner. nvcuda::wmma fragments: matrix_a <16, 16, 16, T, row_major>, matrix_b <...,
  //|  // col_major> (B is [N, K]: column-major K x N with leading dimension K), accumulator float;
  //|  // fill_fragment(acc, 0); for k in steps of 16: load_matrix_sync(a, A + m0 * K + k, K),
  //|  // load_matrix_sync(b, B + n0 * K + k, K), mma_sync(acc, a, b, acc); then
  //|  // store_matrix_sync(C + m0 * N + n0, acc, N, mem_row_major).
  // === SOLUTION
  namespace wmma = nvcuda::wmma;
  const std::int64_t tile =
      static_cast<std::int64_t>(blockIdx.x) * kWmmaWarps + threadIdx.x / kWarpSize;
  const std::int64_t tiles_n = N / kWmmaTile;
  // INVARIANT: tile is the same for the 32 lanes: a warp leaves whole, as the _sync calls need.
  if (tile >= (M / kWmmaTile) * tiles_n) return;
  const std::int64_t m0 = tile / tiles_n * kWmmaTile, n0 = tile % tiles_n * kWmmaTile;
  wmma::fragment<wmma::matrix_a, kWmmaTile, kWmmaTile, kWmmaTile, T, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, kWmmaTile, kWmmaTile, kWmmaTile, T, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, kWmmaTile, kWmmaTile, kWmmaTile, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (std::int64_t k = 0; k < K; k += kWmmaTile) {
    wmma::load_matrix_sync(a, A + m0 * K + k, static_cast<unsigned>(K));  // A[m0.., k..]
    wmma::load_matrix_sync(b, B + n0 * K + k, static_cast<unsigned>(K));  // B(k.., n0..)
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + m0 * N + n0, acc, static_cast<unsigned>(N), wmma::mem_row_major);
  // <<< d09.1
}

// ---------------------------------------------------------------------------------------------
// Exercise 2 — the fragment layouts of mma.sync.m16n8k16 for 16-bit inputs (lesson §4.2, the
// PTX ISA's "Matrix Fragments for mma.m16n8k16"). A lane's group is lane / 4 (0..7: which row,
// or which column of B) and its thread in the group is lane % 4 (which pair of columns, or of
// rows of B). Elements come in pairs: elements 2j and 2j + 1 share register j.
__host__ __device__ inline FragCoord a_fragment(int lane, int element) {
  // >>> STARTER d09.2
  //|  // TODO(d09.2) (lesson §4.2): group = lane / 4, thread = lane % 4. Elements a0 a1 (register 0)
  //|  // are row group, columns 2 thread and 2 thread + 1; a2 a3: 8 rows further down; a4 a5: 8
  //|  // columns further right; a6 a7: both. Return {row, col}.
  //|  return {-1, -1};
  // === SOLUTION
  const int group = lane / 4, thread = lane % 4;
  // a0 a1: row g, a2 a3: row g + 8, a4 a5: row g, a6 a7: row g + 8; the second four are 8
  // columns (k) further on.
  return {group + 8 * ((element / 2) % 2), 2 * thread + element % 2 + 8 * (element / 4)};
  // <<< d09.2
}

__host__ __device__ inline FragCoord b_fragment(int lane, int element) {
  // >>> STARTER d09.2
  //|  // TODO(d09.2) (lesson §4.2): B is 16 (k) x 8 (n). b0 b1: rows 2 thread and 2 thread + 1,
  //|  // column group; b2 b3: 8 rows further down. Return {row (k), col (n)}.
  //|  return {-1, -1};
  // === SOLUTION
  const int group = lane / 4, thread = lane % 4;
  // b0 b1: rows (k) 2t, 2t + 1; b2 b3: 8 rows further on; always column (n) g.
  return {2 * thread + element % 2 + 8 * (element / 2), group};
  // <<< d09.2
}

__host__ __device__ inline FragCoord c_fragment(int lane, int element) {
  // >>> STARTER d09.2
  //|  // TODO(d09.2) (lesson §4.2): C is 16 x 8 float32. c0 c1: row group, columns 2 thread and
  //|  // 2 thread + 1; c2 c3: 8 rows further down. Return {row, col}.
  //|  return {-1, -1};
  // === SOLUTION
  const int group = lane / 4, thread = lane % 4;
  // c0 c1: row g, columns 2t, 2t + 1; c2 c3: row g + 8.
  return {group + 8 * (element / 2), 2 * thread + element % 2};
  // <<< d09.2
}

// ---------------------------------------------------------------------------------------------
// Exercise 3 — one mma.sync (lesson §4.3). d += a * b for one 16x8x16 tile: four 32-bit
// registers of A (eight 16-bit values), two of B, four float32 of C/D, per lane. ".row.col" is
// A row-major and B column-major, the only layouts this shape has for 16-bit inputs.
template <class T>
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], const std::uint32_t (&a)[4],
                                            const std::uint32_t (&b)[2]) {
  // >>> STARTER d09.3a
  //|  // TODO(d09.3a) (lesson §4.3): one asm volatile per type (if constexpr on T):
  //|  // "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7},
  //|  // {%8, %9}, {%0, %1, %2, %3};" (f16.f16 for half), d[0..3] as "+f" (read and written: D = C),
  //|  // a[0..3] and b[0..1] as "r".
  // === SOLUTION
  if constexpr (std::is_same_v<T, bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7},"
        " {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    static_assert(std::is_same_v<T, half>, "mma_16x8x16: bfloat16 or half");
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7},"
        " {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  // <<< d09.3a
}

// One warp: every lane gathers its fragments from global memory with the maps of Exercise 2
// (A [16, 16] row-major, B stored [8, 16] as (n, k)), runs one mma.sync and scatters its four
// results to C [16, 8] the same way.
template <class T>
__global__ void __launch_bounds__(kWarpSize)
    mma_16x8x16_kernel(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C) {
  // >>> STARTER d09.3b
  //|  // TODO(d09.3b) (lesson §4.3): lane = threadIdx.x. Register r of A packs elements 2r and
  //|  // 2r + 1: pack2(A at a_fragment(lane, 2r), A at a_fragment(lane, 2r + 1)) with A[row * 16 +
  //|  // col]; B's registers likewise from b_fragment, reading B(k, n) at B[n * 16 + k]. float d[4] =
  //|  // {}; mma_16x8x16<T>(d, a, b); store d[e] to C[row * 8 + col] at c_fragment(lane, e).
  // === SOLUTION
  const int lane = static_cast<int>(threadIdx.x);
  std::uint32_t a[4], b[2];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const FragCoord lo = a_fragment(lane, 2 * r), hi = a_fragment(lane, 2 * r + 1);
    a[r] = pack2(A[lo.row * kMmaK + lo.col], A[hi.row * kMmaK + hi.col]);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const FragCoord lo = b_fragment(lane, 2 * r), hi = b_fragment(lane, 2 * r + 1);
    b[r] = pack2(B[lo.col * kMmaK + lo.row], B[hi.col * kMmaK + hi.row]);  // B(k, n) at [n, k]
  }
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  mma_16x8x16<T>(d, a, b);
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const FragCoord c = c_fragment(lane, e);
    C[c.row * kMmaN + c.col] = d[e];
  }
  // <<< d09.3b
}

// ---------------------------------------------------------------------------------------------
// Exercise 4 — ldmatrix (lesson §5). ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16
// loads 1, 2 or 4 8x8 matrices of 16-bit values from shared memory, each row 16 contiguous
// bytes whose address one lane gives (lanes 8j .. 8j + 7: rows 0..7 of matrix j), and hands
// matrix j out as register j of every lane in the layout of an mma fragment: lane l holds row
// l / 4, columns 2 (l % 4) and 2 (l % 4) + 1. With .trans it holds the transposed matrix's:
// column l / 4, rows 2 (l % 4) and 2 (l % 4) + 1.
template <int kCount, bool kTrans>
__device__ __forceinline__ void ldmatrix(std::uint32_t (&r)[kCount], const void* row_address) {
  static_assert(kCount == 1 || kCount == 2 || kCount == 4, "ldmatrix loads 1, 2 or 4 matrices");
  // >>> STARTER d09.4a
  //|  // TODO(d09.4a) (lesson §5): address = smem_address(row_address); one asm volatile per case
  //|  // (if constexpr on kCount and kTrans): "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];"
  //|  // with r[0] as "=r" and the address as "r"; .x2 with {%0, %1}, .x4 with {%0, %1, %2, %3};
  //|  // ".trans" goes after the .xN: "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16". A "memory"
  //|  // clobber: the asm reads shared memory the compiler does not see.
  // === SOLUTION
  const std::uint32_t address = smem_address(row_address);
  if constexpr (kCount == 1 && !kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0])
                 : "r"(address)
                 : "memory");
  } else if constexpr (kCount == 1 && kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                 : "=r"(r[0])
                 : "r"(address)
                 : "memory");
  } else if constexpr (kCount == 2 && !kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(address)
                 : "memory");
  } else if constexpr (kCount == 2 && kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(address)
                 : "memory");
  } else if constexpr (kCount == 4 && !kTrans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address)
                 : "memory");
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address)
                 : "memory");
  }
  // <<< d09.4a
}

constexpr int kMatrixElems = 64;                // one 8x8 matrix of 16-bit values
[[maybe_unused]] constexpr int kMatrixRow = 8;  // elements in one of its rows: 16 bytes

template <int kCount, bool kTrans>
__global__ void __launch_bounds__(kWarpSize)
    ldmatrix_dump_kernel(const std::uint16_t* __restrict__ src, std::uint32_t* __restrict__ out) {
  __shared__ alignas(16) std::uint16_t tile[kCount * kMatrixElems];  // (matrix, row, column)
  const int lane = static_cast<int>(threadIdx.x);
  for (int i = lane; i < kCount * kMatrixElems; i += kWarpSize) tile[i] = src[i];
  __syncwarp();  // the warp's stores are visible to the whole warp's ldmatrix

  // >>> STARTER d09.4b
  //|  // TODO(d09.4b) (lesson §5): lane l gives the address of row l % 8 of matrix (l / 8) % kCount
  //|  // (lanes past 8 * kCount are ignored by ldmatrix but must still point inside the tile):
  //|  // &tile[matrix * kMatrixElems + row * kMatrixRow]. std::uint32_t r[kCount];
  //|  // ldmatrix<kCount, kTrans>(r, that address); out[lane * kCount + j] = r[j].
  // === SOLUTION
  // Lane l gives the address of row l % 8 of matrix l / 8. Lanes past 8 * kCount are not read
  // by the instruction; they point at a row of a matrix that exists all the same.
  const int matrix = (lane / kMatrixRow) % kCount, row = lane % kMatrixRow;
  std::uint32_t r[kCount];
  ldmatrix<kCount, kTrans>(r, &tile[matrix * kMatrixElems + row * kMatrixRow]);
#pragma unroll
  for (int j = 0; j < kCount; ++j) out[lane * kCount + j] = r[j];
  // <<< d09.4b
}

// ---------------------------------------------------------------------------------------------
// Exercise 5 — swizzled shared memory (lesson §6). Shared memory serves 128 bytes per cycle from
// 32 banks of 4 bytes; a 16-byte chunk covers 4 banks, so a 128-byte line holds 8 "bank groups"
// and chunk address a / 16 falls in group (a / 16) % 8. One ldmatrix phase reads 8 rows of 16
// bytes: conflict-free only if the 8 chunks fall in 8 different groups. With rows of 128 bytes
// the same logical chunk of 8 rows is always the same group (8-way conflict); with 64-byte rows,
// rows r and r + 2 share one (4-way). The XOR spreads them: rows that would collide get
// different chunk bits. A row of 128 bytes is one line (swizzle with row % 8); two rows of 64
// bytes share one line, so the line number row / 2 (mod 4) is XORed into the 2 chunk bits.
__host__ __device__ inline int chunk_xor(int row, int chunk, int row_bytes) {
  // >>> STARTER d09.5a
  //|  // TODO(d09.5a) (lesson §6.2): chunks = row_bytes / 16 per row; rows_per_line = 128 /
  //|  // row_bytes rows share one 128-byte line of banks; return chunk XOR ((row / rows_per_line) %
  //|  // chunks).
  //|  return -1;
  // === SOLUTION
  const int chunks = row_bytes / 16;          // 16-byte chunks per row: 4 or 8
  const int rows_per_line = 128 / row_bytes;  // rows that share one 128-byte line of banks
  return chunk ^ ((row / rows_per_line) % chunks);
  // <<< d09.5a
}

// One warp: the [16, kRowBytes / 2] tile in 16-byte chunks (lane i: chunks i, i + 32, ...) to
// shared memory at the swizzled chunk, then per 16x16 block one ldmatrix.x4 at the swizzled
// addresses (lane l: row l % 16, logical chunk 2 b + l / 16), registers out.
template <int kRowBytes>
__global__ void __launch_bounds__(kWarpSize)
    ldmatrix_swizzled_tile_kernel(const std::uint16_t* __restrict__ src,
                                  std::uint32_t* __restrict__ out) {
  // >>> STARTER d09.5b
  //|  // TODO(d09.5b) (lesson §6.3): kRows = 16, kChunks = kRowBytes / 16, kCols = kRowBytes / 2;
  //|  // __shared__ alignas(128) std::uint16_t tile[kRows * kCols]. Store: lane i takes chunks i,
  //|  // i + 32, ... (row = i / kChunks, chunk = i % kChunks): a Vec<std::uint16_t, 8> from src + row *
  //|  // kCols + 8 chunk to tile + row * kCols + 8 chunk_xor(row, chunk, kRowBytes). __syncwarp().
  //|  // For each 16x16 block b: lane l reads row l % 16 at logical chunk 2 b + l / 16 (swizzled the
  //|  // same way) with ldmatrix<4, false>, and writes register j to out[(32 b + lane) * 4 + j].
  // === SOLUTION
  constexpr int kRows = 16, kChunks = kRowBytes / 16, kCols = kRowBytes / 2;
  using Chunk = Vec<std::uint16_t, 8>;
  __shared__ alignas(128) std::uint16_t tile[kRows * kCols];  // (row, swizzled chunk, element)
  const int lane = static_cast<int>(threadIdx.x);
  for (int i = lane; i < kRows * kChunks; i += kWarpSize) {
    const int row = i / kChunks, chunk = i % kChunks;
    Chunk v;
    v.load(src + row * kCols + chunk * 8);
    v.store(tile + row * kCols + chunk_xor(row, chunk, kRowBytes) * 8);
  }
  __syncwarp();
#pragma unroll
  for (int block = 0; block < kCols / 16; ++block) {
    const int row = lane % 16, chunk = 2 * block + lane / 16;
    std::uint32_t r[4];
    ldmatrix<4, false>(r, tile + row * kCols + chunk_xor(row, chunk, kRowBytes) * 8);
#pragma unroll
    for (int j = 0; j < 4; ++j) out[(kWarpSize * block + lane) * 4 + j] = r[j];
  }
  // <<< d09.5b
}

// ---------------------------------------------------------------------------------------------
// Exercise 6 — a small GEMM from mma.sync tiles (lesson §7). Block (bx, by) computes the 64x64
// tile of C at (64 by, 64 bx) with 4 warps in a 2x2 grid, each a 32x32 warp tile = 2 x 4 mma
// tiles of 16x8. The block walks K in tiles of kBlockK = 64: A [64, 64] and B [64 (n), 64 (k)]
// to shared memory (rows of 128 bytes, swizzled, zeros outside the matrices), barrier, four k16
// steps of ldmatrix.x4 + mma.sync, barrier. Synchronous and simple on purpose: overlapping the
// loads with the math is Day 10.
constexpr int kGemmThreads = 128;
constexpr int kBlockM = 64, kBlockN = 64, kBlockK = 64;
constexpr int kWarpM = 32, kWarpN = 32;
[[maybe_unused]] constexpr int kWarpTilesM = kWarpM / kMmaM;      // mma tiles: 2 down
constexpr int kWarpTilesN = kWarpN / kMmaN;                       // and 4 across
constexpr int kTileRowBytes = kBlockK * 2;                        // 128: one bank line
[[maybe_unused]] constexpr int kTileChunks = kTileRowBytes / 16;  // 8
static_assert((kBlockM / kWarpM) * (kBlockN / kWarpN) * kWarpSize == kGemmThreads,
              "one warp per warp tile");
static_assert(kWarpTilesN % 2 == 0, "B fragments come two n8 tiles per ldmatrix.x4");
static_assert(kBlockK % kMmaK == 0, "whole k16 steps per K tile");
using BChunk = Vec<bfloat16, 8>;

// rows x kBlockK elements of a [rows_total, K] bfloat16 matrix from (row0, k0) to `tile`,
// swizzled; zeros where row or k falls outside. `vectorized`: K % 8 == 0 and the matrix 16-byte
// aligned, so a chunk that starts inside a row lies whole inside it and is one 16-byte load.
template <int kRows>
__device__ void load_tile_swizzled(bfloat16* tile, const bfloat16* __restrict__ src,
                                   std::int64_t rows_total, std::int64_t K, std::int64_t row0,
                                   std::int64_t k0, bool vectorized) {
  // >>> STARTER d09.6a
  //|  // TODO(d09.6a) (lesson §7.2): i = threadIdx.x, i + kGemmThreads, ... below kRows *
  //|  // kTileChunks: row = i / kTileChunks, chunk = i % kTileChunks; r = row0 + row, k = k0 + 8 chunk
  //|  // (64-bit). A BChunk v: if vectorized and r < rows_total and k < K, v.load(src + r * K + k);
  //|  // else element by element, zero where r >= rows_total or k + e >= K. Then v.store(tile + row *
  //|  // kBlockK + chunk_xor(row, chunk, kTileRowBytes) * 8).
  // === SOLUTION
  for (int i = static_cast<int>(threadIdx.x); i < kRows * kTileChunks; i += kGemmThreads) {
    const int row = i / kTileChunks, chunk = i % kTileChunks;
    const std::int64_t r = row0 + row, k = k0 + chunk * 8;
    BChunk v;
    if (vectorized && r < rows_total && k < K) {
      v.load(src + r * K + k);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        v[e] = (r < rows_total && k + e < K) ? src[r * K + k + e] : __float2bfloat16_rn(0.0f);
    }
    v.store(tile + row * kBlockK + chunk_xor(row, chunk, kTileRowBytes) * 8);
  }
  // <<< d09.6a
}

__global__ void __launch_bounds__(kGemmThreads)
    gemm_mma_kernel(const bfloat16* __restrict__ A, const bfloat16* __restrict__ B,
                    float* __restrict__ C, std::int64_t M, std::int64_t N, std::int64_t K,
                    bool vectorized) {
  // >>> STARTER d09.6b
  //|  // TODO(d09.6b) (lesson §7.3): __shared__ alignas(128) a_tile[kBlockM * kBlockK], b_tile[kBlockN
  //|  // * kBlockK]; warp = threadIdx.x / 32, lane; the warp tile's corner (warp_m, warp_n) = (32 (warp
  //|  // / 2), 32 (warp % 2)); m0 = 64 blockIdx.y, n0 = 64 blockIdx.x; float acc[2][4][4] = {}.
  //|  // For k0 = 0, 64, ... < K: load both tiles (load_tile_swizzled), __syncthreads(); for kk = 0,
  //|  // 16, 32, 48: A fragments a[mi] by ldmatrix<4, false> at row warp_m + 16 mi + lane % 16, chunk
  //|  // kk / 8 + lane / 16; B fragments two n8 tiles at a time: row warp_n + 16 nj + 8 (lane / 16) +
  //|  // lane % 8, chunk kk / 8 + (lane / 8) % 2, registers 0, 1 -> b[2 nj], 2, 3 -> b[2 nj + 1]
  //|  // (every address through chunk_xor); mma_16x8x16<bfloat16>(acc[mi][ni], a[mi], b[ni]);
  //|  // __syncthreads(). Finally store acc[mi][ni][e] at c_fragment(lane, e), rows < M, cols < N.
  // === SOLUTION
  __shared__ alignas(128) bfloat16 a_tile[kBlockM * kBlockK];  // (m, swizzled k chunk, element)
  __shared__ alignas(128) bfloat16 b_tile[kBlockN * kBlockK];  // (n, swizzled k chunk, element)
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp_m = (warp / (kBlockN / kWarpN)) * kWarpM;  // the warp tile's corner in the block
  const int warp_n = (warp % (kBlockN / kWarpN)) * kWarpN;
  const std::int64_t m0 = static_cast<std::int64_t>(blockIdx.y) * kBlockM;
  const std::int64_t n0 = static_cast<std::int64_t>(blockIdx.x) * kBlockN;
  float acc[kWarpTilesM][kWarpTilesN][4] = {};

  for (std::int64_t k0 = 0; k0 < K; k0 += kBlockK) {
    load_tile_swizzled<kBlockM>(a_tile, A, M, K, m0, k0, vectorized);
    load_tile_swizzled<kBlockN>(b_tile, B, N, K, n0, k0, vectorized);
    __syncthreads();  // the whole tile is in shared memory
#pragma unroll
    for (int kk = 0; kk < kBlockK; kk += kMmaK) {
      // A: x4 = (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15)
      // of the 16x16 tile = registers a0a1, a2a3, a4a5, a6a7: lane l gives row l % 16 at
      // chunk kk / 8 + l / 16.
      std::uint32_t a[kWarpTilesM][4];
#pragma unroll
      for (int mi = 0; mi < kWarpTilesM; ++mi) {
        const int row = warp_m + mi * kMmaM + lane % 16, chunk = kk / 8 + lane / 16;
        ldmatrix<4, false>(a[mi],
                           a_tile + row * kBlockK + chunk_xor(row, chunk, kTileRowBytes) * 8);
      }
      // B (rows n, contiguous k): x4 = (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7),
      // (n 8-15, k 8-15) = b0b1, b2b3 of two n8 tiles: lane l gives row n = 8 (l / 16) + l % 8
      // at chunk kk / 8 + (l / 8) % 2.
      std::uint32_t b[kWarpTilesN][2];
#pragma unroll
      for (int nj = 0; nj < kWarpTilesN / 2; ++nj) {
        const int row = warp_n + nj * 2 * kMmaN + 8 * (lane / 16) + lane % 8;
        const int chunk = kk / 8 + (lane / 8) % 2;
        std::uint32_t r[4];
        ldmatrix<4, false>(r, b_tile + row * kBlockK + chunk_xor(row, chunk, kTileRowBytes) * 8);
        b[2 * nj][0] = r[0];
        b[2 * nj][1] = r[1];
        b[2 * nj + 1][0] = r[2];
        b[2 * nj + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < kWarpTilesM; ++mi)
#pragma unroll
        for (int ni = 0; ni < kWarpTilesN; ++ni) mma_16x8x16<bfloat16>(acc[mi][ni], a[mi], b[ni]);
    }
    __syncthreads();  // every warp is done with the tiles before the next ones overwrite them
  }

#pragma unroll
  for (int mi = 0; mi < kWarpTilesM; ++mi)
#pragma unroll
    for (int ni = 0; ni < kWarpTilesN; ++ni)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const FragCoord c = c_fragment(lane, e);
        const std::int64_t row = m0 + warp_m + mi * kMmaM + c.row;
        const std::int64_t col = n0 + warp_n + ni * kMmaN + c.col;
        if (row < M && col < N) C[row * N + col] = acc[mi][ni][e];
      }
  // <<< d09.6b
}

// ---------------------------------------------------------------------------------------------
// Exercise 7 — one wgmma tile (Hopper, lesson §8). Both operands are K-major in shared memory in
// the no-swizzle layout: 8x8 core matrices (8 rows of 16 contiguous bytes = 128 contiguous
// bytes), the K / 8 core matrices of an 8-row group one after the other (LBO = 128 bytes: the
// next core matrix along K), the 8-row groups K * 16 bytes apart (SBO: the next along M or N).
// A k16 step is two core matrices along K: its descriptors start 256 bytes further on.
__host__ __device__ inline std::int64_t core_matrix_offset(int row, int k, int K) {
  // >>> STARTER d09.7a
  //|  // TODO(d09.7a) (lesson §8.2): core matrix (row / 8, k / 8), the K / 8 core matrices of an
  //|  // 8-row group one after the other, 128 bytes each; inside: (row % 8) * 16 + (k % 8) * 2.
  //|  return -1;
  // === SOLUTION
  return static_cast<std::int64_t>(row / 8) * (K / 8) * 128 + (k / 8) * 128 + (row % 8) * 16 +
         (k % 8) * 2;
  // <<< d09.7a
}
[[maybe_unused]] constexpr std::uint32_t kCoreMatrixBytes = 128;  // used on sm_90a only

// The matrix descriptor (PTX ISA "Matrix Descriptor Format"): bits 0-13 start address >> 4,
// 16-29 leading-dimension byte offset >> 4, 32-45 stride-dimension byte offset >> 4, 49-51 the
// base offset (0: our tiles start on 128-byte boundaries and are not swizzled), 62-63 the
// swizzle mode.
__host__ __device__ inline std::uint64_t matrix_descriptor(std::uint32_t address,
                                                           std::uint32_t leading_byte_offset,
                                                           std::uint32_t stride_byte_offset,
                                                           int swizzle_mode) {
  // >>> STARTER d09.7a
  //|  // TODO(d09.7a) (lesson §8.3): (address >> 4) in bits 0-13, (leading_byte_offset >> 4) in
  //|  // 16-29, (stride_byte_offset >> 4) in 32-45, swizzle_mode in 62-63; each field masked to its
  //|  // width (14 bits: 0x3fff), in 64-bit arithmetic.
  //|  return 0;
  // === SOLUTION
  constexpr std::uint64_t kField14 = 0x3fff;
  return ((static_cast<std::uint64_t>(address) >> 4) & kField14) |
         (((static_cast<std::uint64_t>(leading_byte_offset) >> 4) & kField14) << 16) |
         (((static_cast<std::uint64_t>(stride_byte_offset) >> 4) & kField14) << 32) |
         ((static_cast<std::uint64_t>(swizzle_mode) & 0x3) << 62);
  // <<< d09.7a
}

constexpr int kWarpgroupThreads = 128;
constexpr int kWgmmaN = 64;  // one wgmma instruction's N: a tile of N = 128 is two of them
[[maybe_unused]] constexpr int kWgmmaRegs = kWgmmaM * kWgmmaN / kWarpgroupThreads;  // 32 float32

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// d (32 float32 per thread: the 64x64 tile) = (scale_d ? d : 0) + A * B for one k16 step; the
// operands are read from shared memory through their descriptors. scale-a and scale-b 1 (no
// negation), transpose 0 for both (K-major).
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[kWgmmaRegs], std::uint64_t desc_a,
                                                std::uint64_t desc_b, int scale_d) {
  // >>> STARTER d09.7b
  //|  // TODO(d09.7b) (lesson §8.4): asm volatile: "{ .reg .pred p; setp.ne.b32 p, %34, 0;
  //|  // wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, ..., %31}, %32, %33, p, 1, 1, 0,
  //|  // 0; }" with d[0..31] as "+f", desc_a and desc_b as "l", scale_d as "r", and a "memory"
  //|  // clobber.
  // === SOLUTION
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
      " wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, "
      "%8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, "
      "%26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d)
      : "memory");
  // <<< d09.7b
}
// The accumulators belong to the asynchronous wgmma from wgmma.fence until wait_group returns:
// this empty asm, which "modifies" each of them, keeps the compiler from moving an ordinary
// register write (the zeros) below the fence, or a read (the stores of C) above the wait.
__device__ __forceinline__ void fence_registers(float (&d)[kWgmmaRegs]) {
#pragma unroll
  for (int i = 0; i < kWgmmaRegs; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
#endif

// One warpgroup, the whole tile: A [64, K] and B [kN, K] to shared memory in the core-matrix
// layout (16-byte chunks: one core-matrix row each), fence.proxy.async (the generic-proxy stores
// become visible to the async proxy that wgmma reads through), barrier, then wgmma.fence, K / 16
// steps of kN / 64 wgmma each, commit_group, wait_group 0. D: warp w of the group holds rows
// 16 w .. 16 w + 15 in the mma.sync C layout, repeated for every 8 columns.
template <int kN>
__global__ void __launch_bounds__(kWarpgroupThreads)
    wgmma_64xn_kernel(const bfloat16* __restrict__ A, const bfloat16* __restrict__ B,
                      float* __restrict__ C, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  // >>> STARTER d09.7b
  //|  // TODO(d09.7b) (lesson §8.4): dynamic shared memory: A's [64, K] then B's [kN, K], both laid
  //|  // out by core_matrix_offset. Copy them in 16-byte chunks (one core-matrix row each: row =
  //|  // j / (K / 8), k = 8 (j % (K / 8))); then asm "fence.proxy.async.shared::cta;" (the async proxy
  //|  // must see the stores) and __syncthreads(). float d[kN / 64][kWgmmaRegs] = 0 then
  //|  // fence_registers(d[h]); "wgmma.fence.sync.aligned;"; for each k16 step ks: desc_a =
  //|  // matrix_descriptor(smem_address(A's tile) + 256 ks, LBO = kCoreMatrixBytes, SBO = 16 K, swizzle
  //|  // 0); for each 64-column half h, desc_b likewise from B's tile + h * 8 * SBO;
  //|  // wgmma_m64n64k16(d[h], desc_a, desc_b, ks > 0). Then "wgmma.commit_group.sync.aligned;",
  //|  // "wgmma.wait_group.sync.aligned 0;", fence_registers(d[h]), and store: warp w, lane, register i
  //|  // of half h is C[16 w + row][64 h + 8 (i / 4) + col] with (row, col) = c_fragment(lane, i % 4).
  // === SOLUTION
  constexpr int kHalves = kN / kWgmmaN;  // wgmma instructions per k16 step
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* a_smem = smem;                                   // [64, K] core matrices
  unsigned char* b_smem = smem + kWgmmaM * K * sizeof(bfloat16);  // [kN, K] core matrices
  const int tid = static_cast<int>(threadIdx.x);
  const int chunks = K / 8;  // 16-byte chunks per row
  for (int i = tid; i < (kWgmmaM + kN) * chunks; i += kWarpgroupThreads) {
    const bool is_a = i < kWgmmaM * chunks;
    const int j = is_a ? i : i - kWgmmaM * chunks;
    const int row = j / chunks, k = (j % chunks) * 8;
    BChunk v;
    v.load((is_a ? A : B) + static_cast<std::int64_t>(row) * K + k);
    v.store(reinterpret_cast<bfloat16*>((is_a ? a_smem : b_smem) + core_matrix_offset(row, k, K)));
  }
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();

  float d[kHalves][kWgmmaRegs];
#pragma unroll
  for (int h = 0; h < kHalves; ++h)
#pragma unroll
    for (int i = 0; i < kWgmmaRegs; ++i) d[h][i] = 0.0f;
#pragma unroll
  for (int h = 0; h < kHalves; ++h) fence_registers(d[h]);   // the zeros are written before ...
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");  // ... the fence that hands them over
  const std::uint32_t sbo = static_cast<std::uint32_t>(K) * 16;  // bytes between 8-row groups
  for (int ks = 0; ks < K / 16; ++ks) {
    const std::uint32_t step = static_cast<std::uint32_t>(ks) * 2 * kCoreMatrixBytes;
    const std::uint64_t desc_a =
        matrix_descriptor(smem_address(a_smem) + step, kCoreMatrixBytes, sbo, 0);
#pragma unroll
    for (int h = 0; h < kHalves; ++h) {
      // Columns 64 h .. 64 h + 63 of the tile: B's rows from 64 h, eight 8-row groups further.
      const std::uint64_t desc_b = matrix_descriptor(
          smem_address(b_smem) + h * (kWgmmaN / 8) * sbo + step, kCoreMatrixBytes, sbo, 0);
      wgmma_m64n64k16(d[h], desc_a, desc_b, ks > 0 ? 1 : 0);
    }
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
  for (int h = 0; h < kHalves; ++h) fence_registers(d[h]);

  const int warp = tid / kWarpSize, lane = tid % kWarpSize;
#pragma unroll
  for (int h = 0; h < kHalves; ++h)
#pragma unroll
    for (int i = 0; i < kWgmmaRegs; ++i) {
      const FragCoord c = c_fragment(lane, i % 4);  // within the 16x8 block i / 4
      C[(16 * warp + c.row) * kN + h * kWgmmaN + 8 * (i / 4) + c.col] = d[h][i];
    }
    // <<< d09.7b
#else
  // NOTE: never runs: the launcher refuses every GPU but compute capability 9.0 (wgmma exists on
  // sm_90a only). The trap makes it loud if it ever did, and lets the SASS check tell this
  // architecture's kernel from an unwritten one (it looks for HGMMA or this trap).
  __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// Launchers.

FragCoord mma_a_coord(int lane, int element) { return a_fragment(lane, element); }
FragCoord mma_b_coord(int lane, int element) { return b_fragment(lane, element); }
FragCoord mma_c_coord(int lane, int element) { return c_fragment(lane, element); }
int swizzle_chunk(int row, int chunk, int row_bytes) { return chunk_xor(row, chunk, row_bytes); }
std::int64_t wgmma_smem_offset(int row, int k, int K) { return core_matrix_offset(row, k, K); }
std::uint64_t wgmma_descriptor(std::uint32_t smem_address, std::uint32_t leading_byte_offset,
                               std::uint32_t stride_byte_offset, int swizzle_mode) {
  return matrix_descriptor(smem_address, leading_byte_offset, stride_byte_offset, swizzle_mode);
}

namespace {

template <class T>
void launch_wmma(const char* who, const T* A, const T* B, float* C, std::int64_t M, std::int64_t N,
                 std::int64_t K) {
  const std::string name = who;
  course::require(M >= 0 && N >= 0 && K >= 0, name + ": M, N and K must be >= 0");
  course::require(M % kWmmaTile == 0 && N % kWmmaTile == 0 && K % kWmmaTile == 0,
                  name + ": M = " + std::to_string(M) + ", N = " + std::to_string(N) +
                      ", K = " + std::to_string(K) +
                      " must all be multiples of 16: this launcher has no partial tiles (one "
                      "warp computes one whole 16x16 tile with 16x16x16 fragments)");
  course::require(K < (std::int64_t{1} << 31) && N < (std::int64_t{1} << 31),
                  name + ": K and N must be below 2^31 (the leading dimensions are 32-bit)");
  if (M == 0 || N == 0) return;
  course::require(A != nullptr && B != nullptr && C != nullptr, name + ": null pointer");
  course::require(
      course::is_aligned(A, 32) && course::is_aligned(B, 32) && course::is_aligned(C, 32),
      name +
          ": A, B and C must be 32-byte aligned (wmma::load_matrix_sync and "
          "store_matrix_sync need 256-bit aligned tiles)");
  if (K == 0) {
    COURSE_CUDA_CHECK(cudaMemsetAsync(C, 0, sizeof(float) * static_cast<std::size_t>(M * N)));
    return;
  }
  const std::int64_t tiles = (M / kWmmaTile) * (N / kWmmaTile);
  const std::int64_t blocks = course::ceil_div<std::int64_t>(tiles, kWmmaWarps);
  course::require(blocks < (std::int64_t{1} << 31), name + ": too many tiles");
  wmma_gemm_kernel<T><<<static_cast<unsigned>(blocks), kWmmaThreads>>>(A, B, C, M, N, K);
  COURSE_LAUNCH_CHECK();
}

void require_pointers(const char* who, const void* a, const void* b, const void* c) {
  course::require(a != nullptr && b != nullptr && c != nullptr,
                  std::string(who) + ": null pointer");
}

}  // namespace

void wmma_gemm_f16(const half* A, const half* B, float* C, std::int64_t M, std::int64_t N,
                   std::int64_t K) {
  launch_wmma("wmma_gemm_f16", A, B, C, M, N, K);
}

void wmma_gemm_bf16(const bfloat16* A, const bfloat16* B, float* C, std::int64_t M, std::int64_t N,
                    std::int64_t K) {
  launch_wmma("wmma_gemm_bf16", A, B, C, M, N, K);
}

void mma_16x8x16_bf16(const bfloat16* A, const bfloat16* B, float* C) {
  require_pointers("mma_16x8x16_bf16", A, B, C);
  mma_16x8x16_kernel<bfloat16><<<1, kWarpSize>>>(A, B, C);
  COURSE_LAUNCH_CHECK();
}

void mma_16x8x16_f16(const half* A, const half* B, float* C) {
  require_pointers("mma_16x8x16_f16", A, B, C);
  mma_16x8x16_kernel<half><<<1, kWarpSize>>>(A, B, C);
  COURSE_LAUNCH_CHECK();
}

void ldmatrix_dump(const std::uint16_t* src, std::uint32_t* out, int count, bool trans) {
  course::require(count == 1 || count == 2 || count == 4,
                  "ldmatrix_dump: count = " + std::to_string(count) + " must be 1, 2 or 4");
  require_pointers("ldmatrix_dump", src, out, out);
  if (count == 1 && !trans) ldmatrix_dump_kernel<1, false><<<1, kWarpSize>>>(src, out);
  if (count == 1 && trans) ldmatrix_dump_kernel<1, true><<<1, kWarpSize>>>(src, out);
  if (count == 2 && !trans) ldmatrix_dump_kernel<2, false><<<1, kWarpSize>>>(src, out);
  if (count == 2 && trans) ldmatrix_dump_kernel<2, true><<<1, kWarpSize>>>(src, out);
  if (count == 4 && !trans) ldmatrix_dump_kernel<4, false><<<1, kWarpSize>>>(src, out);
  if (count == 4 && trans) ldmatrix_dump_kernel<4, true><<<1, kWarpSize>>>(src, out);
  COURSE_LAUNCH_CHECK();
}

void ldmatrix_swizzled_tile(const std::uint16_t* src, std::uint32_t* out, int row_bytes) {
  course::require(
      row_bytes == 64 || row_bytes == 128,
      "ldmatrix_swizzled_tile: row_bytes = " + std::to_string(row_bytes) + " must be 64 or 128");
  require_pointers("ldmatrix_swizzled_tile", src, out, out);
  course::require(course::is_aligned(src, 16),
                  "ldmatrix_swizzled_tile: src must be 16-byte aligned (it moves 16-byte chunks)");
  if (row_bytes == 64) ldmatrix_swizzled_tile_kernel<64><<<1, kWarpSize>>>(src, out);
  if (row_bytes == 128) ldmatrix_swizzled_tile_kernel<128><<<1, kWarpSize>>>(src, out);
  COURSE_LAUNCH_CHECK();
}

void gemm_mma_bf16(const bfloat16* A, const bfloat16* B, float* C, std::int64_t M, std::int64_t N,
                   std::int64_t K) {
  course::require(M >= 0 && N >= 0 && K >= 0, "gemm_mma_bf16: M, N and K must be >= 0");
  if (M == 0 || N == 0) return;
  require_pointers("gemm_mma_bf16", A, B, C);
  const std::int64_t grid_x = course::ceil_div<std::int64_t>(N, kBlockN);
  const std::int64_t grid_y = course::ceil_div<std::int64_t>(M, kBlockM);
  course::require(grid_x < (std::int64_t{1} << 31) && grid_y <= 65535,
                  "gemm_mma_bf16: M must be at most 65535 * 64 and N below 2^37");
  if (K == 0) {
    COURSE_CUDA_CHECK(cudaMemsetAsync(C, 0, sizeof(float) * static_cast<std::size_t>(M * N)));
    return;
  }
  const bool vectorized = K % 8 == 0 && course::is_aligned(A, 16) && course::is_aligned(B, 16);
  const dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y));
  gemm_mma_kernel<<<grid, kGemmThreads>>>(A, B, C, M, N, K, vectorized);
  COURSE_LAUNCH_CHECK();
}

void wgmma_64xn(const bfloat16* A, const bfloat16* B, float* C, int N, int K) {
  const auto& facts = course::device_facts();
  course::require(facts.cc_major == 9 && facts.cc_minor == 0,
                  "wgmma_64xn: needs compute capability 9.0 (Hopper, compiled for sm_90a): "
                  "wgmma does not exist on " +
                      facts.name + " (" + std::to_string(facts.cc_major) + "." +
                      std::to_string(facts.cc_minor) + ")");
  course::require(N == 64 || N == 128, "wgmma_64xn: N = " + std::to_string(N) +
                                           " must be 64 or 128 (one or two m64n64k16 per step)");
  course::require(K >= 16 && K <= kWgmmaMaxK && K % 16 == 0,
                  "wgmma_64xn: K = " + std::to_string(K) +
                      " must be a multiple of 16 between 16 and 256 (the whole tile is in "
                      "shared memory)");
  require_pointers("wgmma_64xn", A, B, C);
  course::require(course::is_aligned(A, 16) && course::is_aligned(B, 16),
                  "wgmma_64xn: A and B must be 16-byte aligned (they move in 16-byte chunks)");
  const std::size_t smem = static_cast<std::size_t>(kWgmmaM + N) * K * sizeof(bfloat16);
  if (N == 64) {
    course::allow_dynamic_smem(wgmma_64xn_kernel<64>, smem);
    wgmma_64xn_kernel<64><<<1, kWarpgroupThreads, smem>>>(A, B, C, K);
  } else {
    course::allow_dynamic_smem(wgmma_64xn_kernel<128>, smem);
    wgmma_64xn_kernel<128><<<1, kWarpgroupThreads, smem>>>(A, B, C, K);
  }
  COURSE_LAUNCH_CHECK();
}

}  // namespace d09
