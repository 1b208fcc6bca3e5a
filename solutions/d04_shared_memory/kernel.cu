// >>> STARTER
//|// Day 4 — your kernels: the matrix transpose, from naive to bank-conflict-free. Read
//|// lessons/d04_shared_memory.md first; README.md in this folder lists the exercises. Replace each
//|// TODO block; keep the names and the launchers (the tests call them through lab.h).
//|// Check with:  course check d04
// === SOLUTION
// Day 4 — reference solution: the matrix transpose, from naive to bank-conflict-free.
// <<<
//
// Every variant computes out[c, r] = in[r, c] (in: row-major [rows, cols], out: [cols, rows]).
// Variants 1-4 share one geometry, so that the benchmark rows differ by one idea each:
// a block moves a kTile x kTile tile with kTile x kBlockRows threads. Variant 5 changes the
// geometry to move 16 bytes per access.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "course/check.h"
#include "course/dtype.h"
#include "course/vec.cuh"
#include "lab.h"

namespace d04 {

using course::Vec;

// Shared memory is 32 banks, each 4 bytes wide: byte address a is in bank (a / 4) % 32.
constexpr int kBanks = 32;
constexpr int kBankBytes = 4;

// ---------------------------------------------------------------------------------------------
// Geometry of variants 1-4 (lesson §4). One block moves one kTile x kTile tile; its threads are
// kTile x kBlockRows, so each thread moves kTile / kBlockRows = 4 elements and has four loads in
// flight: fewer, busier threads hide DRAM latency better than one element per thread.
constexpr int kTile = 32;  // = the warp size: one warp moves one tile row
constexpr int kBlockRows = 8;
constexpr int kThreads = kTile * kBlockRows;
constexpr int kElemsPerThread = kTile / kBlockRows;
static_assert(kElemsPerThread * kBlockRows == kTile, "the block's rows must divide the tile");

// The tile layouts: where element (row, col) of a tile lives, in elements from the tile's start.
// A warp writes one tile ROW (32 consecutive columns) and later reads one tile COLUMN (32 rows):
// the layout decides how many banks those 32 addresses fall into (lesson §5, §6). The kernels
// address their tiles only through these functions, and the tests check them with a model of
// the banks (no GPU needed).

// >>> STARTER
//|// Variant 2 (given): plain row-major.
// === SOLUTION
// Variant 2: plain row-major. A column of 4-byte elements is 32 words, kTile words apart: all
// in the same bank, a 32-way conflict (16-way for 2-byte elements: banks 0 and 16 only).
// <<<
__host__ __device__ constexpr int plain_index(int row, int col) { return row * kTile + col; }

// >>> STARTER d04.3
//|// Variant 3: each row padded.
//|// TODO(d04.3): how many elements of T make one 4-byte bank? (1 float, 2 halves: use kBankBytes
//|// and sizeof(T).) Lesson §5 shows why one bank, and not one element, is the right pad.
// === SOLUTION
// Variant 3: each row padded by one 4-byte bank, so that row r starts r banks further on and a
// column's 32 elements land in 32 different banks. One bank, not one element: with 2-byte
// elements a one-element pad (rows of 33 halves = 16.5 words) still collides for odd columns.
// <<< d04.3
template <class T>
// >>> STARTER d04.3
//|constexpr int kPad = 0;
// === SOLUTION
constexpr int kPad = kBankBytes / static_cast<int>(sizeof(T));  // 1 float, 2 halves
// <<< d04.3
template <class T>
__host__ __device__ constexpr int padded_index(int row, int col) {
  constexpr int kRowLength = kTile + kPad<T>;  // (kTile + kPad) elements per tile row
  return row * kRowLength + col;
}

// >>> STARTER d04.4
//|// Variant 4: unpadded, column index swizzled.
//|// TODO(d04.4): store column `col` of row `row` at column col ^ row (lesson §6). Work out on
//|// paper why a row write and a column read both hit 32 different banks.
//|__host__ __device__ constexpr int swizzled_index(int row, int col) { return row * kTile + col; }
// === SOLUTION
// Variant 4: no padding; column `col` of row `row` is stored at column col ^ row. Within a row,
// XOR with a constant permutes the columns (a row write still hits every bank once); down a
// column, col ^ row takes 32 different values as row does (a column read hits every bank once).
// For 2-byte elements the pairs (2m, 2m+1) of a row share a word and land in banks 16 apart.
__host__ __device__ constexpr int swizzled_index(int row, int col) {
  return row * kTile + (col ^ row);
}
// <<< d04.4

// ---------------------------------------------------------------------------------------------
// Exercise 1 — naive (lesson §3).
// Block (bx, by) moves the tile whose first input element is (kTile by, kTile bx); thread
// (tx, ty) moves input elements (row ty + kBlockRows j, col tx) of the tile, j = 0..3.
// >>> STARTER
// === SOLUTION
// A warp reads 32 consecutive elements of one input row (coalesced) but writes 32 different
// output rows, one element each: 32 sectors per store instruction, mostly wasted.
// <<<
template <class T>
__global__ void __launch_bounds__(kThreads)
    transpose_1_naive_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t rows,
                             std::int64_t cols) {
  // >>> STARTER d04.1
  //|  // TODO(d04.1): with r0 = kTile * blockIdx.y and c = kTile * blockIdx.x + threadIdx.x (as
  //|  // int64_t: rows * cols may exceed 2^31), loop j over kElemsPerThread (#pragma unroll):
  //|  //   r = r0 + threadIdx.y + j * kBlockRows;
  //|  //   if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
  //|  // A warp then reads 32 consecutive elements of one input row, and writes to 32 output rows.
  // === SOLUTION
  const std::int64_t r0 = std::int64_t{blockIdx.y} * kTile;
  const std::int64_t c = std::int64_t{blockIdx.x} * kTile + threadIdx.x;
#pragma unroll
  for (int j = 0; j < kElemsPerThread; ++j) {
    const std::int64_t r = r0 + threadIdx.y + j * kBlockRows;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
  }
  // <<< d04.1
}

