#include "commands.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <thread>

#include "bench_report.h"
#include "check_report.h"
#include "ctest_results.h"
#include "files.h"
#include "json.h"
#include "status_report.h"
#include "subprocess.h"
#include "text.h"

namespace course::tool {

std::string Context::show(const fs::path& path) const { return display_path(path, source_dir); }

namespace {

// ============================================================================ shared helpers

// The build folder as the student should type it: relative to the working directory when inside it.
std::string shown_build_dir(const Context& c) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  return ec ? c.binary_dir.string() : display_path(c.binary_dir, cwd);
}

int usage_error(Context& c, const std::string& message, const char* command) {
  *c.err << c.program << ": " << message << "\n";
  for (const Command& cmd : commands())
    if (command && std::string(cmd.name) == command)
      *c.err << "usage: " << c.program << " " << cmd.name << (cmd.arguments[0] ? " " : "") << cmd.arguments << "\n";
  if (!command) *c.err << "Run `" << c.program << " help` for the commands.\n";
  return kExitUsage;
}

int choose_jobs(const Context& c) {
  if (c.jobs > 0) return c.jobs;
  const unsigned n = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(n, 1u, 8u));
}

// lessons/<lab name>.md, else any lessons/dNN_*.md (a lesson may be named apart from its lab).
std::pair<fs::path, bool> lesson_of(const Context& c, const Day& day) {
  const fs::path expected = c.source_dir / day.lesson();
  if (fs::exists(expected)) return {expected, true};
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(c.source_dir / "lessons", ec)) {
    const std::string name = entry.path().filename().string();
    if (starts_with(name, day.day + "_") && ends_with(name, ".md")) return {entry.path(), true};
  }
  return {expected, false};
}

// Whether the student's kernel.cu has no change against the git checkout; nullopt when git
// cannot say (no git, not a repository, a submission outside the tree).
std::optional<bool> kernel_untouched(const Context& c, const Day& day) {
  const fs::path source = day.lab_source;
  if (c.show(source) == source.string() && source.is_absolute()) return std::nullopt;  // outside the tree
  const ProcessResult r = run_process({"git", "-C", c.source_dir.string(), "status", "--porcelain",
                                       "--untracked-files=all", "--", source.string()});
  if (!r.ok()) return std::nullopt;
  return trim(r.output).empty();
}

std::optional<std::string> kernel_fingerprint(const Day& day) {
  const std::optional<std::string> bytes = read_file(day.lab_source);
  if (!bytes) return std::nullopt;
  return fingerprint(*bytes);
}

// Builds `targets`; on failure prints which file to fix and returns false.
bool build(Context& c, const Day& day, const std::vector<std::string>& targets, const CheckReportContext& report,
           const std::string& command) {
  remove_stale_temporaries(c.results_dir());  // what an interrupted earlier run left behind
  *c.out << "building " << join(targets, " ") << " (your code: " << report.source << ") ..." << std::endl;
  std::vector<std::string> argv = {"cmake", "--build", c.binary_dir.string(), "--target"};
  argv.insert(argv.end(), targets.begin(), targets.end());
  ProcessOptions options;
  options.echo = c.verbose;
  const ProcessResult r = run_process(argv, options);
  if (r.ok()) return true;
  if (!r.started) {
    *c.err << c.program << ": " << r.error << " (is CMake installed and on PATH?)\n";
    return false;
  }
  const fs::path log = c.results_dir() / (day.day + ".build.log");
  std::string log_error;
  const bool logged = write_file_atomically(log, r.output, &log_error);
  const BuildFailure failure = first_build_error(r.output, c.source_dir.string());
  *c.out << "\n" << render_build_failure(day, failure, report, logged ? c.show(log) : "", command);
  if (!logged) *c.err << c.program << ": could not save the build log: " << log_error << "\n";
  return false;
}

// Writes `doc` as <results>/<name>, atomically; complains (without failing the command) if it cannot.
void record(Context& c, const std::string& name, const JsonValue& doc) {
  std::string error;
  if (!write_file_atomically(c.results_dir() / name, to_json(doc), &error))
    *c.err << c.program << ": could not record the results: " << error << "\n";
}

