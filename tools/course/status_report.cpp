#include "status_report.h"

#include "text.h"

namespace course::tool {

const char* to_string(DayState state) {
  switch (state) {
    case DayState::NotStarted: return "not started";
    case DayState::Failing: return "failing";
    case DayState::Passing: return "passing";
    case DayState::CompiledNoGpu: return "compiled (no GPU)";
  }
  return "?";
}

namespace {
// "2026-11-22 18:49 UTC" from "2026-11-22T18:49:42Z".
std::string readable_time(const std::string& iso) {
  if (iso.size() < 16 || iso[10] != 'T') return iso;
  return iso.substr(0, 10) + " " + iso.substr(11, 5) + " UTC";
}
}  // namespace

DayState decide_state(const DayFacts& facts) {
  if (!facts.check_verdict) return DayState::NotStarted;
  const std::string& v = *facts.check_verdict;
  if (facts.kernel_untouched.value_or(false) && v != "passed") return DayState::NotStarted;
  if (v == "passed") return DayState::Passing;
  if (v == "skipped") return DayState::CompiledNoGpu;
  return DayState::Failing;  // failed, build_failed, no_tests
}

std::string render_status(const std::vector<StatusLine>& lines, const std::string& program) {
  TextTable table({"day", "title", "state", "last check", "bench"});
  std::vector<std::string> notes;
  bool any_checked = false;
  bool any_no_gpu = false;
  for (const StatusLine& line : lines) {
    const DayFacts& f = line.facts;
    const DayState state = decide_state(f);
    std::string check = "never";
    if (f.check_verdict) {
      any_checked = true;
      check = f.check_time.empty() ? *f.check_verdict : readable_time(f.check_time);
      if (*f.check_verdict == "build_failed") check += ", does not compile";
      else if (!f.check_counts.empty()) check += ", " + f.check_counts;
    }
    any_no_gpu = any_no_gpu || state == DayState::CompiledNoGpu;
    table.add_row({line.day->day, shorten(line.day->title, 50), to_string(state), check,
                   f.bench_note.empty() ? "-" : f.bench_note});
    if (f.check_verdict && state == DayState::NotStarted)
      notes.push_back(line.day->day + ": " + line.day->starter() + " is still the starter (no change since checkout)");
    else if (f.check_verdict && f.kernel_changed_since_check)
      notes.push_back(line.day->day + ": " + line.day->starter() + " changed since the last check: `" + program +
                      " check " + line.day->day + "`");
    else if (!f.check_verdict && f.kernel_untouched.has_value() && !*f.kernel_untouched)
      notes.push_back(line.day->day + ": you edited " + line.day->starter() + " but have not checked it yet: `" +
                      program + " check " + line.day->day + "`");
  }
  std::string out = table.render();
  if (!notes.empty()) out += "\n" + join(notes, "\n") + "\n";
  if (!any_checked) out += "\nNothing checked yet: start with `" + program + " list`, then `" + program + " check d01`.\n";
  if (any_no_gpu)
    out += "\ncompiled (no GPU): the code builds, but its tests were skipped on a machine without a GPU;\n"
           "they count as not yet passed.\n";
  return out;
}

}  // namespace course::tool