// ---------------------------------------------------------------------------------------------
// Exercise 2 — through shared memory (lesson §4).
// >>> STARTER
//|// Load: thread (tx, ty) copies input (r0 + i, c0 + tx) to tile (i, tx), i = ty + kBlockRows j.
//|// Store: thread (tx, ty) writes output (c0 + i, r0 + tx) from tile (tx, i).
// === SOLUTION
// Load: thread (tx, ty) copies input (r0 + i, c0 + tx) to tile (i, tx), i = ty + kBlockRows j:
//   a warp reads part of one input row and writes one tile row.
// Store: thread (tx, ty) writes output (c0 + i, r0 + tx) from tile (tx, i):
//   a warp writes part of one output row and reads one tile COLUMN: a 32-way bank conflict.
// Both global accesses are now coalesced; the reordering happens in on-chip memory.
// <<<
template <class T>
__global__ void __launch_bounds__(kThreads)
    transpose_2_smem_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t rows,
                            std::int64_t cols) {
  // >>> STARTER d04.2
  //|  // TODO(d04.2):
  //|  //  1. __shared__ T tile[kTile * kTile];  r0 = kTile * blockIdx.y, c0 = kTile * blockIdx.x.
  //|  //  2. Load: for j < kElemsPerThread, i = threadIdx.y + j * kBlockRows: if input (r0 + i,
  //|  //     c0 + threadIdx.x) is inside the matrix, tile[plain_index(i, threadIdx.x)] = that element.
  //|  //  3. __syncthreads(): threads are about to read what OTHER threads wrote. Every thread of
  //|  //     the block must reach it: do not put it inside an if, and do not return early.
  //|  //  4. Store: for the same i, output element (c0 + i, r0 + threadIdx.x), if it is inside the
  //|  //     [cols, rows] output, = tile[plain_index(threadIdx.x, i)].
  //|  // Both global accesses are now coalesced; the tile is read down a column (lesson §5).
  // === SOLUTION
  __shared__ T tile[kTile * kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t r0 = std::int64_t{blockIdx.y} * kTile, c0 = std::int64_t{blockIdx.x} * kTile;
#pragma unroll
  for (int j = 0; j < kElemsPerThread; ++j) {
    const int i = ty + j * kBlockRows;
    const std::int64_t r = r0 + i, c = c0 + tx;
    if (r < rows && c < cols) tile[plain_index(i, tx)] = in[r * cols + c];
  }
  // Each thread now reads elements that OTHER threads wrote: wait until the whole tile is there.
  // Every thread of the block reaches this line (no early return above), as a barrier requires.
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kElemsPerThread; ++j) {
    const int i = ty + j * kBlockRows;
    const std::int64_t out_r = c0 + i, out_c = r0 + tx;  // = input (r0 + tx, c0 + i)
    if (out_r < cols && out_c < rows) out[out_r * rows + out_c] = tile[plain_index(tx, i)];
  }
  // <<< d04.2
}