JsonValue kernel_json(const Day& day) {
  JsonValue k = JsonValue::object();
  k.set("path", JsonValue::string(day.lab_source));
  const std::optional<std::string> fp = kernel_fingerprint(day);
  k.set("fingerprint", fp ? JsonValue::string(*fp) : JsonValue());
  return k;
}

CheckReportContext report_context(const Context& c, const Manifest& manifest, const Day& day) {
  CheckReportContext r;
  r.program = c.program;
  r.source = c.show(day.lab_source);
  const auto [lesson, exists] = lesson_of(c, day);
  r.lesson = c.show(lesson);
  r.lesson_exists = exists;
  r.build_dir = shown_build_dir(c);
  for (std::size_t i = 0; i + 1 < manifest.days.size(); ++i)
    if (&manifest.days[i] == &day) r.next_day = &manifest.days[i + 1];
  return r;
}

// Reads a JSON results file; nullopt (and a note naming the file) if it is unreadable.
std::optional<JsonValue> read_results(const fs::path& path, std::string* problem) {
  if (!fs::exists(path)) return std::nullopt;
  std::string error;
  const std::optional<std::string> text = read_file(path, &error);
  if (!text) {
    *problem = error;
    return std::nullopt;
  }
  ParseError parse_error;
  std::optional<JsonValue> doc = parse_json(*text, &parse_error);
  if (!doc || !doc->is_object()) {
    *problem = path.string() + " is not valid JSON (" + (doc ? "not an object" : parse_error.describe()) + ")";
    return std::nullopt;
  }
  return doc;
}

fs::path find_executable(const Context& c, const Day& day, const std::string& target) {
  const fs::path expected = c.binary_dir / "labs" / day.name / target;
  if (fs::exists(expected)) return expected;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(c.binary_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().filename() == target && it->is_regular_file(ec)) return it->path();
  }
  return expected;
}

}  // namespace

// ============================================================================ public helpers

std::optional<fs::path> source_dir_of_build(const fs::path& binary_dir) {
  const std::optional<std::string> cache = read_file(binary_dir / "CMakeCache.txt");
  if (!cache) return std::nullopt;
  for (std::string_view line : split_lines(*cache)) {
    const std::string_view key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
    if (starts_with(line, key)) return fs::path(std::string(trim(line.substr(key.size()))));
  }
  return std::nullopt;
}

std::optional<Manifest> load_manifest(Context& c) {
  const fs::path file = c.manifest_file();
  if (!fs::exists(file)) {
    *c.err << c.program << ": no course build in " << c.binary_dir.string() << " (" << file.filename().string()
           << " not found).\n"
           << "Configure first:  cmake --preset default        (from " << c.source_dir.string() << ")\n"
           << "             or:  cmake -S " << c.source_dir.string() << " -B " << c.binary_dir.string() << " -G Ninja\n"
           << "or point the tool at another build with --build-dir DIR.\n";
    return std::nullopt;
  }
  std::string error;
  const std::optional<std::string> text = read_file(file, &error);
  if (!text) {
    *c.err << c.program << ": " << error << "\n";
    return std::nullopt;
  }
  std::optional<Manifest> manifest = parse_manifest(*text, &error);
  if (!manifest) {
    *c.err << c.program << ": " << file.string() << ", " << error
           << "\nReconfigure to rewrite it: cmake -S " << c.source_dir.string() << " -B " << c.binary_dir.string()
           << "\n";
    return std::nullopt;
  }
  if (manifest->days.empty()) {
    *c.err << c.program << ": " << file.string() << " lists no days (no labs/dNN_*/CMakeLists.txt was found).\n";
    return std::nullopt;
  }
  return manifest;
}

const Day* resolve_day(Context& c, const Manifest& manifest, const std::string& arg) {
  const std::optional<std::string> day = parse_day(arg);
  const Day* found = day ? manifest.find(*day) : nullptr;
  if (!found) {
    *c.err << c.program << ": '" << arg << "' is not a day of this course. The days are: " << manifest.day_list()
           << "\n(write a day as d02, 02 or 2; `" << c.program << " list` shows them all)\n";
  }
  return found;
}

// ============================================================================ commands

