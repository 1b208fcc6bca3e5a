// course::bench::measure_host: timing host calls (Day 8's allocator) without a GPU.
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
  benchmark::RegisterBenchmark("measure_host_sleep",
                               [&](benchmark::State& state) {
                                 course::bench::measure_host(
                                     state,
                                     [&] {
                                       ++calls;
                                       std::this_thread::sleep_for(std::chrono::microseconds(200));
                                     },
                                     5, [&] { ++betweens; });
                               })
      ->UseManualTime()
      ->Iterations(4);
  Capture capture;
  benchmark::RunSpecifiedBenchmarks(&capture, "measure_host_sleep");
  benchmark::ClearRegisteredBenchmarks();
  EXPECT_EQ(capture.iterations, 4);
  EXPECT_EQ(calls, 4 * 5) << "each iteration runs the call `calls` times";
  EXPECT_EQ(betweens, 4);
  ASSERT_TRUE(capture.counters.count("median_us"));
  // One call sleeps at least 200 us: the sample is per call, not per iteration.
  EXPECT_GE(capture.counters["median_us"].value, 200.0);
  EXPECT_LT(capture.counters["median_us"].value, 5 * 200.0);
  EXPECT_TRUE(capture.counters.count("spread_%"));
  EXPECT_FALSE(capture.counters.count("recheck")) << "the caller re-checks, not measure_host";
}

}  // namespace