// ---------------------------------------------------------------------------------------------
// >>> STARTER
//|// Exercise 3 — padded tile (lesson §5). Variant 2 with rows of kTile + kPad elements.
// === SOLUTION
// Exercise 3 — padded tile (lesson §5). Variant 2 with rows of kTile + kPad elements: the
// column read is conflict-free, at the cost of kPad wasted elements per row.
// <<<
template <class T>
__global__ void __launch_bounds__(kThreads)
    transpose_3_padded_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t rows,
                              std::int64_t cols) {
  // >>> STARTER d04.3
  //|  // TODO(d04.3): variant 2 with __shared__ T tile[kTile * (kTile + kPad<T>)] and padded_index<T>
  //|  // in place of plain_index. Then set kPad above.
  // === SOLUTION
  __shared__ T tile[kTile * (kTile + kPad<T>)];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t r0 = std::int64_t{blockIdx.y} * kTile, c0 = std::int64_t{blockIdx.x} * kTile;
#pragma unroll
  for (int j = 0; j < kElemsPerThread; ++j) {
    const int i = ty + j * kBlockRows;
    const std::int64_t r = r0 + i, c = c0 + tx;
    if (r < rows && c < cols) tile[padded_index<T>(i, tx)] = in[r * cols + c];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kElemsPerThread; ++j) {
    const int i = ty + j * kBlockRows;
    const std::int64_t out_r = c0 + i, out_c = r0 + tx;
    if (out_r < cols && out_c < rows) out[out_r * rows + out_c] = tile[padded_index<T>(tx, i)];
  }
  // <<< d04.3
}

