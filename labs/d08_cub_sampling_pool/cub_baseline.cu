// Given, not an exercise: the vendor baselines of bench_d08.cu (lesson §10, §12.2).
//
//   scan_cub        cub::DeviceScan::InclusiveSum, with CUB's two-call temp-storage protocol
//   sample_0_sort   sampling by sorting: cub::DeviceSegmentedRadixSort::SortPairsDescending
//                   sorts every row (probabilities with their token ids), one block per row
//                   finds the threshold in the sorted row, then draws in vocabulary order
//                   exactly as lab.h says (the same rules as sample_1_pivot, so the benchmark
//                   checks both against the same reference)
//
// They live here, in a small library linked into the benchmark only, not in kernel.cu: CUB's
// device-wide kernels may spill registers on some architectures, which the course's
// no-local-memory check (rightly) rejects in the student's code, and they are not the student's.
#include <cuda_runtime.h>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <limits>
#include <string>
#include <vector>

#include "course/buffer.h"
#include "course/check.h"
#include "lab.h"

namespace d08 {

void scan_cub(void* temp, std::size_t& temp_bytes, const std::int32_t* x, std::int32_t* y,
              std::int64_t n) {
  course::require(n >= 0 && n <= std::numeric_limits<int>::max(),
                  "scan_cub: n must be in [0, 2^31)");
  course::require(temp == nullptr || n == 0 || (x != nullptr && y != nullptr),
                  "scan_cub: null pointer");
  COURSE_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, x, y, static_cast<int>(n)));
  if (temp != nullptr) COURSE_LAUNCH_CHECK();
}

namespace {

constexpr int kThreads = 512;
constexpr int kItems = 16;
constexpr int kChunk = kThreads * kItems;

struct MinOp {
  __device__ int operator()(int a, int b) const { return a < b ? a : b; }
};

using ReduceInt = cub::BlockReduce<int, kThreads>;
using ScanFloat = cub::BlockScan<float, kThreads>;

struct Storage {
  union {
    ReduceInt::TempStorage reduce_int;
    ScanFloat::TempStorage scan_float;
  };
  int token;
  float threshold;
};

// The running sum of the allowed probabilities (p >= threshold) of a row, in chunks of kChunk,
// thread t holding kItems consecutive elements: the total with target < 0, else the first
// index whose running sum exceeds target (else the last allowed index with p > 0).
__device__ float running_sum(const float* row, std::int64_t vocab, float threshold, float target,
                             int* token, Storage& storage) {
  float carry = 0.0f;
  int last_nonzero = -1;
  for (std::int64_t base = 0; base < vocab; base += kChunk) {
    const std::int64_t first = base + static_cast<std::int64_t>(threadIdx.x) * kItems;
    float v[kItems], own = 0.0f;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const float p = first + j < vocab ? row[first + j] : 0.0f;
      v[j] = p >= threshold ? p : 0.0f;
      own += v[j];
      if (v[j] > 0.0f) last_nonzero = static_cast<int>(first + j);
    }
    float before, total;
    ScanFloat(storage.scan_float).ExclusiveSum(own, before, total);
    __syncthreads();
    if (target >= 0.0f) {
      int hit = INT_MAX;
      float running = carry + before;
#pragma unroll
      for (int j = 0; j < kItems; ++j) {
        running += v[j];
        if (hit == INT_MAX && v[j] > 0.0f && running > target) hit = static_cast<int>(first + j);
      }
      hit = ReduceInt(storage.reduce_int).Reduce(hit, MinOp());
      if (threadIdx.x == 0) storage.token = hit;
      __syncthreads();
      const int found = storage.token;
      __syncthreads();
      if (found != INT_MAX) {
        *token = found;
        return carry;
      }
    }
    carry += total;
  }
  if (target >= 0.0f) {
    last_nonzero = -ReduceInt(storage.reduce_int).Reduce(-last_nonzero, MinOp());
    if (threadIdx.x == 0) storage.token = last_nonzero;
    __syncthreads();
    *token = storage.token;
  }
  return carry;
}