int cmd_list(Context& c, const std::vector<std::string>& args) {
  if (!args.empty()) return usage_error(c, "list takes no arguments", "list");
  const std::optional<Manifest> manifest = load_manifest(c);
  if (!manifest) return kExitUsage;
  *c.out << "The course: " << manifest->days.size() << (manifest->days.size() == 1 ? " day" : " days")
         << " (from " << shown_build_dir(c) << "/" << c.manifest_file().filename().string() << ")\n";
  for (const Day& day : manifest->days) {
    const auto [lesson, exists] = lesson_of(c, day);
    std::vector<std::string> exercises;
    for (std::size_t i = 0; i < day.exercises.size(); ++i)
      exercises.push_back(std::to_string(i + 1) + " " + day.exercises[i]);
    *c.out << "\n" << day.day << "  " << day.title << "\n"
           << "     lesson:    " << c.show(lesson) << (exists ? "" : "  (not written yet)") << "\n"
           << "     lab:       " << day.lab_dir() << "/  (README.md: the exercises; kernel.cu: your code)\n";
    if (c.show(day.lab_source) != day.starter())
      *c.out << "     your code: " << c.show(day.lab_source) << "  (this build compiles it instead of the starter)\n";
    *c.out << "     exercises: " << (exercises.empty() ? "(none listed)" : join(exercises, ", ")) << "\n";
  }
  *c.out << "\nCheck a day with `" << c.program << " check d01`; time it with `" << c.program << " bench d01`.\n";
  return kExitPassed;
}

