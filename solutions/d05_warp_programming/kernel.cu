// >>> STARTER
//|// Day 5 — your kernels. Read lessons/d05_warp_programming.md first; README.md in this folder
//|// lists the exercises. Replace each TODO block; keep the names and the launchers' signatures
//|// (the tests call them through lab.h). Check with:  course check d05
// === SOLUTION
// Day 5 — reference solution: warp-level programming.
// <<<
//
// Part A (exercises 1-3): row softmax, one warp per row and one block per row, the row held in
// registers so that x is read once. Part B (exercises 4-5): stable stream compaction with
// votes (__ballot_sync + __popc), then the same with cooperative groups. Part C (exercise 6):
// warp-aggregated atomics with __match_any_sync.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "course/buffer.h"
#include "course/check.h"
#include "course/vec.cuh"
#include "course/warp.cuh"
#include "lab.h"

namespace d05 {

namespace cg = cooperative_groups;
using course::kFullMask;
using course::kVec16;
using course::kWarpSize;
using course::Vec;

// =============================================================================================
// Part A — row softmax (lesson §6-§8).
//
// Both variants share one thread-to-data mapping. A row is split among P threads (P = 32 for
// a warp, blockDim.x for a block); thread t holds kElems values of it in registers, as
// kElems / kVec vectors of kVec elements. Vector j of thread t covers the columns
//     (j * P + t) * kVec  ...  (j * P + t) * kVec + kVec - 1,
// so for each j the P threads read one contiguous span of P * kVec elements (coalesced, and
// 16 bytes per thread when kVec = kVec16<T>). Columns past the end of the row are held as -inf:
// they change neither the max nor the sum (exp(-inf - m) = 0), so no later step needs a test.

// Register buckets: the kernels are compiled for these values per thread, and the launcher
// picks the smallest that holds the row. A register array must have a compile-time size and
// compile-time indices (fully unrolled loops), or it goes to local memory (lesson §9).
constexpr int kWarpRowsPerBlock = 4;    // warp-per-row: 4 rows (warps) per block of 128 threads
constexpr int kBlockMaxThreads = 1024;  // block-per-row: up to 1024 threads ...
constexpr int kBlockMaxElems = 32;      // ... holding at most 32 values each (<= 64 registers)
constexpr int kBlockTargetElems = 16;   // the launcher's choice: about 16 values per thread
constexpr int kMaxCols = 1 << 30;       // column indices are int inside a row

// The value of a column past the end of the row: below every float, so it never wins the max,
// and exp(kMinusInf - m) = 0, so it adds nothing to the sum.
constexpr float kMinusInf = -INFINITY;
static_assert(kMinusInf < -3.4e38f, "padding must lose every max");

// How many of this thread's vectors lie inside the row: vector j does when
// (j * threads + rank) * kVec < cols. Testing j < count (instead of the column itself) gives
// the compiler a test it can redo cheaply in the store, rather than keeping one predicate per
// vector alive across the whole kernel.
template <int kVec>
__device__ __forceinline__ int vectors_in_row(int cols, int rank, int threads) {
  const int first = rank * kVec;
  return first < cols ? (cols - first + threads * kVec - 1) / (threads * kVec) : 0;
}

// Load this thread's share of one row into v[] (as float), -inf past the end.
// For kVec > 1 the launcher guarantees cols % kVec == 0 and 16-byte aligned rows, so a vector
// is either entirely inside the row or entirely outside.
template <class T, int kVec, int kElems>
__device__ __forceinline__ void load_row(const T* __restrict__ row, int cols, int rank, int threads,
                                         float (&v)[kElems]) {
  // >>> STARTER d05.1a
  //|  // TODO(d05.1a): for each vector j = 0 .. kElems / kVec - 1 (a loop with a compile-time trip
  //|  // count: add #pragma unroll, so that every v[...] index is a constant and v stays in
  //|  // registers): if j < vectors_in_row<kVec>(cols, rank, threads), load the Vec<T, kVec> at
  //|  // row + (j * threads + rank) * kVec and store its kVec elements, converted with
  //|  // course::to_float, to v[j * kVec + k]; otherwise set those kVec entries to kMinusInf.
  //|  // (lesson §7: the mapping; §9: why the loop must be unrolled)
  // === SOLUTION
  const int inside = vectors_in_row<kVec>(cols, rank, threads);
#pragma unroll
  for (int j = 0; j < kElems / kVec; ++j) {
    if (j < inside) {
      Vec<T, kVec> vec;
      vec.load(row + (j * threads + rank) * kVec);
#pragma unroll
      for (int k = 0; k < kVec; ++k) v[j * kVec + k] = course::to_float(vec[k]);
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) v[j * kVec + k] = kMinusInf;
    }
  }
  // <<< d05.1a
}

// Write e[] * scale to this thread's share of the row (same mapping as load_row).
template <class T, int kVec, int kElems>
__device__ __forceinline__ void store_row(T* __restrict__ row, int cols, int rank, int threads,
                                          const float (&e)[kElems], float scale) {
  // >>> STARTER d05.1a
  //|  // TODO(d05.1a): the mirror of load_row: for every vector j inside the row, build a
  //|  // Vec<T, kVec> whose element k is course::from_float<T>(e[j * kVec + k] * scale) and store
  //|  // it at row + (j * threads + rank) * kVec. Vectors past the end are not written.
  // === SOLUTION
  const int inside = vectors_in_row<kVec>(cols, rank, threads);
#pragma unroll
  for (int j = 0; j < kElems / kVec; ++j) {
    if (j < inside) {
      Vec<T, kVec> vec;
#pragma unroll
      for (int k = 0; k < kVec; ++k) vec[k] = course::from_float<T>(e[j * kVec + k] * scale);
      vec.store(row + (j * threads + rank) * kVec);
    }
  }
  // <<< d05.1a
}

