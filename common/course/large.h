// Arrays of 2^31 elements and more: the inputs of the tests that check 64-bit indexing.
//
// An index computed in 32 bits (int i = blockIdx.x * blockDim.x + threadIdx.x, or row * cols
// with an int row) wraps once it reaches 2^31, and only a test whose arrays are that long can
// see it. Such arrays are too large to build, upload or check on the host (8 GiB of float32),
// so they are filled on the GPU with a counter-based pattern whose value at any index the host
// can compute by itself, and only chosen elements are copied back and checked:
//
//   course::DeviceBuffer<float> x(n), y(n);
//   const course::Pattern p{course::seed_for(1), -1.0, 1.0};
//   course::fill_pattern(x.data(), n, p);               // x[i] = course::pattern_value<float>(p,
//   i) course::poison_on_device(y.data(), n);              // y[i] = DType<float>::poison()
//   ... run the kernel ...
//   const auto at = course::large_sample_indices(n, seed);  // near 0, 2^31, 2^32 and the end
//   const auto got = course::gather(y.data(), n, at);       // y[at[k]], on the host
//   COURSE_EXPECT_SAMPLES_MATCH(got, want, at, options);    // want[k]: the reference at at[k]
//
// GPU memory: a test says what it needs (course::gpu_memory_shortfall) and skips, with the
// reason, when the GPU has less free.
#pragma once

#include <cuda_runtime_api.h>  // __host__ __device__ for host compilers too

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "course/compare.h"
#include "course/dtype.h"