int cmd_check(Context& c, const std::vector<std::string>& args) {
  if (args.size() != 1) return usage_error(c, "check needs one day", "check");
  const std::optional<Manifest> manifest = load_manifest(c);
  if (!manifest) return kExitUsage;
  const Day* day = resolve_day(c, *manifest, args[0]);
  if (!day) return kExitUsage;
  CheckReportContext report = report_context(c, *manifest, *day);

  JsonValue record_doc = JsonValue::object();
  record_doc.set("command", JsonValue::string("check"));
  record_doc.set("day", JsonValue::string(day->day));
  record_doc.set("kernel", kernel_json(*day));
  const std::string record_name = day->day + ".check.json";

  // 1. Build the student's tests.
  if (!build(c, *day, {day->day + "_lab_tests"}, report, "check")) {
    record_doc.set("finished", JsonValue::string(utc_now()));
    record_doc.set("verdict", JsonValue::string("build_failed"));
    record(c, record_name, record_doc);
    return kExitUsage;
  }

  // 2. Run them: one process per test, each with the timeout the lab declared.
  //    Selected by name (dNN.lab.*), which does not depend on how the labels were set.
  std::error_code ec;
  fs::create_directories(c.results_dir(), ec);
  const fs::path junit = c.results_dir() / (day->day + ".junit.xml");
  const fs::path junit_tmp = temporary_sibling(junit);
  const std::string regex = "^" + day->day + "\\.lab\\.";
  *c.out << "running the tests of " << day->day << ", each in its own process ..." << std::endl;
  ProcessOptions options;
  options.echo = c.verbose;
  bool progress_shown = false;
  if (c.progress && !c.verbose) {
    options.on_line = [&](std::string_view line) {  // "12/40 Test #12: ..." -> "  12/40 tests done"
      const std::string_view t = trim(line);
      const std::size_t test = t.find(" Test ");
      if (test == std::string_view::npos || t.find('/') > test) return;
      *c.out << "\r  " << t.substr(0, test) << " tests done" << std::flush;
      progress_shown = true;
    };
  }
  const ProcessResult ctest = run_process({"ctest", "--test-dir", c.binary_dir.string(), "-R", regex, "-j",
                                           std::to_string(choose_jobs(c)), "--no-tests=error", "--output-junit",
                                           junit_tmp.string()},
                                          options);
  if (progress_shown) *c.out << "\r" << std::string(30, ' ') << "\r" << std::flush;
  if (!ctest.started) {
    *c.err << c.program << ": " << ctest.error << " (is CMake's ctest on PATH?)\n";
    return kExitUsage;
  }
  std::string error;
  const std::optional<std::string> xml = read_file(junit_tmp, &error);
  if (!xml) {
    *c.err << c.program << ": ctest wrote no results (" << describe_exit(ctest) << "); its last words:\n"
           << indent(shorten(ctest.output.substr(ctest.output.size() > 2000 ? ctest.output.size() - 2000 : 0), 2000), "    ");
    return kExitUsage;
  }
  ParseError parse_error;
  std::optional<std::vector<TestResult>> results = parse_ctest_junit(*xml, &parse_error);
  if (!results) {
    const fs::path kept = junit.string() + ".malformed";
    replace_file(junit_tmp, kept);
    *c.err << c.program << ": cannot read ctest's results " << c.show(kept) << ": " << parse_error.describe() << "\n";
    return kExitUsage;
  }
  replace_file(junit_tmp, junit);  // the raw results, for graders and for a closer look
  apply_ctest_console(ctest.output, *results);

  // 3. Judge and tell.
  const CheckSummary summary = summarize(*day, *results);
  report.results_file = c.show(c.results_dir() / record_name);
  *c.out << "\n" << render_check(*day, summary, report);

  record_doc.set("finished", JsonValue::string(utc_now()));
  record_doc.set("verdict", JsonValue::string(to_string(summary.verdict)));
  JsonValue totals = JsonValue::object();
  totals.set("passed", JsonValue::number(summary.passed));
  totals.set("failed", JsonValue::number(summary.failed));
  totals.set("skipped", JsonValue::number(summary.skipped));
  record_doc.set("totals", totals);
  if (!summary.skip_reason.empty()) record_doc.set("skip_reason", JsonValue::string(summary.skip_reason));
  JsonValue exercises = JsonValue::array();
  for (const ExerciseTally& e : summary.exercises) {
    JsonValue o = JsonValue::object();
    o.set("exercise", JsonValue::string(e.name));
    o.set("passed", JsonValue::number(e.passed));
    o.set("failed", JsonValue::number(e.failed));
    o.set("skipped", JsonValue::number(e.skipped));
    exercises.push_back(o);
  }
  record_doc.set("exercises", exercises);
  if (const ExerciseTally* failing = summary.first_failing()) {
    const FailureText text = first_failure(*failing->first_failure);
    JsonValue f = JsonValue::object();
    f.set("test", JsonValue::string(failing->first_failure->name));
    f.set("where", JsonValue::string(text.where));
    f.set("message", JsonValue::string(text.message));
    record_doc.set("first_failure", f);
  }
  JsonValue tests = JsonValue::array();
  for (const TestResult& r : *results) {
    JsonValue o = JsonValue::object();
    o.set("name", JsonValue::string(r.name));
    o.set("outcome", JsonValue::string(to_string(r.outcome)));
    o.set("seconds", JsonValue::number(r.seconds));
    if (!r.detail.empty()) o.set("detail", JsonValue::string(r.detail));
    tests.push_back(o);
  }
  record_doc.set("tests", tests);
  record_doc.set("junit", JsonValue::string(junit.filename().string()));
  record(c, record_name, record_doc);
  return exit_code_for(summary.verdict);
}

