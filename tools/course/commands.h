// The course tool's commands. Each is one function `int cmd_x(Context&, args)` listed in
// commands(); a new command (grading, leaderboards) is one more function and one more entry.
// Shared steps (loading the manifest, resolving a day, building targets, running ctest,
// recording results) are helpers below, so commands read as their story.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "manifest.h"

namespace course::tool {

namespace fs = std::filesystem;

struct Context {
  fs::path source_dir;      // the course's source tree
  fs::path binary_dir;      // the configured build
  int jobs = 0;             // tests run in parallel by ctest (0 = choose)
  bool verbose = false;     // echo the build's and ctest's output as it comes
  bool progress = false;    // stdout is a terminal: show a one-line progress count
  std::string program = "course";  // how the tool was invoked, for the hints it prints
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;

  fs::path manifest_file() const { return binary_dir / "course_manifest.tsv"; }
  fs::path results_dir() const { return binary_dir / "course-results"; }
  // A path as the student should see it: relative to the source tree when inside it.
  std::string show(const fs::path& path) const;
};

using CommandFunction = int (*)(Context& context, const std::vector<std::string>& args);

struct Command {
  const char* name;
  const char* arguments;  // "<day>"
  const char* summary;
  CommandFunction run;
};

// Every command, in the order `course help` lists them.
const std::vector<Command>& commands();

int cmd_list(Context& context, const std::vector<std::string>& args);
int cmd_check(Context& context, const std::vector<std::string>& args);
int cmd_bench(Context& context, const std::vector<std::string>& args);
int cmd_status(Context& context, const std::vector<std::string>& args);
int cmd_help(Context& context, const std::vector<std::string>& args);

// The whole tool: parses the global options (--build-dir, --jobs, --verbose), finds the
// command and runs it. `default_source` and `default_binary` are the tree and the build the
// tool was compiled in.
int run_course_tool(const std::vector<std::string>& argv, const fs::path& default_source,
                    const fs::path& default_binary, std::ostream& out, std::ostream& err);

// ---- shared helpers (also used by tests)

// The manifest of the build, or nullopt after telling the student how to configure.
std::optional<Manifest> load_manifest(Context& context);

// The day named by `arg` in `manifest`, or nullptr after listing the valid days.
const Day* resolve_day(Context& context, const Manifest& manifest, const std::string& arg);

// The source tree a build was configured from (CMAKE_HOME_DIRECTORY in its CMakeCache.txt).
std::optional<fs::path> source_dir_of_build(const fs::path& binary_dir);

}  // namespace course::tool