// The thread-local half of the two reductions. nan_max (course/warp.cuh) lets a NaN win the
// max, as torch.max does; fmaxf would skip it (lesson §3.2, §6.3).
template <int kElems>
__device__ __forceinline__ float thread_max(const float (&v)[kElems]) {
  float m = kMinusInf;
#pragma unroll
  for (int k = 0; k < kElems; ++k) m = course::nan_max(m, v[k]);
  return m;
}

// v[k] <- exp(v[k] - m), returning this thread's sum of them. The exponentials stay in
// registers for the final scaling, so exp is computed once per element.
template <int kElems>
__device__ __forceinline__ float exp_and_sum(float (&v)[kElems], float m) {
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kElems; ++k) {
    v[k] = expf(v[k] - m);
    s += v[k];
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Exercise 1 — softmax_1_warp_per_row, rows in registers (lesson §7).
// Warp w of block b owns row b * kWarpRowsPerBlock + w; lane l holds kElems of its values
// (mapping above, P = 32). One read of x, two warp reductions (max, then sum), one write of y:
// no shared memory and no __syncthreads, the warp is the whole team.
template <class T, int kVec, int kElems>
__global__ __launch_bounds__(kWarpRowsPerBlock* kWarpSize) void softmax_1_warp_registers_kernel(
    const T* __restrict__ x, T* __restrict__ y, std::int64_t rows, int cols) {
  // >>> STARTER d05.1b
  //|  // TODO(d05.1b):
  //|  //  1. lane = threadIdx.x % 32; row = blockIdx.x * kWarpRowsPerBlock + threadIdx.x / 32
  //|  //     (as int64_t). If row >= rows, return: the whole warp leaves together, so the
  //|  //     full-mask shuffles that follow always have all 32 lanes (lesson §2).
  //|  //  2. float v[kElems]; load_row<T, kVec>(x + row * cols, cols, lane, kWarpSize, v);
  //|  //  3. m = course::warp_max(thread_max(v)): every lane now holds the row's max.
  //|  //  4. s = course::warp_sum(exp_and_sum(v, m)): v now holds exp(x - m), s their row sum.
  //|  //  5. store_row<T, kVec>(y + row * cols, cols, lane, kWarpSize, v, 1.0f / s);
  // === SOLUTION
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / kWarpSize;
  // row is the same for all 32 lanes, so a warp leaves whole: the full-mask shuffles below
  // always have all 32 lanes present.
  if (row >= rows) return;
  float v[kElems];
  load_row<T, kVec>(x + row * cols, cols, lane, kWarpSize, v);
  const float m = course::warp_max(thread_max(v));
  const float s = course::warp_sum(exp_and_sum(v, m));
  store_row<T, kVec>(y + row * cols, cols, lane, kWarpSize, v, 1.0f / s);
  // <<< d05.1b
}

// ---------------------------------------------------------------------------------------------
// Exercise 2 — softmax_1_warp_per_row for rows too long for registers (lesson §7).
// Same warp-to-row mapping; lane l visits columns l * kVec, (l + 32) * kVec, ... three times:
// max, then sum of exp, then the write. x is read three times (the second and third reads
// from L2 only if the rows in flight fit there): correct for any length, but up to twice the
// DRAM traffic of exercise 1 when they do not. Unrolling by 4 keeps four loads in flight.
template <class T, int kVec>
__global__ __launch_bounds__(kWarpRowsPerBlock* kWarpSize) void softmax_1_warp_streaming_kernel(
    const T* __restrict__ x, T* __restrict__ y, std::int64_t rows, int cols) {
  // >>> STARTER d05.2
  //|  // TODO(d05.2): the same warp-to-row mapping as exercise 1, but the row is too long to hold:
  //|  // lane l visits columns c = l * kVec, c + 32 * kVec, ... while c < cols, loading a
  //|  // Vec<T, kVec> each time (kVec divides cols when kVec > 1: the launcher checks), three times:
  //|  //  1. the max of the row (course::nan_max per element, then course::warp_max);
  //|  //  2. the sum of expf(x - m) (then course::warp_sum);
  //|  //  3. y = from_float<T>(expf(x - m) * (1 / sum)), stored as a Vec at the same columns.
  //|  // Leave a warp whose row >= rows before the first shuffle, as in exercise 1. (lesson §7)
  // === SOLUTION
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / kWarpSize;
  if (row >= rows) return;  // warp-uniform, as above
  const T* __restrict__ in = x + row * cols;
  T* __restrict__ out = y + row * cols;
  constexpr int kStride = kWarpSize * kVec;

  float m = kMinusInf;
#pragma unroll 4
  for (int c = lane * kVec; c < cols; c += kStride) {
    Vec<T, kVec> vec;
    vec.load(in + c);
#pragma unroll
    for (int k = 0; k < kVec; ++k) m = course::nan_max(m, course::to_float(vec[k]));
  }
  m = course::warp_max(m);

  float s = 0.0f;
#pragma unroll 4
  for (int c = lane * kVec; c < cols; c += kStride) {
    Vec<T, kVec> vec;
    vec.load(in + c);
#pragma unroll
    for (int k = 0; k < kVec; ++k) s += expf(course::to_float(vec[k]) - m);
  }
  const float scale = 1.0f / course::warp_sum(s);

#pragma unroll 4
  for (int c = lane * kVec; c < cols; c += kStride) {
    Vec<T, kVec> vec;
    vec.load(in + c);
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      vec[k] = course::from_float<T>(expf(course::to_float(vec[k]) - m) * scale);
    vec.store(out + c);
  }
  // <<< d05.2
}

// ---------------------------------------------------------------------------------------------
// Exercise 3 — block reductions (lesson §8): each warp reduces with shuffles, lane 0 of every
// warp leaves its partial in shared memory, one barrier, then every warp reduces the (at most
// 32) partials itself, so that all threads get the result without a second barrier.
// Each reduction gets its own `partials` array: a warp may still be reading the max's partials
// while a faster warp writes its sum partial, so sharing one array would be a race.
__device__ __forceinline__ float block_max(float v, float* partials) {
  // >>> STARTER d05.3a
  //|  // TODO(d05.3a): the max over the whole block, returned to EVERY thread (lesson §8):
  //|  //  1. v = course::warp_max(v);  lane 0 of each warp writes it to partials[warp];
  //|  //  2. __syncthreads();
  //|  //  3. every warp reduces the blockDim.x / 32 partials itself: lane l takes partials[l]
  //|  //     (kMinusInf for l past the number of warps) and returns course::warp_max of that.
  //|  // No second barrier is needed because each reduction uses its own partials array.
  //|  (void)partials;
  //|  return v;
  // === SOLUTION
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  v = course::warp_max(v);
  if (lane == 0) partials[warp] = v;
  __syncthreads();
  return course::warp_max(lane < static_cast<int>(blockDim.x) / kWarpSize ? partials[lane]
                                                                          : kMinusInf);
  // <<< d05.3a
}

__device__ __forceinline__ float block_sum(float v, float* partials) {
  // >>> STARTER d05.3a
  //|  // TODO(d05.3a): as block_max, with course::warp_sum and 0 for the missing partials.
  //|  (void)partials;
  //|  return v;
  // === SOLUTION
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  v = course::warp_sum(v);
  if (lane == 0) partials[warp] = v;
  __syncthreads();
  return course::warp_sum(lane < static_cast<int>(blockDim.x) / kWarpSize ? partials[lane] : 0.0f);
  // <<< d05.3a
}

// Exercise 3 — softmax_2_block_per_row, rows in registers (lesson §8).
// Block b owns row b; thread t holds kElems of its values (mapping above, P = blockDim.x). A
// block holds up to blockDim.x * kElems columns: 8192 floats are 512 threads x 16 values
// (the launcher's choice) or 256 x 32, which leaves room for several rows in flight per SM
// (lesson §9: registers and occupancy).
// __launch_bounds__(1024) promises the compiler blocks of up to 1024 threads, so it keeps
// each thread within 64 registers; kElems <= 32 fits in that without spilling.
template <class T, int kVec, int kElems>
__global__ __launch_bounds__(kBlockMaxThreads) void softmax_2_block_registers_kernel(
    const T* __restrict__ x, T* __restrict__ y, int cols) {
  // >>> STARTER d05.3b
  //|  // TODO(d05.3b): exercise 1 with the block as the team: row = blockIdx.x, rank = threadIdx.x,
  //|  // threads = blockDim.x. Declare two __shared__ float arrays of kWarpSize partials (one for
  //|  // the max, one for the sum), then load_row, block_max(thread_max(v), ...),
  //|  // block_sum(exp_and_sum(v, m), ...), store_row with 1 / sum.
  // === SOLUTION
  __shared__ float max_partials[kWarpSize];
  __shared__ float sum_partials[kWarpSize];
  const std::int64_t row = blockIdx.x;
  const int t = static_cast<int>(threadIdx.x);
  const int threads = static_cast<int>(blockDim.x);
  float v[kElems];
  load_row<T, kVec>(x + row * cols, cols, t, threads, v);
  const float m = block_max(thread_max(v), max_partials);
  const float s = block_sum(exp_and_sum(v, m), sum_partials);
  store_row<T, kVec>(y + row * cols, cols, t, threads, v, 1.0f / s);
  // <<< d05.3b
}

// Exercise 3 — rows longer than blockDim.x * kBlockMaxElems: three passes over the row with
// the block's stride, as exercise 2 does with the warp's.
template <class T, int kVec>
__global__ __launch_bounds__(kBlockMaxThreads) void softmax_2_block_streaming_kernel(
    const T* __restrict__ x, T* __restrict__ y, int cols) {
  // >>> STARTER d05.3c
  //|  // TODO(d05.3c): exercise 2 with the block as the team: thread t visits columns t * kVec,
  //|  // (t + blockDim.x) * kVec, ... three times (max, sum of exp, write), with block_max and
  //|  // block_sum (each with its own __shared__ partials) in place of the warp reductions.
  // === SOLUTION
  __shared__ float max_partials[kWarpSize];
  __shared__ float sum_partials[kWarpSize];
  const std::int64_t row = blockIdx.x;
  const T* __restrict__ in = x + row * cols;
  T* __restrict__ out = y + row * cols;
  const int first = static_cast<int>(threadIdx.x) * kVec;
  const int stride = static_cast<int>(blockDim.x) * kVec;

  float m = kMinusInf;
#pragma unroll 4
  for (int c = first; c < cols; c += stride) {
    Vec<T, kVec> vec;
    vec.load(in + c);
#pragma unroll
    for (int k = 0; k < kVec; ++k) m = course::nan_max(m, course::to_float(vec[k]));
  }
  m = block_max(m, max_partials);

  float s = 0.0f;
#pragma unroll 4
  for (int c = first; c < cols; c += stride) {
    Vec<T, kVec> vec;
    vec.load(in + c);
#pragma unroll
    for (int k = 0; k < kVec; ++k) s += expf(course::to_float(vec[k]) - m);
  }
  const float scale = 1.0f / block_sum(s, sum_partials);

#pragma unroll 4
  for (int c = first; c < cols; c += stride) {
    Vec<T, kVec> vec;
    vec.load(in + c);
#pragma unroll
    for (int k = 0; k < kVec; ++k)
      vec[k] = course::from_float<T>(expf(course::to_float(vec[k]) - m) * scale);
    vec.store(out + c);
  }
  // <<< d05.3c
}

// =============================================================================================
// Part B — stable stream compaction with votes (lesson §4 and §11).
//
// Mapping: block b owns the tile [b * kBlockTile, (b + 1) * kBlockTile) of x; warp w of the
// block owns the contiguous kWarpTile elements starting at b * kBlockTile + w * kWarpTile; in
// round r lane l holds element (warp start) + r * 32 + l. Block, warp, round, lane is then
// exactly input order, which is what makes the result stable.
// Three launches: (1) each block counts its kept elements; (2) one block scans the counts into
// each block's first output position; (3) each block recounts its tile and scatters, a kept
// element going to  block offset + kept in earlier warps + kept in earlier rounds
//                    + kept in lower lanes of this round  (one __popc of the ballot).
constexpr int kCompactThreads = 256;
constexpr int kCompactRounds = 16;  // elements per thread: loads in flight per thread
constexpr int kCompactWarps = kCompactThreads / kWarpSize;
constexpr int kWarpTile = kWarpSize * kCompactRounds;
constexpr int kBlockTile = kCompactThreads * kCompactRounds;
constexpr int kScanThreads = 1024;  // the block-offset scan: one block, 32 warps
static_assert(kBlockTile == kCompactWarps * kWarpTile,
              "a block's tile is its warps' tiles in a row");

// The lanes below this one: bit k set for k < lane (PTX's %lanemask_lt).
__device__ __forceinline__ unsigned lanes_below(int lane) { return (1u << lane) - 1u; }

// Exercise 4, launch 1: block_counts[b] = kept elements in tile b.
__global__ __launch_bounds__(kCompactThreads) void compact_1_count_kernel(
    const float* __restrict__ x, std::int64_t n, float threshold, int* __restrict__ block_counts) {
  // >>> STARTER d05.4a
  //|  // TODO(d05.4a): block_counts[blockIdx.x] = how many elements of this block's tile are
  //|  // > threshold (lesson §4). Mapping (above): warp w's elements start at
  //|  // start = blockIdx.x * kBlockTile + w * kWarpTile; in round r = 0 .. kCompactRounds - 1
  //|  // (#pragma unroll) lane l looks at i = start + r * 32 + l.
  //|  //  - keep = i < n && x[i] > threshold; count += __popc(__ballot_sync(kFullMask, keep)).
  //|  //    Every lane votes, also those past n (with false): the full mask must be true.
  //|  //  - lane 0 writes its warp's count to a __shared__ int[kCompactWarps]; __syncthreads();
  //|  //    thread 0 adds the kCompactWarps counts and writes block_counts[blockIdx.x].
  // === SOLUTION
  __shared__ int warp_counts[kCompactWarps];
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const std::int64_t start = static_cast<std::int64_t>(blockIdx.x) * kBlockTile + warp * kWarpTile;
  int count = 0;  // the same in every lane: it is built from ballots, which every lane receives
#pragma unroll
  for (int r = 0; r < kCompactRounds; ++r) {
    const std::int64_t i = start + r * kWarpSize + lane;
    const bool keep = i < n && x[i] > threshold;
    count += __popc(__ballot_sync(kFullMask, keep));
  }
  if (lane == 0) warp_counts[warp] = count;
  __syncthreads();
  if (threadIdx.x == 0) {
    int total = 0;
#pragma unroll
    for (int w = 0; w < kCompactWarps; ++w) total += warp_counts[w];
    block_counts[blockIdx.x] = total;
  }
  // <<< d05.4a
}

// Inclusive prefix sum across the warp with shuffles up (Hillis-Steele): after the step with
// offset d, lane l holds the sum of lanes l - 2d + 1 ... l.
__device__ __forceinline__ std::int64_t warp_inclusive_scan(std::int64_t v, int lane) {
// >>> STARTER d05.4b
//|  // TODO(d05.4b): inclusive prefix sum over the 32 lanes with __shfl_up_sync (lesson §3):
//|  // for d = 1, 2, 4, 8, 16: below = __shfl_up_sync(kFullMask, v, d); if (lane >= d) v += below.
//|  // (Every lane must call the shuffle, also those that do not add.)
//|  (void)lane;
// === SOLUTION
#pragma unroll
  for (int d = 1; d < kWarpSize; d *= 2) {
    const std::int64_t below = __shfl_up_sync(kFullMask, v, d);
    if (lane >= d) v += below;
  }
  // <<< d05.4b
  return v;
}

// Exercise 4, launch 2 (one block of kScanThreads): block_offsets = exclusive scan of
// block_counts, *total = their sum. Walks the counts kScanThreads at a time, carrying the sum.
__global__ __launch_bounds__(kScanThreads) void compact_1_scan_kernel(
    const int* __restrict__ block_counts, std::int64_t blocks,
    std::int64_t* __restrict__ block_offsets, std::int64_t* __restrict__ total) {
  // >>> STARTER d05.4c
  //|  // TODO(d05.4c): one block of kScanThreads threads turns the per-block counts into each
  //|  // block's first output position: block_offsets[i] = counts[0] + ... + counts[i - 1], and
  //|  // *total = the sum of all counts (the launcher returns it: until you write it, it is -1).
  //|  // Walk the counts kScanThreads at a time, carrying the running sum from chunk to chunk:
  //|  //  - each thread scans its count within its warp (warp_inclusive_scan);
  //|  //  - lane 31 of every warp writes its warp's total to a __shared__ int64_t[32];
  //|  //    __syncthreads(); warp 0 scans those 32 totals in place; __syncthreads();
  //|  //  - exclusive offset = carry + (totals of earlier warps) + inclusive - count;
  //|  //  - carry += the last warp's scanned total; __syncthreads() before the next chunk reuses
  //|  //    the shared array. Thread 0 writes *total = carry at the end (also when blocks == 0).
  // === SOLUTION
  __shared__ std::int64_t warp_sums[kScanThreads / kWarpSize];
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  std::int64_t carry = 0;  // sum of all counts before this chunk
  for (std::int64_t chunk = 0; chunk < blocks; chunk += kScanThreads) {
    const std::int64_t i = chunk + threadIdx.x;
    const std::int64_t count = i < blocks ? block_counts[i] : 0;
    const std::int64_t inclusive = warp_inclusive_scan(count, lane);
    if (lane == kWarpSize - 1) warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) warp_sums[lane] = warp_inclusive_scan(warp_sums[lane], lane);
    __syncthreads();
    const std::int64_t before_warp = warp > 0 ? warp_sums[warp - 1] : 0;
    if (i < blocks) block_offsets[i] = carry + before_warp + inclusive - count;
    carry += warp_sums[kScanThreads / kWarpSize - 1];
    __syncthreads();  // everyone has read warp_sums before the next chunk overwrites it
  }
  if (threadIdx.x == 0) *total = carry;
  // <<< d05.4c
}

