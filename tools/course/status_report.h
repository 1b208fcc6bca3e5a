// `course status`: where the student stands on every day, from the results `course check`
// and `course bench` recorded under <build>/course-results/ and from git.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check_report.h"
#include "manifest.h"

namespace course::tool {

enum class DayState { NotStarted, Failing, Passing, CompiledNoGpu };
const char* to_string(DayState state);

// What is known about one day.
struct DayFacts {
  std::optional<std::string> check_verdict;  // "passed", "failed", "skipped", "build_failed", ... ; none = never checked
  std::string check_time;                    // when the last check finished
  std::string check_counts;                  // "12 passed, 3 failed" (from the recorded check)
  std::optional<bool> kernel_untouched;      // kernel.cu has no change against the git checkout (none = unknown)
  bool kernel_changed_since_check = false;   // kernel.cu differs from the one the last check built
  std::string bench_note;                    // "" = never benchmarked, else a short summary
};

// not started: never checked, or kernel.cu untouched since checkout and the last check did
//              not pass (the starter fails or skips by design);
// failing:     the last check did not compile, or a test failed;
// passing:     the last check ran tests and all of them passed;
// compiled (no GPU): the last check compiled and every test skipped itself.
DayState decide_state(const DayFacts& facts);

struct StatusLine {
  const Day* day;
  DayFacts facts;
};

std::string render_status(const std::vector<StatusLine>& lines, const std::string& program);

}  // namespace course::tool
