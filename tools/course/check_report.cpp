#include "check_report.h"

#include <regex>

#include "files.h"
#include "text.h"

namespace course::tool {

std::string suite_of(std::string_view test_name, std::string_view prefix) {
  std::string_view rest = starts_with(test_name, prefix) ? test_name.substr(prefix.size()) : test_name;
  const std::size_t dot = rest.find('.');
  return std::string(dot == std::string_view::npos ? rest : rest.substr(0, dot));
}

std::string exercise_of(std::string_view suite, const std::vector<std::string>& exercises) {
  std::string best;
  for (const std::string& part : split(suite, '/')) {
    for (const std::string& exercise : exercises)
      if (starts_with(part, exercise) && exercise.size() > best.size()) best = exercise;
  }
  return best;
}

const char* ExerciseTally::mark() const {
  if (failed > 0) return "✗";
  if (passed > 0) return "✓";
  return "–";
}

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::Passed: return "passed";
    case Verdict::Failed: return "failed";
    case Verdict::Skipped: return "skipped";
    case Verdict::NoTests: return "no_tests";
  }
  return "no_tests";
}

Verdict verdict_from_string(std::string_view s) {
  for (Verdict v : {Verdict::Passed, Verdict::Failed, Verdict::Skipped, Verdict::NoTests})
    if (s == to_string(v)) return v;
  return Verdict::NoTests;
}

int exit_code_for(Verdict verdict) {
  switch (verdict) {
    case Verdict::Passed: return kExitPassed;
    case Verdict::Failed: return kExitFailed;
    case Verdict::Skipped: return kExitSkipped;
    case Verdict::NoTests: return kExitUsage;
  }
  return kExitUsage;
}

const ExerciseTally* CheckSummary::first_failing() const {
  for (const ExerciseTally& e : exercises)
    if (e.failed > 0) return &e;
  return nullptr;
}

CheckSummary summarize(const Day& day, const std::vector<TestResult>& results) {
  CheckSummary summary;
  for (std::size_t i = 0; i < day.exercises.size(); ++i) {
    ExerciseTally tally;
    tally.name = day.exercises[i];
    tally.number = static_cast<int>(i) + 1;
    summary.exercises.push_back(tally);
  }
  ExerciseTally unlisted;  // tests of suites no exercise claims (an instructor's extra tests)
  const std::string prefix = day.test_prefix("lab");
  for (const TestResult& r : results) {
    if (!starts_with(r.name, prefix)) continue;
    const std::string exercise = exercise_of(suite_of(r.name, prefix), day.exercises);
    ExerciseTally* tally = &unlisted;
    for (ExerciseTally& e : summary.exercises)
      if (!exercise.empty() && e.name == exercise) tally = &e;
    switch (r.outcome) {
      case Outcome::Passed:
        ++tally->passed;
        ++summary.passed;
        break;
      case Outcome::Skipped:
        ++tally->skipped;
        ++summary.skipped;
        if (summary.skip_reason.empty()) summary.skip_reason = skip_reason(r.output);
        break;
      case Outcome::NotRun:
        if (r.detail == "Disabled") {  // switched off on purpose: neither run nor failed
          ++tally->skipped;
          ++summary.skipped;
          break;
        }
        [[fallthrough]];
      case Outcome::Failed:
      case Outcome::Crashed:
        ++tally->failed;
        ++summary.failed;
        if (!tally->first_failure) tally->first_failure = r;
        break;
    }
  }
  if (unlisted.passed + unlisted.failed + unlisted.skipped > 0) summary.exercises.push_back(unlisted);
  if (summary.total() == 0) summary.verdict = Verdict::NoTests;
  else if (summary.failed > 0) summary.verdict = Verdict::Failed;
  else if (summary.passed == 0) summary.verdict = Verdict::Skipped;
  else summary.verdict = Verdict::Passed;
  return summary;
}

bool skipped_for_lack_of_gpu(const CheckSummary& summary) {
  const std::string& why = summary.skip_reason;
  return why.empty() || why.find("GPU") != std::string::npos || why.find("CUDA") != std::string::npos;
}