// Exercise 4, launch 3: scatter the kept elements of tile b to out[block_offsets[b] + ...].
// The values and the 16 ballots stay in registers between counting and writing.
__global__ __launch_bounds__(kCompactThreads) void compact_1_scatter_kernel(
    const float* __restrict__ x, std::int64_t n, float threshold,
    const std::int64_t* __restrict__ block_offsets, float* __restrict__ out) {
  // >>> STARTER d05.4d
  //|  // TODO(d05.4d): recount the tile exactly as the count kernel does, but keep each round's
  //|  // value v[r] and ballot kept[r] in registers (arrays indexed by the unrolled r). Then:
  //|  //  - lane 0 writes the warp's count to __shared__; __syncthreads();
  //|  //  - offset = block_offsets[blockIdx.x] + the counts of the warps before this one;
  //|  //  - for each round r: a lane that keeps its element writes it to
  //|  //    out[offset + __popc(kept[r] & lanes_below(lane))]; then offset += __popc(kept[r]).
  //|  // That is the stable order: block, warp, round, lane (lesson §4).
  // === SOLUTION
  __shared__ int warp_counts[kCompactWarps];
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const std::int64_t start = static_cast<std::int64_t>(blockIdx.x) * kBlockTile + warp * kWarpTile;
  float v[kCompactRounds];
  unsigned kept[kCompactRounds];  // ballot of round r: bit l set when lane l keeps its element
  int count = 0;
#pragma unroll
  for (int r = 0; r < kCompactRounds; ++r) {
    const std::int64_t i = start + r * kWarpSize + lane;
    v[r] = i < n ? x[i] : 0.0f;
    kept[r] = __ballot_sync(kFullMask, i < n && v[r] > threshold);
    count += __popc(kept[r]);
  }
  if (lane == 0) warp_counts[warp] = count;
  __syncthreads();
  std::int64_t offset = block_offsets[blockIdx.x];
  for (int w = 0; w < warp; ++w) offset += warp_counts[w];  // kept in earlier warps
#pragma unroll
  for (int r = 0; r < kCompactRounds; ++r) {
    if (kept[r] >> lane & 1u) out[offset + __popc(kept[r] & lanes_below(lane))] = v[r];
    offset += __popc(kept[r]);
  }
  // <<< d05.4d
}