int cmd_bench(Context& c, const std::vector<std::string>& args) {
  if (args.size() != 1) return usage_error(c, "bench needs one day", "bench");
  const std::optional<Manifest> manifest = load_manifest(c);
  if (!manifest) return kExitUsage;
  const Day* day = resolve_day(c, *manifest, args[0]);
  if (!day) return kExitUsage;
  const CheckReportContext report = report_context(c, *manifest, *day);
  const std::string record_name = day->day + ".bench.json";
  JsonValue record_doc = JsonValue::object();
  record_doc.set("command", JsonValue::string("bench"));
  record_doc.set("day", JsonValue::string(day->day));
  record_doc.set("kernel", kernel_json(*day));

  if (!build(c, *day, {day->day + "_lab_bench", day->day + "_solution_bench"}, report, "bench")) {
    record_doc.set("finished", JsonValue::string(utc_now()));
    record_doc.set("verdict", JsonValue::string("build_failed"));
    record(c, record_name, record_doc);
    return kExitUsage;
  }

  // Run each binary once; its JSON goes to a file (stdout also carries the device banner).
  struct Side {
    const char* variant;
    const char* who;
    BenchRun run;
    bool skipped = false;
    std::string skip_line;
  };
  Side sides[2] = {{"lab", "your", {}, false, ""}, {"solution", "the solution's", {}, false, ""}};
  for (Side& side : sides) {
    const std::string target = day->day + "_" + side.variant + "_bench";
    const fs::path exe = find_executable(c, *day, target);
    const fs::path out = c.results_dir() / (day->day + "." + side.variant + ".bench.json");
    const fs::path tmp = temporary_sibling(out);
    *c.out << "running " << side.who << " benchmarks (" << target << ") ..." << std::endl;
    ProcessOptions options;
    options.echo = c.verbose;
    const ProcessResult r = run_process({exe.string(), "--benchmark_format=json", "--benchmark_out_format=json",
                                         "--benchmark_out=" + tmp.string()},
                                        options);
    for (std::string_view line : split_lines(r.output)) {
      if (starts_with(line, "SKIPPED:")) {
        side.skipped = true;
        side.skip_line = std::string(trim(line.substr(8)));
      }
    }
    if (side.skipped && r.ok()) {
      std::remove(tmp.c_str());
      continue;
    }
    if (!r.ok()) {
      std::remove(tmp.c_str());
      const std::string tail = r.output.substr(r.output.size() > 1500 ? r.output.size() - 1500 : 0);
      *c.out << "\n✗ " << target << " did not finish (" << describe_exit(r) << "). Its last output:\n"
             << indent(tail, "    ")
             << (std::string(side.variant) == "lab"
                     ? "Your kernel crashed the benchmark: run `" + c.program + " check " + day->day + "` first.\n"
                     : std::string("The solution's benchmark failed: this is a problem of the course, not of your code.\n"));
      record_doc.set("finished", JsonValue::string(utc_now()));
      record_doc.set("verdict", JsonValue::string("crashed"));
      record(c, record_name, record_doc);
      return std::string(side.variant) == "lab" ? kExitFailed : kExitUsage;
    }
    std::string error;
    const std::optional<std::string> text = read_file(tmp, &error);
    ParseError parse_error;
    std::optional<BenchRun> run = text ? parse_benchmark_json(*text, &parse_error) : std::nullopt;
    if (!run) {
      const fs::path kept = out.string() + ".malformed";
      if (text) replace_file(tmp, kept);
      *c.err << c.program << ": cannot read the benchmark results "
             << (text ? c.show(kept) + ": " + parse_error.describe() : error) << "\n";
      return kExitUsage;
    }
    replace_file(tmp, out);
    side.run = std::move(*run);
  }

  *c.out << "\nDay " << day->number() << " — " << day->title << ": benchmarks\n";
  if (sides[0].skipped || sides[1].skipped) {
    const std::string why = sides[0].skipped ? sides[0].skip_line : sides[1].skip_line;
    *c.out << "No GPU here: the benchmarks were SKIPPED (" << why << ")\n"
           << "Both binaries compiled. Time them on a machine with a CUDA GPU: there, `cmake --preset default &&\n"
           << "cmake --build --preset default`, then `build/default/course bench " << day->day << "`.\n";
    record_doc.set("finished", JsonValue::string(utc_now()));
    record_doc.set("verdict", JsonValue::string("skipped"));
    record_doc.set("skip_reason", JsonValue::string(why));
    record(c, record_name, record_doc);
    *c.out << "results: " << c.show(c.results_dir() / record_name) << "\n";
    return kExitSkipped;
  }
  const BenchRun& yours = sides[0].run;
  const BenchRun& solution = sides[1].run;
  if (!yours.device.empty()) *c.out << "device: " << yours.device << "\n";
  if (!std::isnan(yours.copy_ceiling_gbs))
    *c.out << "copy ceiling (measured): " << format_fixed(yours.copy_ceiling_gbs, 0) << " GB/s; %copy is a share of it\n";
  *c.out << "\n" << render_bench_table(yours, solution) << "\n";
  const int errors = count_errors(yours);
  if (errors > 0) {
    *c.out << errors << " of your benchmarks report an error instead of a time: an incorrect kernel is never timed.\n"
           << "Fix it with `" << c.program << " check " << day->day << "` first.\n";
  } else {
    for (const BenchRow& r : yours.rows) {
      const BenchRow* s = solution.find(r.name);
      if (!r.key || !s) continue;
      const double ratio = speed_ratio(r, *s);
      if (!std::isnan(ratio))
        *c.out << "Headline (" << r.name << "): your kernel runs at " << format_fixed(100.0 * ratio, 0)
               << "% of the solution's speed.\n";
    }
  }
  *c.out << "results: " << c.show(c.results_dir() / record_name) << "\n";

  record_doc.set("finished", JsonValue::string(utc_now()));
  record_doc.set("verdict", JsonValue::string(errors > 0 ? "errors" : "ran"));
  record_doc.set("lab", to_json_value(yours));
  record_doc.set("solution", to_json_value(solution));
  record(c, record_name, record_doc);
  return errors > 0 ? kExitFailed : kExitPassed;
}

