// JSON output shared by the test and benchmark programs (the runner's event stream, the
// benchmark file written when there is no GPU).
#pragma once

#include <string>

namespace course {

// `s` as a JSON string literal, in quotes: quotes, backslashes and control characters escaped
// (bytes of 0x80 and above pass through, so UTF-8 stays UTF-8).
std::string json_string(const std::string& s);

}  // namespace course
