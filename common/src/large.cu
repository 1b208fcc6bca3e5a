// Large arrays for the 64-bit indexing tests: device-side fills, gathers of chosen elements, the
// indices worth checking, and the comparison that names them (course/large.h).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "course/buffer.h"
#include "course/check.h"
#include "course/device.h"
#include "course/large.h"

namespace course {
namespace {

constexpr int kThreads = 256;

// A grid-stride loop over n elements: a few waves of blocks, whatever n is (64-bit indices
// throughout: these kernels are the ones that must not wrap).
unsigned grid_for(std::int64_t n) {
  const std::int64_t waves = std::int64_t{device_facts().sm_count} * 8;
  const std::int64_t needed = ceil_div<std::int64_t>(std::max<std::int64_t>(n, 1), kThreads);
  return static_cast<unsigned>(std::min(waves, needed));
}

__device__ __forceinline__ std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// The float64 pattern rounded to T on the GPU exactly as from_double<T> rounds it on the host:
// to float32 first, then to T, both to nearest even.
template <class T>
__device__ __forceinline__ T round_pattern(double v);
template <>
__device__ __forceinline__ double round_pattern<double>(double v) {
  return v;
}
template <>
__device__ __forceinline__ float round_pattern<float>(double v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ half round_pattern<half>(double v) {
  return __float2half_rn(static_cast<float>(v));
}
template <>
__device__ __forceinline__ bfloat16 round_pattern<bfloat16>(double v) {
  return __float2bfloat16_rn(static_cast<float>(v));
}

template <class T>
__global__ void fill_pattern_kernel(T* __restrict__ data, std::int64_t n, std::uint64_t seed,
                                    double lo, double hi) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride())
    data[i] = round_pattern<T>(detail::pattern_double(seed, static_cast<std::uint64_t>(i), lo, hi));
}

template <class T>
__global__ void fill_cyclic_kernel(T* __restrict__ data, std::int64_t n, std::int64_t first,
                                   std::int64_t period, std::int64_t run) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride())
    data[i] = static_cast<T>(first + (i / run) % period);
}

template <class T>
__global__ void fill_kernel(T* __restrict__ data, std::int64_t n, T value) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) data[i] = value;
}

template <class T>
__global__ void gather_kernel(const T* __restrict__ data, const std::int64_t* __restrict__ indices,
                              std::int64_t count, T* __restrict__ out) {
  for (std::int64_t k = first_index(); k < count; k += grid_stride()) out[k] = data[indices[k]];
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", bytes / static_cast<double>(kGiB));
  return buf;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.8g", v);
  return buf;
}

void add_window(std::vector<std::int64_t>& out, std::int64_t center, std::int64_t window,
                std::int64_t n) {
  for (std::int64_t i = center - window; i < center + window; ++i)
    if (i >= 0 && i < n) out.push_back(i);
}