// ---------------------------------------------------------------------------------------------
// Exercise 5 — the same three launches with cooperative groups (lesson §10). A
// thread_block_tile<32> is the warp as an object: .ballot, .shfl, .thread_rank(),
// .meta_group_rank() (which warp of the block), and cg::reduce / cg::exclusive_scan replace
// the hand-written shuffle loops. Same mapping, same results, nearly the same SASS (§10.2).

__global__ __launch_bounds__(kCompactThreads) void compact_2_count_kernel(
    const float* __restrict__ x, std::int64_t n, float threshold, int* __restrict__ block_counts) {
  // >>> STARTER d05.5a
  //|  // TODO(d05.5a): exercise 4a with cooperative groups (lesson §10):
  //|  //   cg::thread_block block = cg::this_thread_block();
  //|  //   cg::thread_block_tile<kWarpSize> warp = cg::tiled_partition<kWarpSize>(block);
  //|  // warp.ballot(pred) for __ballot_sync, warp.thread_rank() for the lane,
  //|  // warp.meta_group_rank() for the warp's index in the block, block.sync() for the barrier,
  //|  // and cg::reduce(warp, value, cg::plus<int>()) to add the warps' counts.
  // === SOLUTION
  __shared__ int warp_counts[kCompactWarps];
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<kWarpSize> warp = cg::tiled_partition<kWarpSize>(block);
  const std::int64_t start = static_cast<std::int64_t>(blockIdx.x) * kBlockTile +
                             static_cast<std::int64_t>(warp.meta_group_rank()) * kWarpTile;
  int count = 0;
#pragma unroll
  for (int r = 0; r < kCompactRounds; ++r) {
    const std::int64_t i = start + r * kWarpSize + warp.thread_rank();
    count += __popc(warp.ballot(i < n && x[i] > threshold));
  }
  if (warp.thread_rank() == 0) warp_counts[warp.meta_group_rank()] = count;
  block.sync();
  if (warp.meta_group_rank() == 0) {
    const int mine = warp.thread_rank() < kCompactWarps ? warp_counts[warp.thread_rank()] : 0;
    const int total = cg::reduce(warp, mine, cg::plus<int>());
    if (warp.thread_rank() == 0) block_counts[blockIdx.x] = total;
  }
  // <<< d05.5a
}