// ---------------------------------------------------------------------------------------------
// >>> STARTER
//|// Exercise 4 — swizzled tile (lesson §6). Variant 2 with column col ^ row.
// === SOLUTION
// Exercise 4 — swizzled tile (lesson §6). Variant 2 with column col ^ row: conflict-free like
// variant 3, in exactly kTile x kTile elements, and every row stays where variant 2 put it.
// <<<
template <class T>
__global__ void __launch_bounds__(kThreads)
    transpose_4_swizzled_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t rows,
                                std::int64_t cols) {
  // >>> STARTER d04.4
  //|  // TODO(d04.4): variant 2 with swizzled_index in place of plain_index (kTile * kTile elements,
  //|  // no padding). Then write swizzled_index above.
  // === SOLUTION
  __shared__ T tile[kTile * kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t r0 = std::int64_t{blockIdx.y} * kTile, c0 = std::int64_t{blockIdx.x} * kTile;
#pragma unroll
  for (int j = 0; j < kElemsPerThread; ++j) {
    const int i = ty + j * kBlockRows;
    const std::int64_t r = r0 + i, c = c0 + tx;
    if (r < rows && c < cols) tile[swizzled_index(i, tx)] = in[r * cols + c];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kElemsPerThread; ++j) {
    const int i = ty + j * kBlockRows;
    const std::int64_t out_r = c0 + i, out_c = r0 + tx;
    if (out_r < cols && out_c < rows) out[out_r * rows + out_c] = tile[swizzled_index(tx, i)];
  }
  // <<< d04.4
}

// ---------------------------------------------------------------------------------------------
// Geometry of variant 5 (lesson §7). Every global access and every shared store moves one
// 16-byte vector of kVec elements. A tile row is kChunks = 8 such chunks: 128 bytes, each bank
// exactly once. The tile is kTileRows5 input rows of kTileCols5 = 8 kVec input columns
// (64 x 32 floats, 64 x 64 halves: 8 KiB either way).
template <class T>
constexpr int kVec = course::kVec16<T>;  // 4 floats, 8 halves or bfloat16s
constexpr int kChunks = 8;
template <class T>
constexpr int kTileCols5 = kChunks* kVec<T>;
constexpr int kTileRows5 = 64;
constexpr int kThreads5 = 256;
// 8 blocks of 256 threads fill an SM's 2048 threads: asking for them in __launch_bounds__ caps
// the registers at 32 per thread (65,536 / 2048), so that registers do not limit occupancy.
constexpr int kMinBlocksPerSm5 = 8;
constexpr int kWarp = 32;
constexpr int kRowsPerPass5 = kThreads5 / kChunks;  // 8 lanes per 128-byte row: 32 rows a pass
constexpr int kUnitsPerWarp = kWarp / kChunks;      // 4 groups of 8 lanes in a warp
static_assert(kChunks * 16 == kBanks * kBankBytes, "a tile row must cover every bank once");
static_assert(kTileRows5 % kRowsPerPass5 == 0, "the passes must cover the tile");
static_assert(kUnitsPerWarp * kChunks == kWarp, "a warp must hold whole units of 8 lanes");

// >>> STARTER d04.5
//|// Variant 5's layout swizzles whole 16-byte chunks, so that each chunk stays 16-byte aligned.
//|// TODO(d04.5): store chunk `chunk` of tile row `row` at chunk chunk ^ ((row / kVec<T>) % kChunks)
//|// (lesson §7: why rows go in groups of kVec).
// === SOLUTION
// Variant 5's layout swizzles whole 16-byte chunks, so that each chunk stays 16-byte aligned
// (one STS.128 per chunk; a 4-byte pad per row would misalign three rows in four). Chunk
// `chunk` of tile row `row` is stored at chunk chunk ^ ((row / kVec) % 8). A lane gathers kVec
// consecutive rows of one column, so rows come in groups of kVec with one swizzle per group;
// the 8 lanes of a 128-byte output segment read 8 different groups, i.e. 8 different chunks
// (lesson §7.3).
// <<< d04.5
template <class T>
__host__ __device__ constexpr int swizzled_chunk(int row, int chunk) {
  // >>> STARTER d04.5
  //|  return chunk;
  // === SOLUTION
  return chunk ^ ((row / kVec<T>) % kChunks);
  // <<< d04.5
}

// Exercise 5 — 16-byte vectors through a chunk-swizzled tile (lesson §7).
// Load, pass p: thread t copies chunk t % 8 of tile row i = 32 p + t / 8 (kVec input elements)
//   with one 16-byte load and one 16-byte shared store. 8 lanes read one 128-byte row segment.
// Store, pass p: unit u = 32 p + t / 8 (8 lanes) writes 128 contiguous bytes of output row
//   c0 + c, c = tile column; lane t % 8 of the unit gathers kVec elements down column c (tile rows
//   q kVec .. q kVec + kVec - 1) and writes them as one 16-byte vector. The 4 units of a warp
//   take 4 adjacent tile columns, so that its 32 lanes read 32 different banks.
// kVectorOk = false (misaligned pointers, rows or cols not a multiple of kVec) compiles a
// second kernel in which each lane moves its vector element by element, through the same tile.
template <class T, bool kVectorOk>
__global__ void __launch_bounds__(kThreads5, kMinBlocksPerSm5)
    transpose_5_vectorized_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t rows,
                                  std::int64_t cols) {
  // >>> STARTER d04.5
  //|  // TODO(d04.5): with V = kVec<T>, __shared__ Vec<T, V> tile[kTileRows5][kChunks],
  //|  // r0 = kTileRows5 * blockIdx.y and c0 = kTileCols5<T> * blockIdx.x (as int64_t):
  //|  //  1. Load, for p < kTileRows5 / kRowsPerPass5: i = p * kRowsPerPass5 + t / kChunks,
  //|  //     chunk = t % kChunks, input element (r0 + i, c0 + chunk * V). Fill a Vec<T, V> v{}
  //|  //     (zeros) with v.load(in + offset) if constexpr (kVectorOk) and the vector is inside the
  //|  //     matrix, else element by element, only the elements inside it.
  //|  //     Then tile[i][swizzled_chunk<T>(i, chunk)] = v.
  //|  //  2. __syncthreads().
  //|  //  3. Store, with kGroups = kTileRows5 / (kChunks * V) and kUnits = kTileCols5<T> * kGroups,
  //|  //     for p < kUnits / kRowsPerPass5: u = p * kRowsPerPass5 + t / kChunks,
  //|  //     c = (u / kUnitsPerWarp / kGroups) * kUnitsPerWarp + u % kUnitsPerWarp,
  //|  //     q = (u / kUnitsPerWarp % kGroups) * kChunks + t % kChunks. Gather
  //|  //     v[k] = tile[i][swizzled_chunk<T>(i, c / V)][c % V] for i = q * V + k, k < V, and write
  //|  //     v to output (c0 + c, r0 + q * V), if that is inside the [cols, rows] output: if
  //|  //     kVectorOk, as reinterpret_cast<Vec<T, V>*>(output row)[(r0 + q * V) / V] = v (lesson §7
  //|  //     says why not v.store()), else element by element, only the elements inside it.
  //|  // Then look at the SASS (lesson §9): LDG.E.128, STS.128 and STG.E.128 in the <T, true> kernel.
  // === SOLUTION
  constexpr int V = kVec<T>;
  constexpr int kGroups = kTileRows5 / (kChunks * V);  // 128-byte segments per output row: 2 or 1
  constexpr int kUnits = kTileCols5<T> * kGroups;      // 64 units of 8 lanes
  static_assert(kUnits % kRowsPerPass5 == 0, "the store passes must cover the tile");
  __shared__ Vec<T, V> tile[kTileRows5][kChunks];
  const int t = threadIdx.x;
  const std::int64_t r0 = std::int64_t{blockIdx.y} * kTileRows5;
  const std::int64_t c0 = std::int64_t{blockIdx.x} * kTileCols5<T>;

#pragma unroll
  for (int p = 0; p < kTileRows5 / kRowsPerPass5; ++p) {
    const int i = p * kRowsPerPass5 + t / kChunks, chunk = t % kChunks;
    const std::int64_t r = r0 + i, c = c0 + chunk * V, offset = r * cols + c;
    Vec<T, V> v{};  // zeros outside the matrix
    if constexpr (kVectorOk) {
      // cols % V == 0: a vector is either wholly inside the matrix or wholly outside.
      if (r < rows && c < cols) v.load(in + offset);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e)
        if (r < rows && c + e < cols) v[e] = in[offset + e];
    }
    tile[i][swizzled_chunk<T>(i, chunk)] = v;
  }
  __syncthreads();
