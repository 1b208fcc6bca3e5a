#include "course/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <random>
#include <string>
#include <utility>

#include "course/check.h"
#include "course/device.h"

namespace course::bench {

namespace {
std::size_t flush_bytes() {
  return 2 * std::max<std::size_t>(static_cast<std::size_t>(device_facts().l2_bytes), 1 << 20);
}
}  // namespace

L2Flusher::L2Flusher()
    : scratch_{DeviceBuffer<char>(flush_bytes()), DeviceBuffer<char>(flush_bytes())},
      sink_(256),
      grid_(8 * std::max(device_facts().sm_count, 1)) {  // 8 blocks of 256 threads per SM
  for (auto& s : scratch_) COURSE_CUDA_CHECK(cudaMemset(s.data(), 0, s.bytes()));
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
}

void L2Flusher::flush(int which, cudaStream_t stream) {
  const DeviceBuffer<char>& s = scratch_[which & 1];
  read_through_l2(s.data(), s.bytes(), sink_.data(), grid_, stream);
}

namespace {
// One flusher per process, shared by every timer: allocating 2 x 100 MB per benchmark would
// cost more than the benchmark.
L2Flusher& process_flusher() {
  static L2Flusher flusher;
  return flusher;
}
}  // namespace

double floor_seconds(const Traffic& traffic) {
  double floor = 0.0;
  if (traffic.bytes > 0)
    floor = traffic.bytes / (kFloorMargin * measured_copy_bandwidth_gbs() * 1e9);
  if (traffic.flops > 0)
    floor = std::max(floor, traffic.flops / (kComputeMargin * peak_flops_per_second(traffic.math)));
  return floor;
}

double percentile(std::vector<double> v, double p) {
  const std::size_t k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

BracketedTimer::BracketedTimer(cudaStream_t stream) : stream_(stream) {
  process_flusher();  // allocate (and zero) the scratch before anything is timed
  COURSE_CUDA_CHECK(cudaEventCreate(&start_));
  COURSE_CUDA_CHECK(cudaEventCreate(&mid_));
  COURSE_CUDA_CHECK(cudaEventCreate(&stop_));
}

BracketedTimer::~BracketedTimer() {
  cudaEventDestroy(start_);
  cudaEventDestroy(mid_);
  cudaEventDestroy(stop_);
}

double BracketedTimer::time(const std::function<void()>& work) {
  L2Flusher& flusher = process_flusher();
  flusher.flush(1, stream_);  // untimed: a cold, clean L2 holding only buffer 1
  COURSE_CUDA_CHECK(cudaEventRecord(start_, stream_));
  flusher.flush(0, stream_);  // the flush alone (misses on every line of buffer 0)
  COURSE_CUDA_CHECK(cudaEventRecord(mid_, stream_));
  work();
  flusher.flush(1, stream_);  // the same flush again, plus writing back what work left dirty
  COURSE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
  COURSE_CUDA_CHECK(cudaEventSynchronize(stop_));
  float flush_ms = 0.0f, work_and_flush_ms = 0.0f;
  COURSE_CUDA_CHECK(cudaEventElapsedTime(&flush_ms, start_, mid_));
  COURSE_CUDA_CHECK(cudaEventElapsedTime(&work_and_flush_ms, mid_, stop_));
  last_flush_seconds_ = flush_ms * 1e-3;
  return (static_cast<double>(work_and_flush_ms) - flush_ms) * 1e-3;
}

bool SamplePlan::enough(int samples, double timed_seconds, double wall_seconds) const {
  if (samples >= max_samples) return true;
  if (wall_seconds >= max_wall_seconds && samples >= min_samples_when_slow) return true;
  return samples >= min_samples && timed_seconds >= min_timed_seconds;
}

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Appends samples to `seconds` until SamplePlan{} says there are enough. `take` returns one
// sample: {the seconds it reports, the seconds of work it timed}.
template <class Take>
void sample(std::vector<double>* seconds, Take&& take) {
  const SamplePlan plan;
  const auto start = std::chrono::steady_clock::now();
  double timed = 0.0;
  for (int n = 1;; ++n) {
    const auto [s, work_seconds] = take();
    seconds->push_back(s);
    timed += work_seconds;
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (plan.enough(n, timed, wall)) return;
  }
}

// median_us, samples and spread_% from the samples (seconds), as bench.h describes them.
void set_time_counters(benchmark::State& state, const std::vector<double>& seconds) {
  const double median = percentile(seconds, 0.5);
  state.counters["median_us"] = median * 1e6;
  state.counters["samples"] = static_cast<double>(seconds.size());
  state.counters["spread_%"] =
      median > 0.0 ? 100.0 * (percentile(seconds, 0.9) - percentile(seconds, 0.1)) / median : 0.0;
}

void measure_impl(benchmark::State& state, const std::function<void()>& work, Traffic traffic,
                  const Recheck* recheck, cudaStream_t stream) {
  BracketedTimer timer(stream);
  // Warm-up: the first launches pay for module loading, clock ramp-up and TLB misses.
  for (int i = 0; i < 3; ++i) work();
  COURSE_CUDA_CHECK(cudaStreamSynchronize(stream));

  // Which timed calls are audited is drawn from the OS's entropy as the loop goes, so nothing
  // in the process can know it in advance: each call with probability kAuditsPerRow / (the
  // number of samples the first one predicts), so that about kAuditsPerRow are audited
  // whatever the row's length.
  std::random_device entropy;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  double audit_probability = 1.0;
  int audits = 0;
  std::string wrong;

  std::vector<double> seconds;
  for (auto _ : state) {
    sample(&seconds, [&] {
      if (recheck != nullptr && recheck->poison) {
        recheck->poison();
        COURSE_CUDA_CHECK(cudaDeviceSynchronize());  // the poison may be on another stream
      }
      const double s = timer.time(work);  // returns once the work's stop event has passed
      if (recheck != nullptr && wrong.empty()) {
        if (seconds.empty()) {
          const SamplePlan plan;
          const double predicted = std::clamp(plan.min_timed_seconds / std::max(s, 1e-7),
                                              static_cast<double>(plan.min_samples),
                                              static_cast<double>(plan.max_samples));
          audit_probability = std::min(1.0, kAuditsPerRow / predicted);
        }
        if (uniform(entropy) < audit_probability) {
          ++audits;
          const Comparison check = recheck->check();
          if (!check.ok) wrong = first_line(check.message);
        }
      }
      return std::pair<double, double>{s, std::max(s, 0.0)};
    });
    // Google Benchmark needs a positive time; the median keeps the honest sample.
    state.SetIterationTime(std::max(percentile(seconds, 0.5), 1e-9));
  }
  if (seconds.empty()) return;

  if (recheck != nullptr && wrong.empty() && audits == 0) {
    // No call happened to be drawn (rare): audit one more, poisoned and timed like the others.
    if (recheck->poison) recheck->poison();
    COURSE_CUDA_CHECK(cudaDeviceSynchronize());
    seconds.push_back(timer.time(work));
    ++audits;
    const Comparison check = recheck->check();
    if (!check.ok) wrong = first_line(check.message);
  }
  if (!wrong.empty()) {
    state.SkipWithError(("the timed output is wrong (re-checked after timing): " + wrong).c_str());
    return;
  }

  const double median = percentile(seconds, 0.5);
  if (median <= 0.0) {
    state.SkipWithError("the work takes less time than the L2 flush's jitter: time a larger size");
    return;
  }
  set_time_counters(state, seconds);
  if (recheck != nullptr) {
    state.counters["recheck"] = 1;
    state.counters["audits"] = audits;
  }
  const double floor = floor_seconds(traffic);
  if (floor > 0.0) {
    state.counters["floor_us"] = floor * 1e6;
    if (median < floor) {
      // median_us and floor_us stay in the report, so that the error can be read with them.
      state.SkipWithError(
          "impossible time: faster than the physical floor (its bytes at 1.25x the measured "
          "copy rate, or its flops at the card's peak rate): is the kernel doing its work on "
          "every call?");
      return;
    }
  }
  if (traffic.bytes > 0) {
    const double ceiling_gbs = measured_copy_bandwidth_gbs();
    const double gbs = traffic.bytes / median / 1e9;
    state.counters["GB/s"] = gbs;
    state.counters["%copy"] = 100.0 * gbs / ceiling_gbs;
  }
  if (traffic.flops > 0) state.counters["TFLOP/s"] = traffic.flops / median / 1e12;
}

}  // namespace

void measure(benchmark::State& state, const std::function<void()>& work, Traffic traffic,
             cudaStream_t stream) {
  measure_impl(state, work, traffic, nullptr, stream);
}

void measure(benchmark::State& state, const std::function<void()>& work, Traffic traffic,
             const Recheck& recheck, cudaStream_t stream) {
  require(static_cast<bool>(recheck.check), "course::bench::measure: a Recheck needs a check");
  measure_impl(state, work, traffic, &recheck, stream);
}

void measure_host(benchmark::State& state, const std::function<void()>& call, int calls,
                  const std::function<void()>& between) {
  require(calls > 0, "course::bench::measure_host: calls must be positive");
  std::vector<double> seconds;
  for (auto _ : state) {
    sample(&seconds, [&] {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i) call();
      const auto stop = std::chrono::steady_clock::now();
      if (between) between();
      const double all = std::chrono::duration<double>(stop - start).count();
      return std::pair<double, double>{all / calls, all};
    });
    state.SetIterationTime(std::max(percentile(seconds, 0.5), 1e-12));
  }
  if (!seconds.empty()) set_time_counters(state, seconds);
}

