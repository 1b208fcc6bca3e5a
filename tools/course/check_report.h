// `course check`'s judgement of one day: the tests grouped by exercise, the verdict, the
// first failure in words and the next step. Pure functions of the test results, so that the
// decisions can be tested without a build, a GPU or ctest.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctest_results.h"
#include "manifest.h"

namespace course::tool {

// The tool's exit codes (every command).
enum ExitCode : int {
  kExitPassed = 0,    // everything that ran passed
  kExitFailed = 1,    // a test failed, crashed or timed out; a benchmark reported an error
  kExitUsage = 2,     // bad arguments, no manifest, a build failure, tests that could not run
  kExitSkipped = 3,   // nothing ran: every test skipped itself (no GPU)
};

// "Sizes/VectorAdd" from "d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31" with
// prefix "d01.lab.": the GoogleTest suite, instantiation prefix included.
std::string suite_of(std::string_view test_name, std::string_view prefix);

// The exercise a suite counts toward: the longest exercise name that a '/'-separated part of
// the suite starts with ("VectorAddBounds" -> VectorAdd, "Sizes/VectorAdd" -> VectorAdd,
// "Vec/VectorizedCopy/0" -> VectorizedCopy). "" when none does.
std::string exercise_of(std::string_view suite, const std::vector<std::string>& exercises);

struct ExerciseTally {
  std::string name;    // the exercise; "" for tests of no listed exercise
  int number = 0;      // its position in the manifest, from 1; 0 for the unlisted ones
  int passed = 0;
  int failed = 0;      // failed, crashed, timed out or could not start
  int skipped = 0;
  std::optional<TestResult> first_failure;
  // ✓ all that ran passed, ✗ something failed, – nothing ran
  const char* mark() const;
};

enum class Verdict {
  Passed,   // no failures and at least one test passed (some may have skipped)
  Failed,   // at least one failure
  Skipped,  // every test skipped itself
  NoTests,  // ctest ran no test of this day
};

const char* to_string(Verdict verdict);
Verdict verdict_from_string(std::string_view s);  // inverse of to_string; NoTests if unknown
int exit_code_for(Verdict verdict);

struct CheckSummary {
  std::vector<ExerciseTally> exercises;  // manifest order, then the unlisted tests if any
  int passed = 0;
  int failed = 0;
  int skipped = 0;
  Verdict verdict = Verdict::NoTests;
  std::string skip_reason;  // why the first skipped test skipped ("no usable CUDA device ...")
  // The exercise to work on next (first in manifest order with a failure), or nullptr.
  const ExerciseTally* first_failing() const;
  int total() const { return passed + failed + skipped; }
};

// Groups `results` of `day`'s student tests (names starting with day.test_prefix("lab")) by
// exercise and decides the verdict.
CheckSummary summarize(const Day& day, const std::vector<TestResult>& results);

// True when the skip reason says a GPU was missing (the harness's words) or says nothing.
bool skipped_for_lack_of_gpu(const CheckSummary& summary);

// What the report needs besides the summary.
struct CheckReportContext {
  std::string program = "course";  // how the student runs the tool
  std::string source;              // the student's kernel.cu, as shown
  std::string lesson;              // lessons/dNN_*.md, as shown
  bool lesson_exists = true;
  std::string build_dir;           // the build folder, as the student would type it
  std::string results_file;        // where the results were recorded ("" = not recorded)
  const Day* next_day = nullptr;   // the following day of the manifest, if any
};

// "ctest --test-dir build/dev -R '^d01\.lab\.' --output-on-failure": reruns the tests whose
// names match `name_regex` and shows their whole output.
std::string ctest_command(const std::string& build_dir, const std::string& name_regex);

// The friendly report printed after the tests ran.
std::string render_check(const Day& day, const CheckSummary& summary, const CheckReportContext& context);

// When the build failed: the first compiler error lines of `build_output` and the file to
// fix (shown relative to `source_dir`).
struct BuildFailure {
  std::string file;         // the file of the first error, as shown ("" if none was found)
  int line = 0;             // its line (0 if unknown)
  std::string first_lines;  // the first error and the lines that explain it
};
BuildFailure first_build_error(std::string_view build_output, std::string_view source_dir, std::size_t max_lines = 14);
// `command` is what to run again once it compiles: "check" or "bench".
std::string render_build_failure(const Day& day, const BuildFailure& failure, const CheckReportContext& context,
                                 const std::string& log_file, const std::string& command = "check");

}  // namespace course::tool