#pragma unroll
  for (int p = 0; p < kUnits / kRowsPerPass5; ++p) {
    const int u = p * kRowsPerPass5 + t / kChunks;
    const int c = (u / kUnitsPerWarp / kGroups) * kUnitsPerWarp + u % kUnitsPerWarp;
    const int q = (u / kUnitsPerWarp % kGroups) * kChunks + t % kChunks;
    Vec<T, V> v;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int i = q * V + k;
      v[k] = tile[i][swizzled_chunk<T>(i, c / V)][c % V];
    }
    const std::int64_t out_r = c0 + c, out_c = r0 + q * V;  // = input (r0 + q V, c0 + c)
    if (out_r < cols && out_c < rows) {
      T* out_row = out + out_r * rows;
      if constexpr (kVectorOk) {  // rows % V == 0: the whole vector is inside
        // The output row as an array of vectors: one 16-byte store. (v.store(out_row + out_c)
        // means the same, but nvcc 13 compiles it into four 4-byte stores here, lesson §7.5;
        // the SASS check vectorized_fast_path_moves_16_bytes is there to catch that.)
        reinterpret_cast<Vec<T, V>*>(out_row)[out_c / V] = v;
      } else {
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (out_c + e < rows) out_row[out_c + e] = v[e];
      }
    }
  }
  // <<< d04.5
}

