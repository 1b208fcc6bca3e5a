// The course tool: `course list | check <day> | bench <day> | status | help`.
// See docs/course-tool.md; the commands live in commands.cpp.
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv, argv + argc);
  return course::tool::run_course_tool(args, COURSE_SOURCE_DIR, COURSE_BINARY_DIR, std::cout, std::cerr);
}
