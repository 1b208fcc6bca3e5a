// Day 5 — warp-level programming: shuffles, votes, match, cooperative groups.
//
// The interface the tests and the benchmark call. Pointers are device pointers; every
// function checks its arguments and throws course::InvalidArgument (a message, never an
// illegal address) or course::CudaError. Exercises are numbered as in README.md.
#pragma once

#include <cstdint>

#include "course/dtype.h"

namespace d05 {

// ---------------------------------------------------------------------------------------------
// Row softmax: y[r, :] = softmax(x[r, :]) for a row-major [rows, cols] matrix, in the stable
// form exp(x - max) / sum(exp(x - max)) (lesson §6), computed in float for every dtype. x and
// y must not overlap. Any pointer alignment is accepted: 16-byte loads are used when x, y and
// every row start are 16-byte aligned, scalar loads otherwise. Non-finite inputs behave as in
// PyTorch (course/reference/softmax.h): -inf is a masked entry (0), a row of -inf, or one with
// a NaN or +inf, comes out all NaN.

// Exercises 1 and 2: one warp per row. Rows of up to kWarpRegisterCols columns are held in
// registers (exercise 1: one read of x); longer rows are streamed three times (exercise 2).
inline constexpr std::int64_t kWarpRegisterCols = 2048;
void softmax_1_warp_per_row(const float* x, float* y, std::int64_t rows, std::int64_t cols);
void softmax_1_warp_per_row(const course::half* x, course::half* y, std::int64_t rows,
                            std::int64_t cols);
void softmax_1_warp_per_row(const course::bfloat16* x, course::bfloat16* y, std::int64_t rows,
                            std::int64_t cols);

// Exercise 3: one block per row, the row in registers across the block (block reduction:
// shuffles + shared memory). block_threads = 0 lets the launcher choose; otherwise a multiple
// of 32 in [32, 1024]. Rows longer than 32 values per thread are streamed three times.
void softmax_2_block_per_row(const float* x, float* y, std::int64_t rows, std::int64_t cols,
                             int block_threads = 0);
void softmax_2_block_per_row(const course::half* x, course::half* y, std::int64_t rows,
                             std::int64_t cols, int block_threads = 0);
void softmax_2_block_per_row(const course::bfloat16* x, course::bfloat16* y, std::int64_t rows,
                             std::int64_t cols, int block_threads = 0);

// ---------------------------------------------------------------------------------------------
// Stable stream compaction: out[0, count) = the elements of x[0, n) greater than threshold, in
// input order; returns count. out must have room for n elements; out[count, n) is left as it
// was. A NaN is never greater than anything, so NaNs are dropped.

// Exercise 4: __ballot_sync + __popc, three launches (count per block, scan, scatter).
std::int64_t compact_1_ballot(const float* x, std::int64_t n, float threshold, float* out);
// Exercise 5: the same algorithm written with cooperative groups (tiled_partition<32>).
std::int64_t compact_2_cooperative_groups(const float* x, std::int64_t n, float threshold,
                                          float* out);
// Given (not an exercise): CUB's cub::DeviceSelect::If, the vendor baseline of the benchmark.
// It is in cub_baseline.cu, linked into the benchmarks only (not into the tests).
std::int64_t compact_cub(const float* x, std::int64_t n, float threshold, float* out);

// ---------------------------------------------------------------------------------------------
// Counting keys per bucket: counts[b] = number of i with keys[i] == b, for 0 <= b < bins
// (keys outside [0, bins) are not counted). counts is overwritten (not added to).

// Exercise 6: warp-aggregated atomics with __match_any_sync: one atomic per distinct key in a
// warp instead of one per element.
void count_keys_1_match(const std::int32_t* keys, std::int64_t n, std::uint32_t* counts, int bins);
// Given (not an exercise): one atomicAdd per element, the baseline the benchmark compares with.
void count_keys_0_atomic(const std::int32_t* keys, std::int64_t n, std::uint32_t* counts, int bins);

}  // namespace d05