void configure(benchmark::internal::Benchmark* b) {
  // One iteration: measure() takes its samples inside it (SamplePlan: 50 ms of timed work, 250
  // samples of a 200 us kernel; each sample also pays for three L2 flushes and a
  // synchronisation, ~130 us of wall time on an H100, hence the cap of 2000 samples for
  // microsecond kernels).
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(1);
}

bool verified(benchmark::State& state, const Comparison& check) {
  if (check.ok) return true;
  state.SkipWithError(
      ("output does not match the reference, not timed: " + first_line(check.message)).c_str());
  return false;
}

bool first_run_verified(benchmark::State& state, const std::function<void()>& prepare,
                        const std::function<void()>& run,
                        const std::function<Comparison()>& check) {
  try {
    prepare();
    run();
    return verified(state, check());
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

double vendor_median_us(const std::string& shape_key, const std::function<void()>& vendor_work,
                        int samples) {
  static std::map<std::string, double> medians;
  const auto found = medians.find(shape_key);
  if (found != medians.end()) return found->second;
  double median = 0.0;
  try {
    BracketedTimer timer;
    vendor_work();  // warm-up: the library picks its kernel and loads it
    std::vector<double> times;
    for (int i = 0; i < samples; ++i) times.push_back(timer.time(vendor_work) * 1e6);
    median = percentile(times, 0.5);
  } catch (const std::exception&) {
    median = 0.0;
  }
  medians[shape_key] = median;
  return median;
}

void report_vendor_ratio(benchmark::State& state, const std::string& shape_key,
                         const std::function<void()>& vendor_work, int samples) {
  const double vendor_us = vendor_median_us(shape_key, vendor_work, samples);
  const double ours = state.counters["median_us"];
  if (ours > 0 && vendor_us > 0) state.counters["%vendor"] = 100.0 * vendor_us / ours;
}

}  // namespace course::bench
