// Small text helpers of the course tool: trimming, splitting, number formatting and plain
// text tables that line up (UTF-8 aware, so the marks ✓ ✗ – count as one column).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace course::tool {

std::string_view trim(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
// Lines without their '\n' (and a trailing '\r'); a final newline does not add an empty line.
std::vector<std::string_view> split_lines(std::string_view text);
std::vector<std::string> split(std::string_view text, char separator);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
std::string to_lower(std::string_view s);

// `s` quoted for a POSIX shell when it needs quoting: ^d01\.lab\. -> '^d01\.lab\.'
std::string shell_quote(std::string_view s);
// `s` with the characters special in a (ctest, ECMAScript or POSIX extended) regex escaped.
std::string regex_escape(std::string_view s);

// Fixed-point with `decimals` digits ("12.5"); "nan"/"inf" for non-finite values.
std::string format_fixed(double value, int decimals);
// A figure shown with three significant digits or more: 0.0123, 1.23, 12.3, 123, 4567.
std::string format_figure(double value);

// Columns the terminal shows for `s` (code points; no wide characters are used).
std::size_t display_width(std::string_view s);
// Cuts `s` to at most `width` columns, ending with "..." when cut.
std::string shorten(std::string_view s, std::size_t width);
// Indents every line of `text` by `prefix`.
std::string indent(std::string_view text, std::string_view prefix);

// A table of text cells; columns are padded to their widest cell. Columns marked numeric
// are right-aligned.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header, std::vector<bool> numeric = {});
  void add_row(std::vector<std::string> cells);
  std::size_t rows() const { return rows_.size(); }
  // Each line starts with `prefix`; a line of dashes separates the header from the rows.
  std::string render(std::string_view prefix = "") const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> numeric_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace course::tool
