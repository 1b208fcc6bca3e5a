// The days of the course, as the build knows them: <build>/course_manifest.tsv, written by
// course_write_manifest() in cmake/course.cmake at configure time, one line per lab:
//   day <TAB> name <TAB> title <TAB> exercises (comma-separated test suites) <TAB> student source
// e.g. d01  d01_first_kernels  Programming model, ...  VectorAdd,Saxpy,...  /src/labs/d01_first_kernels/kernel.cu
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace course::tool {

struct Day {
  std::string day;                     // "d01"
  std::string name;                    // "d01_first_kernels": the lab, solution and lesson name
  std::string title;                   // "Programming model, first kernels, honest timing"
  std::vector<std::string> exercises;  // GoogleTest suites in the order of the lab's README
  std::string lab_source;              // the student's kernel.cu this build compiles

  int number() const;                  // 1 for "d01"
  std::string lab_dir() const;         // "labs/d01_first_kernels" (relative to the source tree)
  std::string lesson() const;          // "lessons/d01_first_kernels.md"
  std::string starter() const;         // "labs/d01_first_kernels/kernel.cu"
  // "d01.lab." / "d01.solution.": the ctest name prefix of one variant's tests
  std::string test_prefix(std::string_view variant = "lab") const;
};

struct Manifest {
  std::vector<Day> days;
  const Day* find(std::string_view day) const;  // by "dNN"
  std::string day_list() const;                 // "d01, d02, d03"
};

// Parses the manifest's text; on a malformed line returns nullopt and sets `error` to
// "line N: ..." .
std::optional<Manifest> parse_manifest(std::string_view text, std::string* error);

// A day as the student types it: "d02", "D2", "2", "02", "day2", or a lab name
// "d02_coalescing" -> "d02". nullopt for anything else.
std::optional<std::string> parse_day(std::string_view arg);

}  // namespace course::tool