__global__ __launch_bounds__(kScanThreads) void compact_2_scan_kernel(
    const int* __restrict__ block_counts, std::int64_t blocks,
    std::int64_t* __restrict__ block_offsets, std::int64_t* __restrict__ total) {
  // >>> STARTER d05.5b
  //|  // TODO(d05.5b): exercise 4c with cooperative groups: cg::inclusive_scan(warp, value) in place
  //|  // of warp_inclusive_scan, block.sync() for __syncthreads().
  // === SOLUTION
  __shared__ std::int64_t warp_sums[kScanThreads / kWarpSize];
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<kWarpSize> warp = cg::tiled_partition<kWarpSize>(block);
  const unsigned w = warp.meta_group_rank();
  std::int64_t carry = 0;
  for (std::int64_t chunk = 0; chunk < blocks; chunk += kScanThreads) {
    const std::int64_t i = chunk + block.thread_rank();
    const std::int64_t count = i < blocks ? block_counts[i] : 0;
    const std::int64_t inclusive = cg::inclusive_scan(warp, count);
    if (warp.thread_rank() == kWarpSize - 1) warp_sums[w] = inclusive;
    block.sync();
    if (w == 0)
      warp_sums[warp.thread_rank()] = cg::inclusive_scan(warp, warp_sums[warp.thread_rank()]);
    block.sync();
    const std::int64_t before_warp = w > 0 ? warp_sums[w - 1] : 0;
    if (i < blocks) block_offsets[i] = carry + before_warp + inclusive - count;
    carry += warp_sums[kScanThreads / kWarpSize - 1];
    block.sync();
  }
  if (block.thread_rank() == 0) *total = carry;
  // <<< d05.5b
}