int cmd_status(Context& c, const std::vector<std::string>& args) {
  if (!args.empty()) return usage_error(c, "status takes no arguments", "status");
  const std::optional<Manifest> manifest = load_manifest(c);
  if (!manifest) return kExitUsage;
  std::vector<StatusLine> lines;
  std::vector<std::string> problems;
  for (const Day& day : manifest->days) {
    StatusLine line{&day, {}};
    DayFacts& f = line.facts;
    f.kernel_untouched = kernel_untouched(c, day);
    std::string problem;
    if (const std::optional<JsonValue> check = read_results(c.results_dir() / (day.day + ".check.json"), &problem)) {
      f.check_verdict = check->string_or("verdict", "no_tests");
      f.check_time = check->string_or("finished", "");
      if (const JsonValue* t = check->get("totals")) {
        std::vector<std::string> parts;
        for (const char* k : {"passed", "failed", "skipped"}) {
          const int n = static_cast<int>(t->number_or(k, 0));
          if (n > 0) parts.push_back(std::to_string(n) + " " + k);
        }
        f.check_counts = join(parts, ", ");
      }
      const JsonValue* kernel = check->get("kernel");
      const std::string recorded = kernel ? kernel->string_or("fingerprint", "") : "";
      const std::optional<std::string> now = kernel_fingerprint(day);
      f.kernel_changed_since_check = !recorded.empty() && now && *now != recorded;
    } else if (!problem.empty()) {
      problems.push_back(problem + ": treated as never checked");
    }
    problem.clear();
    if (const std::optional<JsonValue> bench = read_results(c.results_dir() / (day.day + ".bench.json"), &problem)) {
      const std::string verdict = bench->string_or("verdict", "");
      if (verdict == "skipped") f.bench_note = "no GPU";
      else if (verdict == "build_failed") f.bench_note = "does not compile";
      else if (verdict == "crashed") f.bench_note = "crashed";
      else if (verdict == "errors") f.bench_note = "incorrect, not timed";
      else if (verdict == "ran") {
        f.bench_note = "ran";
        std::string why;
        const JsonValue* lab = bench->get("lab");
        const JsonValue* sol = bench->get("solution");
        const std::optional<BenchRun> yours = lab ? bench_run_from_json(*lab, &why) : std::nullopt;
        const std::optional<BenchRun> solution = sol ? bench_run_from_json(*sol, &why) : std::nullopt;
        if (yours && solution) {
          for (const BenchRow& r : yours->rows) {
            const BenchRow* s = solution->find(r.name);
            const double ratio = r.key && s ? speed_ratio(r, *s) : kNoValue;
            if (!std::isnan(ratio)) f.bench_note = format_fixed(100.0 * ratio, 0) + "% of solution";
          }
        }
      }
    } else if (!problem.empty()) {
      problems.push_back(problem + ": treated as never benchmarked");
    }
    lines.push_back(line);
  }
  *c.out << render_status(lines, c.program);
  for (const std::string& p : problems) *c.err << c.program << ": " << p << "\n";
  return kExitPassed;
}

