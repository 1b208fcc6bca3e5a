// course::bench::measure_host (timing host calls, Day 8's allocator) and SamplePlan (how many
// samples measure() and measure_host() take), without a GPU.
#include <benchmark/benchmark.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "course/bench.h"

namespace {

// Keeps each run's counters and iteration count (a run that failed has no counters).
class Capture : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      counters = r.counters;
      iterations = r.iterations;
    }
  }
  benchmark::UserCounters counters;
  benchmark::IterationCount iterations = 0;
};

TEST(MeasureHost, TimesOneCallAndRunsBetweenUntimed) {
  int calls = 0, betweens = 0;
  benchmark::RegisterBenchmark("measure_host_sleep", [&](benchmark::State& state) {
    course::bench::measure_host(
        state,
        [&] {
          ++calls;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        },
        5, [&] { ++betweens; });
  })->Apply(course::bench::configure);
  Capture capture;
  benchmark::RunSpecifiedBenchmarks(&capture, "measure_host_sleep");
  benchmark::ClearRegisteredBenchmarks();
  EXPECT_EQ(capture.iterations, 1) << "configure(): the samples are taken inside one iteration";
  ASSERT_TRUE(capture.counters.count("samples"));
  const int samples = static_cast<int>(capture.counters["samples"].value);
  // Each sample times 5 calls of >= 200 us: 1 ms. The plan stops at 20 samples and 50 ms of
  // timed work, so about 50 samples (fewer only if the 4 s wall limit came first).
  EXPECT_GE(samples, course::bench::SamplePlan{}.min_samples);
  EXPECT_LE(samples, 60);
  EXPECT_EQ(calls, samples * 5) << "each sample runs the call `calls` times";
  EXPECT_EQ(betweens, samples);
  ASSERT_TRUE(capture.counters.count("median_us"));
  // One call sleeps at least 200 us: the sample is per call, not per iteration.
  EXPECT_GE(capture.counters["median_us"].value, 200.0);
  EXPECT_LT(capture.counters["median_us"].value, 5 * 200.0);
  EXPECT_TRUE(capture.counters.count("spread_%"));
  EXPECT_FALSE(capture.counters.count("recheck")) << "the caller re-checks, not measure_host";
}

TEST(SamplePlan, StopsAtEnoughTimedWorkTheCapOrTheWallLimit) {
  const course::bench::SamplePlan plan;
  EXPECT_FALSE(plan.enough(1, 1.0, 0.5)) << "never fewer than min_samples while time is left";
  EXPECT_FALSE(plan.enough(plan.min_samples - 1, 1.0, 0.5));
  EXPECT_TRUE(plan.enough(plan.min_samples, plan.min_timed_seconds, 0.1));
  EXPECT_FALSE(plan.enough(plan.min_samples, 0.5 * plan.min_timed_seconds, 0.1))
      << "a fast kernel keeps sampling until min_timed_seconds of work are timed";
  EXPECT_TRUE(plan.enough(plan.max_samples, 1e-3, 0.3)) << "microsecond kernels stop at the cap";
  // A very slow kernel (a second a call) stops at the wall limit, with a few samples.
  EXPECT_FALSE(plan.enough(plan.min_samples_when_slow - 1, 10.0, 10.0));
  EXPECT_TRUE(plan.enough(plan.min_samples_when_slow, 10.0, plan.max_wall_seconds));
}

}  // namespace
