// What ctest reports about a run of tests, read from the JUnit XML it writes with
// --output-junit (CMake 3.21+) and refined with its console output.
//
// CMake 3.25 writes one <testcase name=... status=...> per test, with
//   status="run"       the test passed
//   status="fail"      it failed; <failure message=""/> does not say how, so a GoogleTest
//                      failure is told from a crash or a timeout by the test's output and by
//                      ctest's console line ("***Failed", "***Timeout", "***Exception: SegFault")
//   status="notrun"    <skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/> (GTEST_SKIP, e.g.
//                      no GPU) or "SKIP_RETURN_CODE=77"; any other message means the test
//                      could not start ("Unable to find executable")
//   status="disabled"  the DISABLED property
// and the test's output (stdout and stderr) in <system-out>.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json.h"  // ParseError

namespace course::tool {

enum class Outcome {
  Passed,
  Failed,    // a test assertion failed (GoogleTest reported it)
  Crashed,   // the test process died, timed out, or failed outside any assertion
  Skipped,   // the test skipped itself (no GPU): not passed, not failed
  NotRun,    // ctest could not run it (no executable, disabled)
};

const char* to_string(Outcome outcome);

struct TestResult {
  std::string name;    // the ctest name, e.g. d01.lab.Sizes/VectorAdd.MatchesTheReferenceForEverySize/n31
  Outcome outcome = Outcome::NotRun;
  double seconds = 0.0;
  std::string output;  // what the test printed
  std::string detail;  // ctest's word for a crash or a non-run ("Timeout", "Exception: SegFault", ...)
};

// Parses ctest's JUnit XML. Returns nullopt (and says why) when the text is not XML or not
// a JUnit <testsuite>.
std::optional<std::vector<TestResult>> parse_ctest_junit(std::string_view xml, ParseError* error = nullptr);

// ctest's console lines "12/40 Test #12: <name> ....***Timeout  60.01 sec", keyed by the full
// test name (taken from the "Start 12: <name>" line, since the result line may truncate it).
// Fills `detail` of crashed and not-run tests in `results`.
void apply_ctest_console(std::string_view console, std::vector<TestResult>& results);

// The first failure in a GoogleTest output, in words:
//   where    "test_d01.cu:42" (file name and line of the failed assertion), or "" if none
//   message  the lines GoogleTest printed for it (without the "Failed" header line)
struct FailureText {
  std::string where;
  std::string message;
};
FailureText first_failure(const TestResult& result, std::size_t max_lines = 8);

// Why a test skipped itself: the line after GoogleTest's "...: Skipped", e.g.
// "no usable CUDA device (...): this test needs a CUDA GPU"; "" if the output does not say.
std::string skip_reason(const std::string& output);

}  // namespace course::tool