// One block per row: the threshold from the row sorted in descending order, then the draw over
// the unsorted row (vocabulary order).
__global__ void __launch_bounds__(kThreads)
    sorted_threshold_and_draw_kernel(const float* __restrict__ probs,
                                     const float* __restrict__ sorted, std::int64_t vocab,
                                     SamplingParams params, std::uint64_t seed, std::uint64_t draw,
                                     std::int32_t* __restrict__ tokens) {
  __shared__ Storage storage;
  const std::int64_t r = blockIdx.x;
  const float* row = probs + r * vocab;
  const float* srow = sorted + r * vocab;
  float threshold = 0.0f;
  if (params.filter == Filter::kMinP) {
    threshold = __fmul_rn(params.min_p, srow[0]);
  } else if (params.filter == Filter::kTopK) {
    threshold = params.top_k < vocab ? srow[params.top_k - 1] : 0.0f;
  } else {
    // The first sorted element at which the running sum reaches top_p (float32 sums: the
    // tests' tolerance covers the difference with the pivot search's exact integer sums).
    if (threadIdx.x == 0) storage.threshold = 0.0f;
    float carry = 0.0f;
    for (std::int64_t base = 0; base < vocab; base += kChunk) {
      const std::int64_t first = base + static_cast<std::int64_t>(threadIdx.x) * kItems;
      float own = 0.0f;
#pragma unroll
      for (int j = 0; j < kItems; ++j) own += first + j < vocab ? srow[first + j] : 0.0f;
      float before, total;
      ScanFloat(storage.scan_float).ExclusiveSum(own, before, total);
      __syncthreads();
      int hit = INT_MAX;
      float running = carry + before;
      for (int j = 0; j < kItems && first + j < vocab; ++j) {
        running += srow[first + j];
        if (running >= params.top_p) {
          hit = static_cast<int>(first + j);
          break;
        }
      }
      hit = ReduceInt(storage.reduce_int).Reduce(hit, MinOp());
      if (threadIdx.x == 0 && hit != INT_MAX) storage.threshold = srow[hit];
      if (threadIdx.x == 0) storage.token = hit;
      __syncthreads();
      const int found = storage.token;
      __syncthreads();
      if (found != INT_MAX) break;
      carry += total;
    }
    threshold = storage.threshold;
  }
  int token = -1;
  const float mass = running_sum(row, vocab, threshold, -1.0f, &token, storage);
  const float u = sampling_uniform(seed, static_cast<std::uint64_t>(r), draw);
  running_sum(row, vocab, threshold, __fmul_rn(u, mass), &token, storage);
  if (threadIdx.x == 0) tokens[r] = token;
}

// The token ids 0 .. vocab - 1 of every row: the values sorted with the probabilities.
__global__ void row_ids_kernel(std::int32_t* __restrict__ ids, std::int64_t vocab,
                               std::int64_t total) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) ids[i] = static_cast<std::int32_t>(i % vocab);
}

// Scratch kept between calls (grown when needed): a cudaMalloc per call would be timed with
// the sort. The segment offsets and the ids depend only on (batch, vocab).
struct SortScratch {
  course::DeviceBuffer<float> sorted;
  course::DeviceBuffer<std::int32_t> ids, sorted_ids;
  course::DeviceBuffer<std::int64_t> offsets;
  course::DeviceBuffer<char> temp;
  std::int64_t batch = -1, vocab = -1;
};

}  // namespace

void sample_0_sort(const float* probs, std::int64_t batch, std::int64_t vocab,
                   const SamplingParams& params, std::uint64_t seed, std::uint64_t draw,
                   std::int32_t* tokens) {
  course::require(batch >= 0 && batch <= std::numeric_limits<int>::max(),
                  "sample_0_sort: batch must be in [0, 2^31)");
  course::require(vocab >= 1 && vocab <= kMaxVocab, "sample_0_sort: vocab must be in [1, 2^30]");
  course::require(params.filter != Filter::kTopK || params.top_k >= 1,
                  "sample_0_sort: top_k must be >= 1");
  course::require(params.filter != Filter::kTopP || (params.top_p > 0.0f && params.top_p <= 1.0f),
                  "sample_0_sort: top_p must be in (0, 1]");
  course::require(params.filter != Filter::kMinP || (params.min_p >= 0.0f && params.min_p <= 1.0f),
                  "sample_0_sort: min_p must be in [0, 1]");
  if (batch == 0) return;
  course::require(probs != nullptr && tokens != nullptr, "sample_0_sort: null pointer");
  static auto* scratch = new SortScratch;
  const std::int64_t total = batch * vocab;
  if (scratch->batch != batch || scratch->vocab != vocab) {
    scratch->sorted = course::DeviceBuffer<float>(static_cast<std::size_t>(total));
    scratch->ids = course::DeviceBuffer<std::int32_t>(static_cast<std::size_t>(total));
    scratch->sorted_ids = course::DeviceBuffer<std::int32_t>(static_cast<std::size_t>(total));
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(batch) + 1);
    for (std::size_t r = 0; r < offsets.size(); ++r)
      offsets[r] = static_cast<std::int64_t>(r) * vocab;
    scratch->offsets = course::DeviceBuffer<std::int64_t>(offsets);
    row_ids_kernel<<<static_cast<unsigned>(course::ceil_div<std::int64_t>(total, 256)), 256>>>(
        scratch->ids.data(), vocab, total);
    COURSE_LAUNCH_CHECK();
    scratch->batch = batch;
    scratch->vocab = vocab;
  }
  const std::int64_t* begin = scratch->offsets.data();
  std::size_t temp_bytes = 0;
  COURSE_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
      nullptr, temp_bytes, probs, scratch->sorted.data(), scratch->ids.data(),
      scratch->sorted_ids.data(), total, static_cast<int>(batch), begin, begin + 1));
  if (scratch->temp.bytes() < temp_bytes) scratch->temp = course::DeviceBuffer<char>(temp_bytes);
  COURSE_CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortPairsDescending(
      scratch->temp.data(), temp_bytes, probs, scratch->sorted.data(), scratch->ids.data(),
      scratch->sorted_ids.data(), total, static_cast<int>(batch), begin, begin + 1));
  COURSE_LAUNCH_CHECK();
  sorted_threshold_and_draw_kernel<<<static_cast<unsigned>(batch), kThreads>>>(
      probs, scratch->sorted.data(), vocab, params, seed, draw, tokens);
  COURSE_LAUNCH_CHECK();
}

}  // namespace d08
