// Running another program (cmake, ctest, a benchmark) and collecting what it prints.
//
//   ProcessResult r = run_process({"cmake", "--build", bin, "--target", "d01_lab_tests"});
//   if (!r.ok()) std::cerr << describe_exit(r) << "\n" << r.output;
//
// The program's stdout and stderr are captured together, in the order it wrote them. With
// `echo` they are also copied to our stdout as they come (for long builds). The child stays
// in our process group, so Ctrl-C stops it as well as the tool.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace course::tool {

struct ProcessOptions {
  std::string working_dir;   // "" = ours
  double timeout_s = 0.0;    // 0 = no limit; past it the program gets SIGTERM, then SIGKILL
  bool echo = false;
  // Called with each complete line of output as it arrives (for progress reports).
  std::function<void(std::string_view line)> on_line;
};

struct ProcessResult {
  bool started = false;      // false: the program could not be run (see `error`)
  int exit_code = -1;        // when it exited normally
  int signal = 0;            // when a signal ended it
  bool timed_out = false;
  std::string output;        // stdout and stderr, interleaved
  std::string error;         // why it could not be started
  bool ok() const { return started && signal == 0 && !timed_out && exit_code == 0; }
};

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// "exit code 2", "killed by signal 11 (Segmentation fault)", "timed out", "could not start: ..."
std::string describe_exit(const ProcessResult& result);

}  // namespace course::tool
