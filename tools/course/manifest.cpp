#include "manifest.h"

#include "text.h"

namespace course::tool {

int Day::number() const { return day.size() == 3 ? std::stoi(day.substr(1)) : 0; }
std::string Day::lab_dir() const { return "labs/" + name; }
std::string Day::lesson() const { return "lessons/" + name + ".md"; }
std::string Day::starter() const { return lab_dir() + "/kernel.cu"; }
std::string Day::test_prefix(std::string_view variant) const { return day + "." + std::string(variant) + "."; }

const Day* Manifest::find(std::string_view day) const {
  for (const Day& d : days)
    if (d.day == day) return &d;
  return nullptr;
}

std::string Manifest::day_list() const {
  std::vector<std::string> names;
  for (const Day& d : days) names.push_back(d.day);
  return join(names, ", ");
}

std::optional<Manifest> parse_manifest(std::string_view text, std::string* error) {
  Manifest manifest;
  int line_number = 0;
  for (std::string_view line : split_lines(text)) {
    ++line_number;
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    const std::vector<std::string> fields = split(line, '\t');
    const auto bad = [&](const std::string& why) {
      if (error) *error = "line " + std::to_string(line_number) + ": " + why;
      return std::nullopt;
    };
    if (fields.size() < 5) return bad("expected 5 tab-separated fields (day, name, title, exercises, source), found " +
                                      std::to_string(fields.size()));
    Day d;
    d.day = fields[0];
    d.name = fields[1];
    d.title = fields[2];
    d.lab_source = fields[4];
    for (const std::string& e : split(fields[3], ','))
      if (!trim(e).empty()) d.exercises.emplace_back(trim(e));
    const std::optional<std::string> parsed = parse_day(d.day);
    if (!parsed || *parsed != d.day) return bad("'" + d.day + "' is not a day of the form dNN");
    if (!starts_with(d.name, d.day + "_")) return bad("the lab name '" + d.name + "' does not start with " + d.day + "_");
    if (manifest.find(d.day)) return bad(d.day + " is declared twice");
    manifest.days.push_back(std::move(d));
  }
  return manifest;
}

std::optional<std::string> parse_day(std::string_view arg) {
  std::string s = to_lower(trim(arg));
  if (starts_with(s, "day")) s = s.substr(3);
  else if (starts_with(s, "d")) s = s.substr(1);
  // A lab name: "02_coalescing" after the 'd'.
  const std::size_t underscore = s.find('_');
  if (underscore != std::string::npos && arg.size() > 0 && (arg[0] == 'd' || arg[0] == 'D')) s = s.substr(0, underscore);
  if (s.empty() || s.size() > 2) return std::nullopt;
  for (const char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  const int n = std::stoi(s);
  std::string out = "d";
  if (n < 10) out += '0';
  return out + std::to_string(n);
}

}  // namespace course::tool
