#include "text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace course::tool {

std::string_view trim(std::string_view s) {
  const char* space = " \t\r\n";
  const std::size_t first = s.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  const std::size_t last = s.find_last_not_of(space);
  return s.substr(first, last - first + 1);
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  return out;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string shell_quote(std::string_view s) {
  if (!s.empty() && s.find_first_of(" \t\n'\"\\$`|&;<>()*?[]{}^!#~") == std::string_view::npos) return std::string(s);
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string regex_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (std::string_view(".[]()*+?^$|\\{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string format_fixed(double value, int decimals) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string format_figure(double value) {
  const double a = std::fabs(value);
  if (!std::isfinite(value) || a >= 100.0 || a == 0.0) return format_fixed(value, 0);
  if (a >= 10.0) return format_fixed(value, 1);
  if (a >= 1.0) return format_fixed(value, 2);
  const int decimals = std::min(9, 2 - static_cast<int>(std::floor(std::log10(a))));
  return format_fixed(value, decimals);
}

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (const char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;  // count lead bytes only
  return n;
}

std::string shorten(std::string_view s, std::size_t width) {
  if (display_width(s) <= width) return std::string(s);
  std::string out;
  std::size_t columns = 0;
  const std::size_t keep = width > 3 ? width - 3 : 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const bool lead = (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
    if (lead && columns == keep) break;
    if (lead) ++columns;
    out += s[i];
  }
  return out + "...";
}

std::string indent(std::string_view text, std::string_view prefix) {
  std::string out;
  for (std::string_view line : split_lines(text)) {
    if (!trim(line).empty()) out += prefix;
    out += line;
    out += '\n';
  }
  return out;
}

TextTable::TextTable(std::vector<std::string> header, std::vector<bool> numeric)
    : header_(std::move(header)), numeric_(std::move(numeric)) {
  numeric_.resize(header_.size(), false);
}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::render(std::string_view prefix) const {
  std::vector<std::size_t> width(header_.size(), 0);
  for (std::size_t c = 0; c < header_.size(); ++c) {
    width[c] = display_width(header_[c]);
    for (const auto& row : rows_) width[c] = std::max(width[c], display_width(row[c]));
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string out(prefix);
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::size_t pad = width[c] - display_width(cells[c]);
      const bool last = c + 1 == cells.size();
      if (numeric_[c]) out.append(pad, ' ');
      out += cells[c];
      if (!numeric_[c] && !last) out.append(pad, ' ');
      if (!last) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + '\n';
  };
  std::string out = line(header_);
  std::size_t total = 0;
  for (std::size_t c = 0; c < width.size(); ++c) total += width[c] + (c + 1 < width.size() ? 2 : 0);
  out += std::string(prefix) + std::string(total, '-') + '\n';
  for (const auto& row : rows_) out += line(row);
  return out;
}

}  // namespace course::tool
