// Day 4 — shared memory and bank conflicts, through the matrix transpose.
//
// The interface the tests and the benchmark call. Every transpose computes
//
//   out[c, r] = in[r, c]     in: row-major [rows, cols],  out: row-major [cols, rows]
//
// on device pointers, for T = float, course::half and course::bfloat16 (kernel.cu instantiates
// each launcher for those three). The variants are numbered as in README.md and the lesson; each
// one changes one thing about the one before. Every launcher checks its arguments and throws
// course::InvalidArgument (a message, never an illegal address) or course::CudaError.
#pragma once

#include <cstdint>

namespace d04 {

// Exercise 1: coalesced reads, strided writes; no shared memory.
template <class T>
void transpose_1_naive(const T* in, T* out, std::int64_t rows, std::int64_t cols);

// Exercise 2: through a 32 x 32 tile in shared memory; both global accesses coalesced, but the
// tile is read down a column: a 32-way bank conflict for 4-byte elements.
template <class T>
void transpose_2_smem(const T* in, T* out, std::int64_t rows, std::int64_t cols);

// Exercise 3: the same tile, each row padded by one 4-byte bank: no conflicts.
template <class T>
void transpose_3_padded(const T* in, T* out, std::int64_t rows, std::int64_t cols);

// Exercise 4: the same tile, unpadded, with the column index XOR-swizzled by the row: no
// conflicts and no wasted shared memory.
template <class T>
void transpose_4_swizzled(const T* in, T* out, std::int64_t rows, std::int64_t cols);

// Exercise 5: 16-byte global and shared accesses through a tile whose 16-byte chunks are
// swizzled (padding would break their alignment). Falls back to element accesses, with the
// same tile, when a pointer is not 16-byte aligned or rows or cols is not a multiple of the
// vector width (4 floats, 8 halves).
template <class T>
void transpose_5_vectorized(const T* in, T* out, std::int64_t rows, std::int64_t cols);

// The shared-memory layouts of exercises 3, 4 and 5: the index, in elements of T from the
// start of the tile, at which the kernel keeps element (row, col) of its tile. The kernels use
// these very functions to address the tile, and the tests check, without a GPU, that the warp's
// accesses described in the lesson hit 32 different banks.
//   3, 4: the 32 x 32 tile.   5: the 64-row tile of 128-byte rows (64 x 32 floats, 64 x 64 halves).
template <class T>
int tile_index_3_padded(int row, int col);
template <class T>
int tile_index_4_swizzled(int row, int col);
template <class T>
int tile_index_5_vectorized(int row, int col);

}  // namespace d04