// ---------------------------------------------------------------------------------------------
// >>> STARTER
//|// Launchers (given).
// === SOLUTION
// Launchers.
// <<<

namespace {

// Checks what every variant needs; false when there is nothing to do (an empty matrix).
template <class T>
bool check_arguments(const char* name, const T* in, const T* out, std::int64_t rows,
                     std::int64_t cols) {
  const std::string fn = name;
  course::require(rows >= 0 && cols >= 0, fn + ": rows and cols must be >= 0");
  if (rows == 0 || cols == 0) return false;
  course::require(in != nullptr && out != nullptr, fn + ": null pointer");
  const auto a = reinterpret_cast<std::uintptr_t>(in), b = reinterpret_cast<std::uintptr_t>(out);
  const auto bytes = static_cast<std::uintptr_t>(rows * cols) * sizeof(T);
  course::require(a + bytes <= b || b + bytes <= a,
                  fn + ": in and out overlap; a transpose cannot be done in place here");
  return true;
}

// One block per tile: x over the input's column tiles, y over its row tiles.
dim3 tile_grid(const char* name, std::int64_t rows, std::int64_t cols, int tile_rows,
               int tile_cols) {
  const std::int64_t gx = course::ceil_div<std::int64_t>(cols, tile_cols);
  const std::int64_t gy = course::ceil_div<std::int64_t>(rows, tile_rows);
  course::require(gy <= 65535, std::string(name) + ": rows = " + std::to_string(rows) +
                                   " needs more than 65535 tiles along grid.y");
  course::require(gx <= 0x7fffffff, std::string(name) + ": cols too large for the grid");
  return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
}

}  // namespace