namespace {

std::string plural(int n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string exercise_label(const ExerciseTally& e) {
  return e.number > 0 ? std::to_string(e.number) + " " + e.name : "(other tests)";
}

}  // namespace

std::string ctest_command(const std::string& build_dir, const std::string& name_regex) {
  return "ctest --test-dir " + shell_quote(build_dir) + " -R " + shell_quote(name_regex) + " --output-on-failure";
}

std::string render_check(const Day& day, const CheckSummary& summary, const CheckReportContext& context) {
  std::string out;
  out += "Day " + std::to_string(day.number()) + " — " + day.title + "\n";
  out += "your code: " + context.source + " (it compiles)\n\n";

  TextTable table({"", "exercise", "passed", "failed", "skipped"}, {false, false, true, true, true});
  for (const ExerciseTally& e : summary.exercises)
    table.add_row({e.mark(), exercise_label(e), std::to_string(e.passed), std::to_string(e.failed),
                   std::to_string(e.skipped)});
  table.add_row({"", "total", std::to_string(summary.passed), std::to_string(summary.failed),
                 std::to_string(summary.skipped)});
  out += table.render("  ") + "\n";

  const std::string lesson = context.lesson + (context.lesson_exists ? "" : " (not written yet)");
  switch (summary.verdict) {
    case Verdict::NoTests:
      out += "No test of " + day.day + " ran. Is the build up to date? Try: " +
             ctest_command(context.build_dir, "^" + regex_escape(day.test_prefix("lab"))) + "\n";
      break;
    case Verdict::Skipped:
      if (skipped_for_lack_of_gpu(summary)) {
        out += "No GPU here: all " + plural(summary.skipped, "test") +
               " were SKIPPED, which is not the same as passed.\n";
        if (!summary.skip_reason.empty()) out += "  (" + summary.skip_reason + ")\n";
        out += "Your code compiles. To learn whether it is correct, run the same check on a machine\n"
               "with a CUDA GPU: there, `cmake --preset default && cmake --build --preset default`,\n"
               "then `build/default/course check " + day.day + "`.\n";
      } else {
        out += "All " + plural(summary.skipped, "test") + " were skipped (not passed): " + summary.skip_reason + "\n";
      }
      break;
    case Verdict::Failed: {
      const ExerciseTally* next = summary.first_failing();
      const FailureText failure = first_failure(*next->first_failure);
      out += "First failure: " + next->first_failure->name;
      if (!failure.where.empty()) out += "  [" + failure.where + "]";
      out += "\n" + indent(failure.message, "    ");
      out += "\n";
      if (next->number > 0) {
        out += "Next: fix exercise " + std::to_string(next->number) + " (" + next->name + ") in " + context.source +
               " (the TODO(" + day.day + "." + std::to_string(next->number) + ") blocks); see " + lesson + ".\n";
      } else {
        out += "Next: fix the failing tests above; see " + lesson + ".\n";
      }
      out += "Rerun that test alone, with its whole output:\n    " +
             ctest_command(context.build_dir, "^" + regex_escape(next->first_failure->name) + "$") + "\n";
      break;
    }
    case Verdict::Passed:
      out += "All " + plural(summary.passed, "test") + " of Day " + std::to_string(day.number()) + " pass";
      if (summary.skipped > 0) {
        out += " (" + plural(summary.skipped, "test") + " skipped, not passed";
        if (!summary.skip_reason.empty()) out += ": " + summary.skip_reason;
        out += ")";
      }
      out += ".\nNext: `" + context.program + " bench " + day.day + "` to see how fast your kernels are";
      if (context.next_day) {
        out += ", then Day " + std::to_string(context.next_day->number()) + ": " + context.next_day->lesson();
      }
      out += ".\n";
      break;
  }
  if (!context.results_file.empty()) out += "results: " + context.results_file + "\n";
  return out;
}

BuildFailure first_build_error(std::string_view build_output, std::string_view source_dir, std::size_t max_lines) {
  // nvcc:      /path/kernel.cu(25): error: identifier "y" is undefined
  // gcc/clang: /path/test.cpp:12:5: error: ...   (or "fatal error:")
  static const std::regex nvcc(R"(^(.+)\((\d+)\): (catastrophic )?error\b)");
  static const std::regex gcc(R"(^(.+?):(\d+):(\d+:)? (fatal )?error\b)");
  static const std::regex other(R"((undefined reference to|multiple definition of|error:|Error:|CMake Error))");
  BuildFailure failure;
  const std::vector<std::string_view> lines = split_lines(build_output);
  std::size_t first = lines.size();
  for (std::size_t i = 0; i < lines.size() && first == lines.size(); ++i) {
    const std::string line(lines[i]);
    std::smatch m;
    if (std::regex_search(line, m, nvcc) || std::regex_search(line, m, gcc)) {
      first = i;
      failure.file = display_path(fs::path(m[1].str()), fs::path(std::string(source_dir)));
      failure.line = std::stoi(m[2].str());
    }
  }
  if (first == lines.size()) {  // no compiler error: a link error, a CMake error, ...
    for (std::size_t i = 0; i < lines.size() && first == lines.size(); ++i)
      if (std::regex_search(std::string(lines[i]), other)) first = i;
  }
  if (first == lines.size()) {  // nothing recognisable: show the end of the log
    first = lines.size() > max_lines ? lines.size() - max_lines : 0;
  }
  std::size_t taken = 0;
  for (std::size_t i = first; i < lines.size() && taken < max_lines; ++i) {
    const std::string_view line = lines[i];
    // ninja's progress lines and its final words say nothing about the error.
    if (starts_with(line, "ninja: build stopped") || (starts_with(line, "[") && line.find("] Building") != std::string_view::npos) ||
        (starts_with(line, "[") && line.find("] Linking") != std::string_view::npos))
      continue;
    if (!failure.first_lines.empty()) failure.first_lines += '\n';
    failure.first_lines += std::string(line);
    ++taken;
  }
  return failure;
}

std::string render_build_failure(const Day& day, const BuildFailure& failure, const CheckReportContext& context,
                                 const std::string& log_file, const std::string& command) {
  std::string out;
  out += "Day " + std::to_string(day.number()) + " — " + day.title + "\n";
  out += "✗ Your code does not compile";
  if (!failure.file.empty()) {
    out += ": fix " + failure.file;
    if (failure.line > 0) out += ", line " + std::to_string(failure.line);
    out += " first";
    if (failure.file != context.source) out += " (that is not your kernel: did you change a file the lab gives you?)";
  }
  out += ".\nThe first errors (later ones often follow from the first):\n\n";
  out += indent(failure.first_lines, "    ");
  out += "\n";
  if (!log_file.empty()) out += "The whole build log: " + log_file + "\n";
  out += "Nothing ran: fix the build, then `" + context.program + " " + command + " " + day.day + "` again.\n";
  return out;
}

}  // namespace course::tool