namespace course {

// 2^31 and 2^32: where a signed and an unsigned 32-bit index wrap.
inline constexpr std::int64_t kTwoTo31 = std::int64_t{1} << 31;
inline constexpr std::int64_t kTwoTo32 = std::int64_t{1} << 32;

inline constexpr std::size_t kGiB = std::size_t{1} << 30;

// The index tests' sizes. "Just above 2^31" is not enough: a kernel's main loop (unrolled, or
// striding over the grid) can stop short of 2^31 and leave the last few elements to a remainder
// path, so only one of its paths meets a large index. 2^24 more elements take every path past
// 2^31, and 17 more make the count no multiple of a vector or of a warp.
inline constexpr std::int64_t kLargeExtra = std::int64_t{1} << 24;
inline constexpr std::int64_t kLargeCount = kTwoTo31 + kLargeExtra + 17;
// The rows of a [rows, cols] matrix of more than 2^31 + 2^24 elements: thousands of whole rows
// start past 2^31. rows * cols < kTwoTo31 + kLargeExtra + cols.
constexpr std::int64_t large_rows(std::int64_t cols) { return (kTwoTo31 + kLargeExtra) / cols + 1; }

// The pattern: element i of stream `seed` is uniform in [lo, hi), rounded to the element type.
struct Pattern {
  std::uint64_t seed = 0;
  double lo = -1.0;
  double hi = 1.0;
};

namespace detail {

// SplitMix64 over seed + (i + 1) * golden ratio, as course::random_uniform uses (random.h), here
// callable from device code too: the same 64-bit integer operations give the same word on both.
__host__ __device__ inline std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Element i of the pattern in float64, before it is rounded to the element type. The top 53
// bits of the word are exactly a double in [0, 1); one fused multiply-add maps it onto
// [lo, hi). fma rounds once on the host and on the GPU alike, where a separate multiply and add
// might be contracted into an fma by one compiler and not by the other.
__host__ __device__ inline double pattern_double(std::uint64_t seed, std::uint64_t i, double lo,
                                                 double hi) {
  const double u = static_cast<double>(pattern_word(seed, i) >> 11) * 0x1.0p-53;
  const double v = fma(hi - lo, u, lo);
  return v < hi ? v : lo;  // (hi - lo) * u + lo can round up to hi
}

}  // namespace detail

// The value fill_pattern stores at index i, computed on the host: the float64 value rounded to T
// exactly as the GPU rounds it (to float32, then to T, both to nearest even).
template <class T>
T pattern_value(const Pattern& p, std::int64_t i) {
  return from_double<T>(detail::pattern_double(p.seed, static_cast<std::uint64_t>(i), p.lo, p.hi));
}

// The same, as float64: what a CPU reference starts from.
template <class T>
double pattern_double_value(const Pattern& p, std::int64_t i) {
  return to_double(pattern_value<T>(p, i));
}

// data[i] = pattern_value<T>(p, i) for 0 <= i < n, on the GPU (T = float, double, half,
// bfloat16). Queued on the default stream; returns at once.
template <class T>
void fill_pattern(T* data, std::int64_t n, const Pattern& p);

// Integer keys that repeat in runs and cycle: data[i] = first + (i / run) % period, for counting
// and histogram tests whose expected counts follow from the formula (cyclic_count) without
// visiting every element. T = int32_t or uint32_t.
template <class T>
void fill_cyclic(T* data, std::int64_t n, std::int64_t first, std::int64_t period,
                 std::int64_t run);
inline std::int64_t cyclic_value(std::int64_t i, std::int64_t first, std::int64_t period,
                                 std::int64_t run) {
  return first + (i / run) % period;
}
// How many of the n elements of fill_cyclic(..., first, period, run) hold first + k,
// 0 <= k < period.
inline std::int64_t cyclic_count(std::int64_t n, std::int64_t k, std::int64_t period,
                                 std::int64_t run) {
  const std::int64_t full_runs = n / run, partial = n % run;
  std::int64_t count = run * (full_runs / period + (k < full_runs % period ? 1 : 0));
  if (partial > 0 && full_runs % period == k) count += partial;
  return count;
}

// data[i] = value for 0 <= i < n, on the GPU: what DeviceBuffer::fill does through the host,
// without an n-element host array. T = float, double, half, bfloat16, int8_t, uint8_t, int32_t,
// uint32_t, int64_t.
template <class T>
void fill_on_device(T* data, std::int64_t n, T value);

// data[i] = DType<T>::poison(): an element the kernel never writes keeps a value no computation
// produces, so a check can say "never written".
template <class T>
void poison_on_device(T* data, std::int64_t n) {
  fill_on_device(data, n, DType<T>::poison());
}

// data[indices[k]] for every k, copied back to the host (one gather kernel, one copy). Every
// index must lie in [0, size). Waits for the work queued before it.
template <class T>
std::vector<T> gather(const T* data, std::int64_t size, const std::vector<std::int64_t>& indices);

// The indices of an n-element array worth checking, sorted and without repeats: the first
// `window` elements, `window` on each side of 2^31 and of 2^32 (where 32-bit indices wrap), the
// last `window`, and `random_count` more drawn from `seed` over the whole array.
std::vector<std::int64_t> large_sample_indices(std::int64_t n, std::uint64_t seed,
                                               std::int64_t window = 40,
                                               std::int64_t random_count = 256);

// The rows of a row-major [rows, cols] matrix worth checking whole, sorted and without repeats:
// the first two, those holding the elements just below and at 2^31 and 2^32 (the flat index
// row * cols + col wraps there), the last two, and `random_count` more drawn from `seed`.
std::vector<std::int64_t> large_sample_rows(std::int64_t rows, std::int64_t cols,
                                            std::uint64_t seed, std::int64_t random_count = 4);

// Every flat index of the given rows of a [rows, cols] matrix, row by row.
std::vector<std::int64_t> indices_of_rows(const std::vector<std::int64_t>& rows, std::int64_t cols);

// "2^31 + 5", "2^32 - 1", or the plain number: how an index near a wrap point is written in a
// failure message.
std::string describe_index(std::int64_t i);

// Empty when `bytes` of new allocations fit in the GPU's free memory with room to spare (1 GiB
// and 2% of the GPU's memory stay free); otherwise the reason, for GTEST_SKIP():
// "needs 24.0 GiB of GPU memory, this GPU has 10.3 GiB free".
std::string gpu_memory_shortfall(std::size_t bytes);

// Values gathered at `indices` of an output, against their float64 references (want[k] is the
// reference at indices[k]), with the tolerance and diagnosis of course::compare. The message
// names the real indices: when every failure lies at or above 2^31 and every element below is
// right, it says that an index or offset wraps in 32 bits.
Comparison compare_sampled_values(const std::vector<double>& got, const std::vector<bool>& poisoned,
                                  const std::vector<double>& want,
                                  const std::vector<std::int64_t>& indices, Tolerance tolerance,
                                  const CompareOptions& options);

template <class T>
Comparison compare_sampled(const std::vector<T>& got, const std::vector<double>& want,
                           const std::vector<std::int64_t>& indices, CompareOptions options = {}) {
  const Tolerance tol = options.tolerance.norm < 0 ? DType<T>::tolerance : options.tolerance;
  std::vector<double> values(got.size());
  std::vector<bool> poisoned(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    poisoned[i] = DType<T>::is_poison(got[i]);
    values[i] = DType<T>::to_double(got[i]);
  }
  return compare_sampled_values(values, poisoned, want, indices, tol, options);
}

}  // namespace course

#define COURSE_EXPECT_SAMPLES_MATCH(got, want, indices, ...)                            \
  do {                                                                                  \
    const ::course::Comparison course_cmp_ =                                            \
        ::course::compare_sampled((got), (want), (indices), ##__VA_ARGS__);             \
    if (!course_cmp_.ok) ADD_FAILURE() << course_cmp_.message << ::course::seed_hint(); \
  } while (0)

// Skips the test (GTEST_SKIP, with the reason) when `bytes` of GPU memory are not free.
#define COURSE_SKIP_UNLESS_GPU_MEMORY(bytes)                                     \
  do {                                                                           \
    const std::string course_shortfall_ = ::course::gpu_memory_shortfall(bytes); \
    if (!course_shortfall_.empty()) GTEST_SKIP() << course_shortfall_;           \
  } while (0)