template <class T>
void transpose_1_naive(const T* in, T* out, std::int64_t rows, std::int64_t cols) {
  if (!check_arguments("transpose_1_naive", in, out, rows, cols)) return;
  const dim3 grid = tile_grid("transpose_1_naive", rows, cols, kTile, kTile);
  transpose_1_naive_kernel<T><<<grid, dim3(kTile, kBlockRows)>>>(in, out, rows, cols);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void transpose_2_smem(const T* in, T* out, std::int64_t rows, std::int64_t cols) {
  if (!check_arguments("transpose_2_smem", in, out, rows, cols)) return;
  const dim3 grid = tile_grid("transpose_2_smem", rows, cols, kTile, kTile);
  transpose_2_smem_kernel<T><<<grid, dim3(kTile, kBlockRows)>>>(in, out, rows, cols);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void transpose_3_padded(const T* in, T* out, std::int64_t rows, std::int64_t cols) {
  if (!check_arguments("transpose_3_padded", in, out, rows, cols)) return;
  const dim3 grid = tile_grid("transpose_3_padded", rows, cols, kTile, kTile);
  transpose_3_padded_kernel<T><<<grid, dim3(kTile, kBlockRows)>>>(in, out, rows, cols);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void transpose_4_swizzled(const T* in, T* out, std::int64_t rows, std::int64_t cols) {
  if (!check_arguments("transpose_4_swizzled", in, out, rows, cols)) return;
  const dim3 grid = tile_grid("transpose_4_swizzled", rows, cols, kTile, kTile);
  transpose_4_swizzled_kernel<T><<<grid, dim3(kTile, kBlockRows)>>>(in, out, rows, cols);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void transpose_5_vectorized(const T* in, T* out, std::int64_t rows, std::int64_t cols) {
  if (!check_arguments("transpose_5_vectorized", in, out, rows, cols)) return;
  const dim3 grid = tile_grid("transpose_5_vectorized", rows, cols, kTileRows5, kTileCols5<T>);
  // 16-byte accesses need 16-byte-aligned addresses: both base pointers aligned, and every
  // row of the input (cols elements) and of the output (rows elements) a whole number of vectors.
  const bool vector_ok = course::is_aligned(in, 16) && course::is_aligned(out, 16) &&
                         cols % kVec<T> == 0 && rows % kVec<T> == 0;
  if (vector_ok) {
    transpose_5_vectorized_kernel<T, true><<<grid, kThreads5>>>(in, out, rows, cols);
  } else {
    transpose_5_vectorized_kernel<T, false><<<grid, kThreads5>>>(in, out, rows, cols);
  }
  COURSE_LAUNCH_CHECK();
}

// The layouts, for the tests' bank model.
template <class T>
int tile_index_3_padded(int row, int col) {
  return padded_index<T>(row, col);
}
template <class T>
int tile_index_4_swizzled(int row, int col) {
  return swizzled_index(row, col);
}
template <class T>
int tile_index_5_vectorized(int row, int col) {
  return row * kTileCols5<T> + swizzled_chunk<T>(row, col / kVec<T>) * kVec<T> + col % kVec<T>;
}

// The element types of lab.h.
using course::bfloat16;
using course::half;
using std::int64_t;
template void transpose_1_naive<float>(const float*, float*, int64_t, int64_t);
template void transpose_1_naive<half>(const half*, half*, int64_t, int64_t);
template void transpose_1_naive<bfloat16>(const bfloat16*, bfloat16*, int64_t, int64_t);
template void transpose_2_smem<float>(const float*, float*, int64_t, int64_t);
template void transpose_2_smem<half>(const half*, half*, int64_t, int64_t);
template void transpose_2_smem<bfloat16>(const bfloat16*, bfloat16*, int64_t, int64_t);
template void transpose_3_padded<float>(const float*, float*, int64_t, int64_t);
template void transpose_3_padded<half>(const half*, half*, int64_t, int64_t);
template void transpose_3_padded<bfloat16>(const bfloat16*, bfloat16*, int64_t, int64_t);
template void transpose_4_swizzled<float>(const float*, float*, int64_t, int64_t);
template void transpose_4_swizzled<half>(const half*, half*, int64_t, int64_t);
template void transpose_4_swizzled<bfloat16>(const bfloat16*, bfloat16*, int64_t, int64_t);
template void transpose_5_vectorized<float>(const float*, float*, int64_t, int64_t);
template void transpose_5_vectorized<half>(const half*, half*, int64_t, int64_t);
template void transpose_5_vectorized<bfloat16>(const bfloat16*, bfloat16*, int64_t, int64_t);
template int tile_index_3_padded<float>(int, int);
template int tile_index_3_padded<half>(int, int);
template int tile_index_3_padded<bfloat16>(int, int);
template int tile_index_4_swizzled<float>(int, int);
template int tile_index_4_swizzled<half>(int, int);
template int tile_index_4_swizzled<bfloat16>(int, int);
template int tile_index_5_vectorized<float>(int, int);
template int tile_index_5_vectorized<half>(int, int);
template int tile_index_5_vectorized<bfloat16>(int, int);

}  // namespace d04
