#include "ctest_results.h"

#include <cstdlib>
#include <map>

#include "text.h"
#include "xml.h"

namespace course::tool {

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::Passed: return "passed";
    case Outcome::Failed: return "failed";
    case Outcome::Crashed: return "crashed";
    case Outcome::Skipped: return "skipped";
    case Outcome::NotRun: return "not run";
  }
  return "?";
}

namespace {

// A GoogleTest assertion failure header: "<file>:<line>: Failure" or "unknown file: Failure".
bool is_failure_header(std::string_view line) { return ends_with(trim(line), ": Failure"); }

bool gtest_reported_failure(const std::string& output) {
  if (output.find("[  FAILED  ]") != std::string::npos) return true;
  for (std::string_view line : split_lines(output))
    if (is_failure_header(line)) return true;
  return false;
}

void collect_testcases(const XmlElement& e, std::vector<const XmlElement*>& out) {
  for (const XmlElement& c : e.children) {
    if (c.name == "testcase") out.push_back(&c);
    else collect_testcases(c, out);  // <testsuites><testsuite>... also accepted
  }
}

TestResult classify(const XmlElement& tc) {
  TestResult r;
  r.name = tc.attribute_or("name", "");
  r.seconds = std::strtod(tc.attribute_or("time", "0").c_str(), nullptr);
  if (const XmlElement* out = tc.child("system-out")) r.output = out->text;
  const std::string status = tc.attribute_or("status", "");
  const XmlElement* skipped = tc.child("skipped");
  const XmlElement* failure = tc.child("failure");
  if (!failure) failure = tc.child("error");
  if (status == "run" || (status.empty() && !skipped && !failure)) {
    r.outcome = Outcome::Passed;
  } else if (status == "fail" || (status.empty() && failure)) {
    r.outcome = gtest_reported_failure(r.output) ? Outcome::Failed : Outcome::Crashed;
    if (failure) r.detail = failure->attribute_or("message", "");
  } else if (status == "disabled") {
    r.outcome = Outcome::NotRun;
    r.detail = "Disabled";
  } else {  // "notrun", or no status with <skipped>
    const std::string why = skipped ? skipped->attribute_or("message", "") : "";
    // ctest's own words when the test skipped itself; anything else is a test that never started.
    if (starts_with(why, "SKIP_REGULAR_EXPRESSION_MATCHED") || starts_with(why, "SKIP_RETURN_CODE")) {
      r.outcome = Outcome::Skipped;
    } else {
      r.outcome = Outcome::NotRun;
      r.detail = why.empty() ? "Not Run" : why;
    }
  }
  return r;
}

std::string basename_of(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string last_lines(const std::string& output, std::size_t n) {
  std::vector<std::string_view> lines;
  for (std::string_view line : split_lines(output))
    if (!trim(line).empty()) lines.push_back(line);
  const std::size_t from = lines.size() > n ? lines.size() - n : 0;
  std::string text;
  for (std::size_t i = from; i < lines.size(); ++i) {
    if (!text.empty()) text += '\n';
    text += std::string(lines[i]);
  }
  return text;
}

}  // namespace

std::optional<std::vector<TestResult>> parse_ctest_junit(std::string_view xml, ParseError* error) {
  std::optional<XmlElement> root = parse_xml(xml, error);
  if (!root) return std::nullopt;
  if (root->name != "testsuite" && root->name != "testsuites") {
    if (error) {
      *error = ParseError{};
      error->message = "the root element is <" + root->name + ">, not a JUnit <testsuite>";
      error->line = error->column = 1;
    }
    return std::nullopt;
  }
  std::vector<const XmlElement*> cases;
  collect_testcases(*root, cases);
  std::vector<TestResult> results;
  results.reserve(cases.size());
  for (const XmlElement* tc : cases) results.push_back(classify(*tc));
  return results;
}

void apply_ctest_console(std::string_view console, std::vector<TestResult>& results) {
  std::map<std::string, std::string> name_of_number;  // "12" -> full test name
  std::map<std::string, std::string> status_of_name;
  for (std::string_view raw : split_lines(console)) {
    const std::string_view line = trim(raw);
    if (starts_with(line, "Start ")) {
      // "Start 12: d01.lab.Timing.EventsMeasureTheKernel"
      const std::size_t colon = line.find(": ");
      if (colon != std::string_view::npos)
        name_of_number[std::string(trim(line.substr(6, colon - 6)))] = std::string(line.substr(colon + 2));
      continue;
    }
    // "12/40 Test #12: d01.lab.Timing.Events... .....***Timeout  60.02 sec"
    const std::size_t hash = line.find("Test #");
    if (hash == std::string_view::npos || !ends_with(line, " sec")) continue;
    const std::size_t colon = line.find(": ", hash);
    if (colon == std::string_view::npos) continue;
    const std::string number(line.substr(hash + 6, colon - hash - 6));
    // Only results other than "Passed" matter here, and ctest marks those with "***".
    std::string_view rest = line.substr(colon + 2);
    const std::size_t stars = rest.find("***");
    if (stars == std::string_view::npos) continue;
    std::string_view status = rest.substr(stars + 3);
    status = status.substr(0, status.rfind(" sec"));            // drop " sec"
    status = trim(status.substr(0, status.find_last_of(' ')));  // drop the seconds
    std::string name = name_of_number.count(number) ? name_of_number[number] : std::string();
    if (!name.empty()) status_of_name[name] = std::string(status);
  }
  for (TestResult& r : results) {
    if (r.outcome == Outcome::Passed || r.outcome == Outcome::Skipped) continue;
    auto it = status_of_name.find(r.name);
    if (it != status_of_name.end() && !it->second.empty()) r.detail = it->second;
  }
}

FailureText first_failure(const TestResult& result, std::size_t max_lines) {
  FailureText text;
  const std::vector<std::string_view> lines = split_lines(result.output);
  std::size_t header = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (is_failure_header(lines[i])) {
      header = i;
      break;
    }
  }
  if (result.outcome == Outcome::Failed && header < lines.size()) {
    const std::string_view h = trim(lines[header]);
    const std::string_view location = h.substr(0, h.size() - std::string_view(": Failure").size());
    if (location != "unknown file") text.where = basename_of(location);
    std::size_t taken = 0;
    for (std::size_t i = header + 1; i < lines.size(); ++i) {
      const std::string_view line = lines[i];
      if (starts_with(line, "[  FAILED  ]") || starts_with(line, "[ RUN      ]") || is_failure_header(line)) break;
      if (trim(line) == "Failed" && taken == 0) continue;  // ADD_FAILURE()'s header says nothing
      if (taken == max_lines) {
        text.message += "\n...";
        break;
      }
      if (!text.message.empty()) text.message += '\n';
      text.message += std::string(line);
      ++taken;
    }
    return text;
  }
  // A crash, a timeout or a test that could not start: say so, then the last words it printed.
  const std::string& d = result.detail;
  if (result.outcome == Outcome::NotRun) {
    text.message = "the test did not run (" + (d.empty() ? std::string("not run") : d) + ")";
  } else if (d == "Timeout") {
    text.message = "timed out after " + format_fixed(result.seconds, 0) +
                   " s and was killed: look for a loop that never ends or a kernel that never returns";
  } else if (starts_with(d, "Exception") || starts_with(d, "Child aborted")) {
    text.message = "the test process crashed (" + d + ")";
  } else {
    text.message = "the test process failed outside any test assertion" + (d.empty() ? std::string() : " (" + d + ")");
  }
  const std::string tail = last_lines(result.output, 4);
  if (!tail.empty()) text.message += "; its last output:\n" + tail;
  return text;
}

std::string skip_reason(const std::string& output) {
  const std::vector<std::string_view> lines = split_lines(output);
  for (std::size_t i = 0; i + 1 < lines.size(); ++i)
    if (ends_with(trim(lines[i]), ": Skipped")) return std::string(trim(lines[i + 1]));
  return "";
}

}  // namespace course::tool
