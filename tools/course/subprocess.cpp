#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace course::tool {

namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ProcessResult result;
  if (argv.empty()) {
    result.error = "no program given";
    return result;
  }
  // `out` carries the program's output; `status` stays open until exec succeeds (it is
  // close-on-exec), so a read that returns bytes on it means exec failed, with errno.
  int out[2] = {-1, -1};
  int status[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(status, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    close_fd(out[0]);
    close_fd(out[1]);
    return result;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    close_fd(out[0]);
    close_fd(out[1]);
    close_fd(status[0]);
    close_fd(status[1]);
    return result;
  }
  if (pid == 0) {  // the child: only async-signal-safe calls from here to exec
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    int err = 0;
    if (!options.working_dir.empty() && ::chdir(options.working_dir.c_str()) != 0) {
      err = errno;
    } else {
      ::execvp(args[0], args.data());
      err = errno;
    }
    ssize_t ignored = ::write(status[1], &err, sizeof err);
    (void)ignored;
    ::_exit(127);
  }
  close_fd(out[1]);
  close_fd(status[1]);

  int exec_errno = 0;
  const ssize_t got = ::read(status[0], &exec_errno, sizeof exec_errno);
  close_fd(status[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    int ignored;
    ::waitpid(pid, &ignored, 0);
    close_fd(out[0]);
    result.error = "could not run " + argv[0] + ": " + std::strerror(exec_errno);
    return result;
  }
  result.started = true;

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  bool term_sent = false;
  auto term_time = start;
  char buf[8192];
  while (out[0] >= 0) {
    int wait_ms = -1;
    if (options.timeout_s > 0) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (!term_sent && elapsed >= options.timeout_s) {
        result.timed_out = true;
        ::kill(pid, SIGTERM);
        term_sent = true;
        term_time = Clock::now();
      }
      if (term_sent) {
        const double since = std::chrono::duration<double>(Clock::now() - term_time).count();
        if (since >= 5.0) ::kill(pid, SIGKILL);
        if (since >= 10.0) {  // something it started still holds the output open: stop reading
          close_fd(out[0]);
          break;
        }
        wait_ms = 500;
      } else {
        wait_ms = static_cast<int>((options.timeout_s - elapsed) * 1000.0) + 1;
      }
    }
    pollfd p{out[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // end of output: the program (and everything it started) closed the pipe
      close_fd(out[0]);
      break;
    }
    const std::size_t before = result.output.size();
    result.output.append(buf, static_cast<std::size_t>(n));
    if (options.on_line) {  // hand over the lines completed by this read
      std::size_t start = result.output.rfind('\n', before == 0 ? 0 : before - 1);
      start = start == std::string::npos || before == 0 ? 0 : start + 1;
      for (std::size_t end; (end = result.output.find('\n', start)) != std::string::npos; start = end + 1)
        if (end >= before) options.on_line(std::string_view(result.output).substr(start, end - start));
    }
    if (options.echo) {
      std::fwrite(buf, 1, static_cast<std::size_t>(n), stdout);
      std::fflush(stdout);
    }
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(wstatus)) result.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) result.signal = WTERMSIG(wstatus);
  return result;
}

std::string describe_exit(const ProcessResult& result) {
  if (!result.started) return result.error;
  if (result.timed_out) return "timed out and was stopped";
  if (result.signal) return "killed by signal " + std::to_string(result.signal) + " (" + ::strsignal(result.signal) + ")";
  return "exit code " + std::to_string(result.exit_code);
}

}  // namespace course::tool
