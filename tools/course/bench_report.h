// `course bench`: Google Benchmark's JSON (--benchmark_format=json / --benchmark_out) of the
// student's and the solution's benchmark binaries, read into rows and shown side by side.
// The counters come from course::bench::measure (common/course/bench.h): median_us, GB/s,
// %copy, TFLOP/s, spread_% and key (the day's headline benchmark).
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json.h"
#include "manifest.h"

namespace course::tool {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

struct BenchRow {
  std::string name;        // as shown: "BM_saxpy/n:67108864/blocks:0" (no /manual_time etc.)
  bool key = false;        // the day's headline benchmark
  std::string error;       // non-empty when the benchmark reported an error instead of a time
  double median_us = kNoValue;
  double gb_per_s = kNoValue;
  double pct_copy = kNoValue;
  double tflop_per_s = kNoValue;
  double spread_pct = kNoValue;
};

struct BenchRun {
  std::vector<BenchRow> rows;  // in the order the binary ran them
  std::string device;          // the "device" context the course's bench main adds
  double copy_ceiling_gbs = kNoValue;
  const BenchRow* find(std::string_view name) const;
};

// "BM_vector_add/67108864" from "BM_vector_add/67108864/min_time:0.200/manual_time".
std::string benchmark_display_name(std::string_view name);

// Reads one benchmark binary's JSON. With repetitions, a run's "median" aggregate is used
// when present, else its last iteration.
std::optional<BenchRun> parse_benchmark_json(std::string_view text, ParseError* error = nullptr);
std::optional<BenchRun> bench_run_from_json(const JsonValue& doc, std::string* error = nullptr);
JsonValue to_json_value(const BenchRun& run);

// Speed of yours relative to the solution's (solution time / your time): 1.0 = as fast,
// 0.5 = half as fast. NaN when either has no time.
double speed_ratio(const BenchRow& yours, const BenchRow& solution);

// The side-by-side table: benchmark | your median_us | your GB/s | %copy | solution GB/s |
// %copy | yours/solution, and TFLOP/s columns when a benchmark reports them. A benchmark that
// reported an error shows the error instead of numbers.
std::string render_bench_table(const BenchRun& yours, const BenchRun& solution);

// How many of the student's benchmarks reported an error.
int count_errors(const BenchRun& run);

}  // namespace course::tool
