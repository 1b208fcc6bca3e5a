#include "course/bench.h"

#include <algorithm>
#include <cmath>

#include "course/check.h"
#include "course/device.h"

namespace course::bench {

L2Flusher::L2Flusher() : scratch_(2 * std::max<std::size_t>(device_facts().l2_bytes, 1 << 20)) {}

void L2Flusher::flush(cudaStream_t stream) {
  COURSE_CUDA_CHECK(cudaMemsetAsync(scratch_.data(), 0, scratch_.bytes(), stream));
}

namespace {
double percentile(std::vector<double> v, double q) {
  const std::size_t k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}
}  // namespace

void measure(benchmark::State& state, const std::function<void()>& work, Traffic traffic,
             cudaStream_t stream) {
  static L2Flusher flusher;  // one per process: allocating it per benchmark would cost more
  cudaEvent_t start, stop;
  COURSE_CUDA_CHECK(cudaEventCreate(&start));
  COURSE_CUDA_CHECK(cudaEventCreate(&stop));
  // Warm-up: the first launches pay for module loading, clock ramp-up and TLB misses.
  for (int i = 0; i < 3; ++i) work();
  COURSE_CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<double> seconds;
  for (auto _ : state) {
    flusher.flush(stream);
    COURSE_CUDA_CHECK(cudaEventRecord(start, stream));
    work();
    COURSE_CUDA_CHECK(cudaEventRecord(stop, stream));
    COURSE_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    COURSE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    seconds.push_back(ms * 1e-3);
    state.SetIterationTime(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (seconds.empty()) return;

  const double median = percentile(seconds, 0.5);
  state.counters["median_us"] = median * 1e6;
  state.counters["spread_%"] = 100.0 * (percentile(seconds, 0.9) - percentile(seconds, 0.1)) / median;
  if (traffic.bytes > 0) {
    const double gbs = traffic.bytes / median / 1e9;
    state.counters["GB/s"] = gbs;
    state.counters["%copy"] = 100.0 * gbs / measured_copy_bandwidth_gbs();
  }
  if (traffic.flops > 0) state.counters["TFLOP/s"] = traffic.flops / median / 1e12;
}

void configure(benchmark::internal::Benchmark* b) {
  // 50 ms of measured GPU time: 250 samples of a 200 us kernel. Each iteration also pays for
  // the L2 flush and a synchronisation (~50 us of wall time), so a longer minimum would make
  // the microsecond-sized kernels run thousands of iterations for no better a median.
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.05);
}

bool verified(benchmark::State& state, const Comparison& check) {
  if (check.ok) return true;
  const std::string first_line = check.message.substr(0, check.message.find('\n'));
  state.SkipWithError(("output does not match the reference, not timed: " + first_line).c_str());
  return false;
}

}  // namespace course::bench