__global__ __launch_bounds__(kCompactThreads) void compact_2_scatter_kernel(
    const float* __restrict__ x, std::int64_t n, float threshold,
    const std::int64_t* __restrict__ block_offsets, float* __restrict__ out) {
  // >>> STARTER d05.5c
  //|  // TODO(d05.5c): exercise 4d with cooperative groups. For the counts of the earlier warps, let
  //|  // lane l read warp l's count (0 past kCompactWarps), take cg::exclusive_scan(warp, count),
  //|  // and fetch this warp's entry with warp.shfl(scanned, warp.meta_group_rank()).
  // === SOLUTION
  __shared__ int warp_counts[kCompactWarps];
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<kWarpSize> warp = cg::tiled_partition<kWarpSize>(block);
  const unsigned lane = warp.thread_rank();
  const std::int64_t start = static_cast<std::int64_t>(blockIdx.x) * kBlockTile +
                             static_cast<std::int64_t>(warp.meta_group_rank()) * kWarpTile;
  float v[kCompactRounds];
  unsigned kept[kCompactRounds];
  int count = 0;
#pragma unroll
  for (int r = 0; r < kCompactRounds; ++r) {
    const std::int64_t i = start + r * kWarpSize + lane;
    v[r] = i < n ? x[i] : 0.0f;
    kept[r] = warp.ballot(i < n && v[r] > threshold);
    count += __popc(kept[r]);
  }
  if (lane == 0) warp_counts[warp.meta_group_rank()] = count;
  block.sync();
  // Kept in earlier warps: an exclusive scan over the warps' counts, one count per lane, and
  // this warp's entry fetched from lane meta_group_rank().
  const int per_lane = lane < kCompactWarps ? warp_counts[lane] : 0;
  const int before = cg::exclusive_scan(warp, per_lane);
  std::int64_t offset = block_offsets[blockIdx.x] + warp.shfl(before, warp.meta_group_rank());
#pragma unroll
  for (int r = 0; r < kCompactRounds; ++r) {
    if (kept[r] >> lane & 1u)
      out[offset + __popc(kept[r] & lanes_below(static_cast<int>(lane)))] = v[r];
    offset += __popc(kept[r]);
  }
  // <<< d05.5c
}

// =============================================================================================
// Part C — warp-aggregated atomics (lesson §5).
constexpr int kCountThreads = 256;

// Given baseline: one atomicAdd per element (grid-stride loop).
__global__ __launch_bounds__(kCountThreads) void count_keys_0_atomic_kernel(
    const std::int32_t* __restrict__ keys, std::int64_t n, std::uint32_t* __restrict__ counts,
    int bins) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const std::int32_t key = keys[i];
    if (key >= 0 && key < bins) atomicAdd(&counts[key], 1u);
  }
}