void sort_unique(std::vector<std::int64_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

template <class T>
void fill_pattern(T* data, std::int64_t n, const Pattern& p) {
  require(n >= 0, "fill_pattern: n must be >= 0");
  require(p.lo < p.hi, "fill_pattern: the pattern's range must have lo < hi");
  if (n == 0) return;
  require(data != nullptr, "fill_pattern: null pointer");
  fill_pattern_kernel<T><<<grid_for(n), kThreads>>>(data, n, p.seed, p.lo, p.hi);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void fill_cyclic(T* data, std::int64_t n, std::int64_t first, std::int64_t period,
                 std::int64_t run) {
  require(n >= 0 && period >= 1 && run >= 1, "fill_cyclic: need n >= 0, period >= 1, run >= 1");
  if (n == 0) return;
  require(data != nullptr, "fill_cyclic: null pointer");
  fill_cyclic_kernel<T><<<grid_for(n), kThreads>>>(data, n, first, period, run);
  COURSE_LAUNCH_CHECK();
}

template <class T>
void fill_on_device(T* data, std::int64_t n, T value) {
  require(n >= 0, "fill_on_device: n must be >= 0");
  if (n == 0) return;
  require(data != nullptr, "fill_on_device: null pointer");
  fill_kernel<T><<<grid_for(n), kThreads>>>(data, n, value);
  COURSE_LAUNCH_CHECK();
}

template <class T>
std::vector<T> gather(const T* data, std::int64_t size, const std::vector<std::int64_t>& indices) {
  for (const std::int64_t i : indices)
    require(i >= 0 && i < size,
            "gather: index " + std::to_string(i) + " is outside [0, " + std::to_string(size) + ")");
  if (indices.empty()) return {};
  require(data != nullptr, "gather: null pointer");
  const auto count = static_cast<std::int64_t>(indices.size());
  DeviceBuffer<std::int64_t> d_indices(indices);
  DeviceBuffer<T> out(indices.size());
  gather_kernel<T><<<grid_for(count), kThreads>>>(data, d_indices.data(), count, out.data());
  COURSE_LAUNCH_CHECK();
  return out.read_back();  // cudaMemcpy waits for the gather, and for everything before it
}

std::vector<std::int64_t> large_sample_indices(std::int64_t n, std::uint64_t seed,
                                               std::int64_t window, std::int64_t random_count) {
  std::vector<std::int64_t> out;
  if (n <= 0) return out;
  add_window(out, window, window, n);  // [0, 2 window)
  add_window(out, kTwoTo31, window, n);
  add_window(out, kTwoTo32, window, n);
  add_window(out, n - window, window, n);
  for (std::int64_t k = 0; k < random_count; ++k)
    out.push_back(static_cast<std::int64_t>(
        detail::pattern_word(seed, static_cast<std::uint64_t>(k)) % static_cast<std::uint64_t>(n)));
  sort_unique(out);
  return out;
}

std::vector<std::int64_t> large_sample_rows(std::int64_t rows, std::int64_t cols,
                                            std::uint64_t seed, std::int64_t random_count) {
  std::vector<std::int64_t> out;
  if (rows <= 0 || cols <= 0) return out;
  for (const std::int64_t r : {std::int64_t{0}, std::int64_t{1}, rows - 2, rows - 1})
    out.push_back(r);
  for (const std::int64_t wrap : {kTwoTo31, kTwoTo32})
    for (const std::int64_t flat : {wrap - 1, wrap}) out.push_back(flat / cols);
  for (std::int64_t k = 0; k < random_count; ++k)
    out.push_back(
        static_cast<std::int64_t>(detail::pattern_word(seed, static_cast<std::uint64_t>(k)) %
                                  static_cast<std::uint64_t>(rows)));
  out.erase(
      std::remove_if(out.begin(), out.end(), [rows](std::int64_t r) { return r < 0 || r >= rows; }),
      out.end());
  sort_unique(out);
  return out;
}

std::vector<std::int64_t> indices_of_rows(const std::vector<std::int64_t>& rows,
                                          std::int64_t cols) {
  std::vector<std::int64_t> out;
  out.reserve(rows.size() * static_cast<std::size_t>(std::max<std::int64_t>(cols, 0)));
  for (const std::int64_t r : rows)
    for (std::int64_t c = 0; c < cols; ++c) out.push_back(r * cols + c);
  return out;
}

std::string describe_index(std::int64_t i) {
  std::ostringstream s;
  s << i;
  for (const auto& [wrap, name] : {std::pair<std::int64_t, const char*>{kTwoTo31, "2^31"},
                                   std::pair<std::int64_t, const char*>{kTwoTo32, "2^32"}}) {
    const std::int64_t d = i - wrap;
    if (d >= -4096 && d <= 4096) {
      s << " = " << name;
      if (d > 0) s << " + " << d;
      if (d < 0) s << " - " << -d;
      break;
    }
  }
  return s.str();
}

std::string gpu_memory_shortfall(std::size_t bytes) {
  std::size_t free_bytes = 0, total_bytes = 0;
  const cudaError_t err = cudaMemGetInfo(&free_bytes, &total_bytes);
  if (err != cudaSuccess)
    return std::string("cannot ask the GPU how much memory is free: ") + cudaGetErrorString(err);
  const std::size_t spare = kGiB + total_bytes / 50;
  if (free_bytes >= spare && bytes <= free_bytes - spare) return "";
  return "needs " + gib(static_cast<double>(bytes)) + " GiB of GPU memory, this GPU has " +
         gib(static_cast<double>(free_bytes)) + " GiB free (of " +
         gib(static_cast<double>(total_bytes)) + " GiB; " + gib(static_cast<double>(spare)) +
         " GiB are kept spare)";
}

Comparison compare_sampled_values(const std::vector<double>& got, const std::vector<bool>& poisoned,
                                  const std::vector<double>& want,
                                  const std::vector<std::int64_t>& indices, Tolerance tolerance,
                                  const CompareOptions& options) {
  Comparison c;
  if (got.size() != want.size() || got.size() != indices.size()) {
    c.message = options.what + ": " + std::to_string(got.size()) + " values gathered, " +
                std::to_string(want.size()) + " references and " + std::to_string(indices.size()) +
                " indices: the test is inconsistent";
    return c;
  }
  // The per-element verdicts of course::compare, on the samples as one array.
  CompareOptions flat = options;
  flat.cols = 0;
  const Comparison base = compare_values(got, poisoned, want, tolerance, flat);
  if (base.ok) return base;
  c = base;

  // Which samples fail, by the same rules as compare_values (poison, NaN/Inf, out of tolerance).
  double ref_sq = 0.0;
  std::size_t finite = 0;
  for (double r : want)
    if (std::isfinite(r)) {
      ref_sq += r * r;
      ++finite;
    }
  const double rms = finite ? std::sqrt(ref_sq / static_cast<double>(finite)) : 0.0;
  const auto bad = [&](std::size_t k) {
    if (poisoned[k]) return true;
    const double g = got[k], r = want[k];
    if (std::isnan(r)) return !std::isnan(g);
    if (std::isinf(r)) return g != r;
    if (!std::isfinite(g)) return true;
    return std::fabs(g - r) > tolerance.elem * (std::fabs(r) + rms);
  };
  std::vector<std::size_t> failing;
  bool any_below_wrap_bad = false, any_above_wrap = false, all_unwritten = true;
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (indices[k] >= kTwoTo31) any_above_wrap = true;
    if (!bad(k)) {
      all_unwritten = false;
      continue;
    }
    failing.push_back(k);
    if (!poisoned[k]) all_unwritten = false;
    if (indices[k] < kTwoTo31) any_below_wrap_bad = true;
  }
  const auto position = [&](std::int64_t i) {
    if (options.cols > 0) {
      std::ostringstream s;
      s << "index " << describe_index(i) << " ([" << i / options.cols << ", " << i % options.cols
        << "])";
      return s.str();
    }
    return "index " + describe_index(i);
  };

  std::ostringstream m;
  if (failing.empty()) {
    // Only the norm failed: the elements are close, their sum of squares is not.
    m << base.message;
  } else if (all_unwritten) {
    m << "No sampled element of " << options.what << " was written (the poison is still there "
      << "at every one of the " << got.size() << " indices checked, from "
      << describe_index(indices.front()) << " to " << describe_index(indices.back())
      << "): the kernel did not run or wrote elsewhere. "
      << "Is the TODO still there?";
  } else if (!any_below_wrap_bad && any_above_wrap) {
    m << options.what << " is right at every index checked below 2^31 = " << kTwoTo31
      << " but wrong or never written from " << position(indices[failing.front()])
      << " on: an index or offset computed in 32 bits (int, or unsigned) wraps at 2^31. Compute "
      << "element indices and offsets in std::int64_t: static_cast<std::int64_t>(blockIdx.x) * "
      << "blockDim.x + threadIdx.x, row * cols with a 64-bit row, and no int in between.";
  } else {
    m << failing.size() << " of the " << got.size() << " sampled elements of " << options.what
      << " are wrong or were never written, the first at " << position(indices[failing.front()])
      << ".";
  }
  m << "\n  bad samples (of " << got.size() << " checked):";
  for (std::size_t j = 0; j < std::min<std::size_t>(failing.size(), 6); ++j) {
    const std::size_t k = failing[j];
    m << "\n    " << position(indices[k]) << ": expected " << number(want[k]) << ", got "
      << (poisoned[k] ? std::string("<never written>") : number(got[k]));
  }
  if (failing.size() > 6) m << "\n    ... and " << failing.size() - 6 << " more";
  c.message = m.str();
  return c;
}

// The element types the labs use.
template void fill_pattern<float>(float*, std::int64_t, const Pattern&);
template void fill_pattern<double>(double*, std::int64_t, const Pattern&);
template void fill_pattern<half>(half*, std::int64_t, const Pattern&);
template void fill_pattern<bfloat16>(bfloat16*, std::int64_t, const Pattern&);
template void fill_cyclic<std::int32_t>(std::int32_t*, std::int64_t, std::int64_t, std::int64_t,
                                        std::int64_t);
template void fill_cyclic<std::uint32_t>(std::uint32_t*, std::int64_t, std::int64_t, std::int64_t,
                                         std::int64_t);
template void fill_on_device<float>(float*, std::int64_t, float);
template void fill_on_device<double>(double*, std::int64_t, double);
template void fill_on_device<half>(half*, std::int64_t, half);
template void fill_on_device<bfloat16>(bfloat16*, std::int64_t, bfloat16);
template void fill_on_device<std::int8_t>(std::int8_t*, std::int64_t, std::int8_t);
template void fill_on_device<std::uint8_t>(std::uint8_t*, std::int64_t, std::uint8_t);
template void fill_on_device<std::int32_t>(std::int32_t*, std::int64_t, std::int32_t);
template void fill_on_device<std::uint32_t>(std::uint32_t*, std::int64_t, std::uint32_t);
template void fill_on_device<std::int64_t>(std::int64_t*, std::int64_t, std::int64_t);
template std::vector<float> gather<float>(const float*, std::int64_t,
                                          const std::vector<std::int64_t>&);
template std::vector<double> gather<double>(const double*, std::int64_t,
                                            const std::vector<std::int64_t>&);
template std::vector<half> gather<half>(const half*, std::int64_t,
                                        const std::vector<std::int64_t>&);
template std::vector<bfloat16> gather<bfloat16>(const bfloat16*, std::int64_t,
                                                const std::vector<std::int64_t>&);
template std::vector<std::int32_t> gather<std::int32_t>(const std::int32_t*, std::int64_t,
                                                        const std::vector<std::int64_t>&);
template std::vector<std::uint32_t> gather<std::uint32_t>(const std::uint32_t*, std::int64_t,
                                                          const std::vector<std::int64_t>&);

}  // namespace course