int cmd_help(Context& c, const std::vector<std::string>& args) {
  std::ostream& o = *c.out;
  if (args.size() == 1) {
    for (const Command& cmd : commands()) {
      if (args[0] == cmd.name) {
        o << "usage: " << c.program << " " << cmd.name << (cmd.arguments[0] ? " " : "") << cmd.arguments << "\n  "
          << cmd.summary << "\n";
        return kExitUsage;
      }
    }
  }
  o << "course: the CUDA course's command-line tool\n\n"
    << "usage: " << c.program << " [--build-dir DIR] [--jobs N] [--verbose] <command> [<day>]\n\ncommands:\n";
  TextTable table({"", ""});
  for (const Command& cmd : commands())
    table.add_row({std::string(cmd.name) + (cmd.arguments[0] ? " " : "") + cmd.arguments, cmd.summary});
  const std::string rendered = table.render("  ");
  o << rendered.substr(rendered.find('\n', rendered.find('\n') + 1) + 1);  // without header and rule
  o << "\n<day> is d02, 02 or 2.\n"
    << "options:\n"
    << "  --build-dir DIR  the build to use (default: " << c.binary_dir.string() << ")\n"
    << "  --jobs N         tests run in parallel by `check` (default: up to 8)\n"
    << "  --verbose        show the build's, ctest's and the benchmarks' own output\n"
    << "exit codes: 0 all ran and passed, 1 something failed, 2 usage or build error,\n"
    << "            3 everything was skipped (no GPU)\n"
    << "results are kept in <build>/course-results/; see docs/course-tool.md\n";
  return kExitUsage;
}

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"list", "", "the days, their exercises, lessons and lab folders", cmd_list},
      {"check", "<day>", "build your kernels for <day>, run its tests, say what to fix next", cmd_check},
      {"bench", "<day>", "time your kernels against the solution, side by side", cmd_bench},
      {"status", "", "every day: not started / failing / passing / compiled (no GPU)", cmd_status},
      {"help", "[<command>]", "this text", cmd_help},
  };
  return table;
}

int run_course_tool(const std::vector<std::string>& argv, const fs::path& default_source,
                    const fs::path& default_binary, std::ostream& out, std::ostream& err) {
  Context c;
  c.out = &out;
  c.err = &err;
  c.program = argv.empty() ? "course" : argv[0];
  c.source_dir = default_source;
  c.binary_dir = default_binary;
  if (const char* env = std::getenv("COURSE_BUILD_DIR"); env && *env) c.binary_dir = env;

  std::vector<std::string> positional;
  bool build_dir_given = false;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const auto value = [&](const std::string& option, std::string* v) {
      if (a == option) {
        if (i + 1 >= argv.size()) return false;
        *v = argv[++i];
        return true;
      }
      if (starts_with(a, option + "=")) {
        *v = a.substr(option.size() + 1);
        return true;
      }
      return false;
    };
    std::string v;
    if (value("--build-dir", &v) || value("-B", &v)) {
      c.binary_dir = v;
      build_dir_given = true;
    } else if (value("--jobs", &v) || value("-j", &v)) {
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 1024)
        return usage_error(c, "--jobs needs a number from 1 to 1024, not '" + v + "'", nullptr);
      c.jobs = static_cast<int>(n);
    } else if (a == "--verbose" || a == "-v") {
      c.verbose = true;
    } else if (a == "--help" || a == "-h") {
      positional.insert(positional.begin(), "help");
    } else if (a == "--build-dir" || a == "-B" || a == "--jobs" || a == "-j") {
      return usage_error(c, a + " needs a value", nullptr);
    } else if (a.size() > 1 && a[0] == '-') {
      return usage_error(c, "unknown option " + a, nullptr);
    } else {
      positional.push_back(a);
    }
  }
  std::error_code ec;
  c.binary_dir = fs::absolute(c.binary_dir, ec).lexically_normal();
  if (c.binary_dir.has_filename() == false) c.binary_dir = c.binary_dir.parent_path();
  // Another build may come from another tree: ask its cache.
  if (build_dir_given || std::getenv("COURSE_BUILD_DIR"))
    if (const std::optional<fs::path> source = source_dir_of_build(c.binary_dir)) c.source_dir = *source;

  c.progress = &out == &std::cout && ::isatty(STDOUT_FILENO);
  if (positional.empty()) return cmd_help(c, {});
  const std::string name = positional[0];
  const std::vector<std::string> args(positional.begin() + 1, positional.end());
  for (const Command& cmd : commands())
    if (name == cmd.name) return cmd.run(c, args);
  err << c.program << ": unknown command '" << name << "'\n\n";
  cmd_help(c, {});
  return kExitUsage;
}

}  // namespace course::tool