// Exercise 6 — count_keys_1_match. The grid strides over the keys in warp-sized steps (the loop
// condition depends only on the warp's base index, so all 32 lanes run every iteration: the
// full mask is honest). In each step __match_any_sync gives every lane the set of lanes holding
// the same key; the lowest of them adds the size of the set with one atomic. 32 equal keys
// cost 1 atomic instead of 32 (the contended case); 32 distinct keys cost 32, as before.
__global__ __launch_bounds__(kCountThreads) void count_keys_1_match_kernel(
    const std::int32_t* __restrict__ keys, std::int64_t n, std::uint32_t* __restrict__ counts,
    int bins) {
  // >>> STARTER d05.6a
  //|  // TODO(d05.6a): warp-aggregated atomics (lesson §5). Stride over the keys a warp at a time:
  //|  //   for (base = (global warp index) * 32; base < n; base += (warps in the grid) * 32)
  //|  // so that all 32 lanes run every iteration (the loop test depends only on base). In it:
  //|  //  - i = base + lane; key = i < n ? keys[i] : -1;
  //|  //  - peers = __match_any_sync(kFullMask, key): the lanes holding the same key;
  //|  //  - the lowest of them (__ffs(peers) - 1 == lane), if 0 <= key < bins, does
  //|  //    atomicAdd(&counts[key], __popc(peers)): one atomic per distinct key in the warp.
  // === SOLUTION
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const std::int64_t warp_id =
      (static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * blockDim.x / kWarpSize;
  for (std::int64_t base = warp_id * kWarpSize; base < n; base += warps * kWarpSize) {
    const std::int64_t i = base + lane;
    const std::int32_t key = i < n ? keys[i] : -1;  // lanes past the end join with key -1
    const unsigned peers = __match_any_sync(kFullMask, key);
    const int leader = __ffs(peers) - 1;
    if (lane == leader && key >= 0 && key < bins)
      atomicAdd(&counts[key], static_cast<unsigned>(__popc(peers)));
  }
  // <<< d05.6a
}

// =============================================================================================
// Launchers.

namespace {

bool aligned16(const void* p) { return course::is_aligned(p, 16); }

void check_softmax_args(const char* name, const void* x, const void* y, std::int64_t rows,
                        std::int64_t cols) {
  const std::string fn = name;
  course::require(rows >= 0 && cols >= 0, fn + ": rows and cols must be >= 0");
  course::require(cols <= kMaxCols, fn + ": cols must be <= 2^30");
  course::require(rows <= INT_MAX, fn + ": rows must be < 2^31 (one block or warp per row)");
  if (rows > 0 && cols > 0) course::require(x && y, fn + ": null pointer");
}

// 16-byte vectors when x, y and every row start are 16-byte aligned (cols a multiple of the
// vector width), scalar accesses otherwise.
template <class T>
bool use_vectors(const T* x, const T* y, std::int64_t cols) {
  return aligned16(x) && aligned16(y) && cols % kVec16<T> == 0;
}

template <class T, int kVec, int kElems>
void launch_warp_registers(const T* x, T* y, std::int64_t rows, int cols) {
  const auto blocks =
      static_cast<unsigned>(course::ceil_div<std::int64_t>(rows, kWarpRowsPerBlock));
  softmax_1_warp_registers_kernel<T, kVec, kElems>
      <<<blocks, kWarpRowsPerBlock * kWarpSize>>>(x, y, rows, cols);
  COURSE_LAUNCH_CHECK();
}

template <class T, int kVec>
void softmax_warp(const T* x, T* y, std::int64_t rows, int cols) {
  // The smallest register bucket that holds the row: 32 lanes x kElems values.
  if (cols <= kWarpSize * 8) return launch_warp_registers<T, kVec, 8>(x, y, rows, cols);
  if (cols <= kWarpSize * 16) return launch_warp_registers<T, kVec, 16>(x, y, rows, cols);
  if (cols <= kWarpSize * 32) return launch_warp_registers<T, kVec, 32>(x, y, rows, cols);
  if (cols <= kWarpSize * 64) return launch_warp_registers<T, kVec, 64>(x, y, rows, cols);
  const auto blocks =
      static_cast<unsigned>(course::ceil_div<std::int64_t>(rows, kWarpRowsPerBlock));
  softmax_1_warp_streaming_kernel<T, kVec>
      <<<blocks, kWarpRowsPerBlock * kWarpSize>>>(x, y, rows, cols);
  COURSE_LAUNCH_CHECK();
}
static_assert(kWarpSize * 64 == kWarpRegisterCols,
              "lab.h's kWarpRegisterCols is the largest bucket");

template <class T>
void softmax_1(const T* x, T* y, std::int64_t rows, std::int64_t cols) {
  check_softmax_args("softmax_1_warp_per_row", x, y, rows, cols);
  if (rows == 0 || cols == 0) return;
  if (use_vectors(x, y, cols)) {
    softmax_warp<T, kVec16<T>>(x, y, rows, static_cast<int>(cols));
  } else {
    softmax_warp<T, 1>(x, y, rows, static_cast<int>(cols));
  }
}

template <class T, int kVec>
void softmax_block(const T* x, T* y, std::int64_t rows, int cols, int threads) {
  const auto grid = static_cast<unsigned>(rows);
  // The smallest register bucket that holds the row: threads x kElems values.
  const std::int64_t capacity = threads;
  if (cols <= capacity * 8) {
    softmax_2_block_registers_kernel<T, kVec, 8><<<grid, threads>>>(x, y, cols);
  } else if (cols <= capacity * 16) {
    softmax_2_block_registers_kernel<T, kVec, 16><<<grid, threads>>>(x, y, cols);
  } else if (cols <= capacity * kBlockMaxElems) {
    softmax_2_block_registers_kernel<T, kVec, kBlockMaxElems><<<grid, threads>>>(x, y, cols);
  } else {
    softmax_2_block_streaming_kernel<T, kVec><<<grid, threads>>>(x, y, cols);
  }
  COURSE_LAUNCH_CHECK();
}

template <class T>
void softmax_2(const T* x, T* y, std::int64_t rows, std::int64_t cols, int block_threads) {
  check_softmax_args("softmax_2_block_per_row", x, y, rows, cols);
  course::require(
      block_threads == 0 || (block_threads >= kWarpSize && block_threads <= kBlockMaxThreads &&
                             block_threads % kWarpSize == 0),
      "softmax_2_block_per_row: block_threads must be 0 (choose) or a multiple of 32 "
      "in [32, 1024]");
  if (rows == 0 || cols == 0) return;
  int threads = block_threads;
  if (threads == 0) {
    // About kBlockTargetElems values per thread, in whole warps: 8192 columns -> 512 threads.
    const std::int64_t wanted = course::ceil_div<std::int64_t>(cols, kBlockTargetElems);
    threads = static_cast<int>(std::min<std::int64_t>(
        kBlockMaxThreads, course::ceil_div<std::int64_t>(wanted, kWarpSize) * kWarpSize));
  }
  if (use_vectors(x, y, cols)) {
    softmax_block<T, kVec16<T>>(x, y, rows, static_cast<int>(cols), threads);
  } else {
    softmax_block<T, 1>(x, y, rows, static_cast<int>(cols), threads);
  }
}

// Scratch memory for the multi-block compaction (per-block counts and offsets, the total),
// kept between calls and grown when needed: a cudaMalloc per call would cost more than
// compacting a small array. It lives as long as the process (the driver frees it at exit).
struct CompactionScratch {
  course::DeviceBuffer<int> block_counts;
  course::DeviceBuffer<std::int64_t> block_offsets;
  course::DeviceBuffer<std::int64_t> total{1};
};

CompactionScratch& compaction_scratch(std::int64_t blocks) {
  static auto* scratch = new CompactionScratch;
  const auto needed = static_cast<std::size_t>(std::max<std::int64_t>(blocks, 1));
  if (scratch->block_counts.size() < needed) {
    scratch->block_counts = course::DeviceBuffer<int>(needed);
    scratch->block_offsets = course::DeviceBuffer<std::int64_t>(needed);
  }
  return *scratch;
}

enum class CompactionVariant { kBallot, kCooperativeGroups };

std::int64_t compact(const char* name, CompactionVariant variant, const float* x, std::int64_t n,
                     float threshold, float* out) {
  course::require(n >= 0, std::string(name) + ": n must be >= 0");
  course::require(n == 0 || (x && out), std::string(name) + ": null pointer");
  const std::int64_t blocks = course::ceil_div<std::int64_t>(n, kBlockTile);
  course::require(blocks <= INT_MAX, std::string(name) + ": n too large");
  CompactionScratch& s = compaction_scratch(blocks);
  // -1 until the scan kernel writes the real total: "not written" if it never runs.
  COURSE_CUDA_CHECK(cudaMemsetAsync(s.total.data(), 0xff, sizeof(std::int64_t)));
  const auto grid = static_cast<unsigned>(blocks);
  if (variant == CompactionVariant::kBallot) {
    if (blocks > 0) {
      compact_1_count_kernel<<<grid, kCompactThreads>>>(x, n, threshold, s.block_counts.data());
      COURSE_LAUNCH_CHECK();
    }
    compact_1_scan_kernel<<<1, kScanThreads>>>(s.block_counts.data(), blocks,
                                               s.block_offsets.data(), s.total.data());
    COURSE_LAUNCH_CHECK();
    if (blocks > 0) {
      compact_1_scatter_kernel<<<grid, kCompactThreads>>>(x, n, threshold, s.block_offsets.data(),
                                                          out);
      COURSE_LAUNCH_CHECK();
    }
  } else {
    if (blocks > 0) {
      compact_2_count_kernel<<<grid, kCompactThreads>>>(x, n, threshold, s.block_counts.data());
      COURSE_LAUNCH_CHECK();
    }
    compact_2_scan_kernel<<<1, kScanThreads>>>(s.block_counts.data(), blocks,
                                               s.block_offsets.data(), s.total.data());
    COURSE_LAUNCH_CHECK();
    if (blocks > 0) {
      compact_2_scatter_kernel<<<grid, kCompactThreads>>>(x, n, threshold, s.block_offsets.data(),
                                                          out);
      COURSE_LAUNCH_CHECK();
    }
  }
  std::int64_t count = -1;
  COURSE_CUDA_CHECK(cudaMemcpy(&count, s.total.data(), sizeof count, cudaMemcpyDeviceToHost));
  return count;
}

void check_count_args(const char* name, const std::int32_t* keys, std::int64_t n,
                      const std::uint32_t* counts, int bins) {
  const std::string fn = name;
  course::require(n >= 0 && n <= UINT_MAX, fn + ": n must be in [0, 2^32) (uint32 counts)");
  course::require(bins > 0, fn + ": bins must be > 0");
  course::require(counts != nullptr && (n == 0 || keys != nullptr), fn + ": null pointer");
}

unsigned count_grid(std::int64_t n) {
  // A grid-stride loop: enough blocks to fill the GPU a few times, no more than the data needs.
  int device = 0, sms = 0;
  COURSE_CUDA_CHECK(cudaGetDevice(&device));
  COURSE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::int64_t needed = course::ceil_div<std::int64_t>(n, kCountThreads);
  return static_cast<unsigned>(
      std::max<std::int64_t>(1, std::min<std::int64_t>(needed, sms * 8LL)));
}

}  // namespace

void softmax_1_warp_per_row(const float* x, float* y, std::int64_t rows, std::int64_t cols) {
  softmax_1(x, y, rows, cols);
}
void softmax_1_warp_per_row(const course::half* x, course::half* y, std::int64_t rows,
                            std::int64_t cols) {
  softmax_1(x, y, rows, cols);
}
void softmax_1_warp_per_row(const course::bfloat16* x, course::bfloat16* y, std::int64_t rows,
                            std::int64_t cols) {
  softmax_1(x, y, rows, cols);
}

void softmax_2_block_per_row(const float* x, float* y, std::int64_t rows, std::int64_t cols,
                             int block_threads) {
  softmax_2(x, y, rows, cols, block_threads);
}
void softmax_2_block_per_row(const course::half* x, course::half* y, std::int64_t rows,
                             std::int64_t cols, int block_threads) {
  softmax_2(x, y, rows, cols, block_threads);
}
void softmax_2_block_per_row(const course::bfloat16* x, course::bfloat16* y, std::int64_t rows,
                             std::int64_t cols, int block_threads) {
  softmax_2(x, y, rows, cols, block_threads);
}

std::int64_t compact_1_ballot(const float* x, std::int64_t n, float threshold, float* out) {
  return compact("compact_1_ballot", CompactionVariant::kBallot, x, n, threshold, out);
}

std::int64_t compact_2_cooperative_groups(const float* x, std::int64_t n, float threshold,
                                          float* out) {
  return compact("compact_2_cooperative_groups", CompactionVariant::kCooperativeGroups, x, n,
                 threshold, out);
}

void count_keys_0_atomic(const std::int32_t* keys, std::int64_t n, std::uint32_t* counts,
                         int bins) {
  check_count_args("count_keys_0_atomic", keys, n, counts, bins);
  COURSE_CUDA_CHECK(
      cudaMemsetAsync(counts, 0, sizeof(std::uint32_t) * static_cast<std::size_t>(bins)));
  if (n == 0) return;
  count_keys_0_atomic_kernel<<<count_grid(n), kCountThreads>>>(keys, n, counts, bins);
  COURSE_LAUNCH_CHECK();
}

void count_keys_1_match(const std::int32_t* keys, std::int64_t n, std::uint32_t* counts, int bins) {
  check_count_args("count_keys_1_match", keys, n, counts, bins);
  // >>> STARTER d05.6b
  //|  // TODO(d05.6b): the kernel adds to counts, so they must start from zero: clear the bins
  //|  // counts with cudaMemsetAsync (in COURSE_CUDA_CHECK) before the launch, on the same stream.
  //|  // The tests poison counts first and call the function twice.
  // === SOLUTION
  // The kernel adds to counts: they start from zero, cleared on the same stream first.
  COURSE_CUDA_CHECK(
      cudaMemsetAsync(counts, 0, sizeof(std::uint32_t) * static_cast<std::size_t>(bins)));
  // <<< d05.6b
  if (n == 0) return;
  count_keys_1_match_kernel<<<count_grid(n), kCountThreads>>>(keys, n, counts, bins);
  COURSE_LAUNCH_CHECK();
}

}  // namespace d05
