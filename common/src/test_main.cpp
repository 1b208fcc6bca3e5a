// main() of every lab's tests: names the GPU (or says in words why GPU tests will be skipped)
// and the seed of this run's random inputs, then runs the tests.
//
// Run by the course's test runner (tools/course/runner.py), it also reports each test on a file
// descriptor as one JSON object per line (COURSE_EVENTS_FD=<fd>):
//   {"event":"start","test":"Suite.Case"}
//   {"event":"end","test":"Suite.Case","outcome":"passed|failed|skipped","ms":12,
//    "failures":[{"file":"...","line":42,"message":"..."}],"skip":"...","properties":{...},
//    "replay":"..."}
//   {"event":"context_lost","test":"Suite.Case","error":"cudaErrorIllegalAddress (...)"}
// After a test that left the CUDA context broken (an illegal address, a trap, a kernel that
// faulted: such errors are "sticky", every later CUDA call fails with them) the process ends at
// once with kContextLostExit, and the runner runs the remaining tests in a fresh process: one
// faulting kernel fails its own test, never the tests after it.
//
// For the grader (course/observe.h): --course_record also sends every observation a test makes,
// as {"event":"observe","key":"...","what":"...","n":<bytes>} followed by exactly n bytes, on the
// same descriptor; --course_replay=<dir> replays another program's recorded observations in
// place of this program's own, and the end event's "replay" says what did not match ("" when
// everything did).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "course/device.h"
#include "course/json.h"
#include "course/observe.h"
#include "course/random.h"
#include "course/testing.h"

namespace course {
namespace {
std::map<std::string, double>& points_table() {
  static std::map<std::string, double> table;
  return table;
}
}  // namespace

int register_points(const char* exercise, double points) {
  points_table()[exercise] += points;
  return 0;
}

std::string seed_hint() {
  return "\n  (random inputs from seed " + std::to_string(run_seed()) +
         "; rerun with COURSE_SEED=" + std::to_string(run_seed()) + " to get the same ones)";
}
}  // namespace course

namespace {

// The exit status that tells the runner "the CUDA context is lost, restart after this test".
constexpr int kContextLostExit = 86;

using course::json_string;

std::string full_name(const ::testing::TestInfo& t) {
  return std::string(t.test_suite_name()) + "." + t.name();
}

// A CUDA error that stays after it is read: the context cannot run anything any more.
bool context_lost(std::string* what) {
  cudaError_t err = cudaDeviceSynchronize();
  if (err == cudaSuccess) return false;
  cudaGetLastError();  // a non-sticky error is cleared by reading it ...
  err = cudaDeviceSynchronize();
  if (err == cudaSuccess) err = cudaGetLastError();
  if (err == cudaSuccess) return false;  // ... a sticky one comes back
  *what = std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
  return true;
}

// The runner's descriptor: whole frames, one writer at a time (a test's threads may observe).
class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  void write(const std::string& frame) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::fflush(stdout);  // everything the test printed goes out before the event after it
    std::fflush(stderr);
    const char* p = frame.data();
    std::size_t left = frame.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the runner went away; the tests go on, their verdicts in stdout
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }

 private:
  int fd_;
  std::mutex mutex_;
};

class EventStream : public ::testing::EmptyTestEventListener {
 public:
  EventStream(Channel* channel, bool check_context)
      : channel_(channel), check_context_(check_context) {}

  void OnTestStart(const ::testing::TestInfo& t) override {
    course::detail::observe_test_start(full_name(t));
    emit("{\"event\":\"start\",\"test\":" + json_string(full_name(t)) + "}");
  }

  void OnTestEnd(const ::testing::TestInfo& t) override {
    const ::testing::TestResult& r = *t.result();
    const char* outcome = r.Skipped() ? "skipped" : r.Failed() ? "failed" : "passed";
    std::string failures, skip;
    for (int i = 0; i < r.total_part_count(); ++i) {
      const ::testing::TestPartResult& part = r.GetTestPartResult(i);
      if (part.skipped()) {
        skip += part.message();
        continue;
      }
      if (!part.failed()) continue;
      if (!failures.empty()) failures += ",";
      failures += "{\"file\":" + json_string(part.file_name() ? part.file_name() : "") +
                  ",\"line\":" + std::to_string(part.line_number()) +
                  ",\"message\":" + json_string(part.message()) + "}";
    }
    std::string properties;
    for (int i = 0; i < r.test_property_count(); ++i) {
      const ::testing::TestProperty& p = r.GetTestProperty(i);
      if (!properties.empty()) properties += ",";
      properties += json_string(p.key()) + ":" + json_string(p.value());
    }
    const std::string replay = course::detail::observe_test_end();
    emit("{\"event\":\"end\",\"test\":" + json_string(full_name(t)) + ",\"outcome\":\"" + outcome +
         "\",\"ms\":" + std::to_string(r.elapsed_time()) + ",\"failures\":[" + failures +
         "],\"skip\":" + json_string(skip) + ",\"properties\":{" + properties +
         "},\"replay\":" + json_string(replay) + "}");
    std::string what;
    if (check_context_ && context_lost(&what)) {
      emit("{\"event\":\"context_lost\",\"test\":" + json_string(full_name(t)) +
           ",\"error\":" + json_string(what) + "}");
      std::printf("[ course   ] the CUDA context is lost after %s: %s\n", full_name(t).c_str(),
                  what.c_str());
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(kContextLostExit);
    }
  }

 private:
  void emit(const std::string& line) { channel_->write(line + "\n"); }

  Channel* channel_;
  bool check_context_;
};

// --course_record, --course_replay=<dir>: read (and removed) before GoogleTest sees the flags.
struct ObserveFlags {
  bool record = false;
  std::string replay_dir;
};

ObserveFlags take_observe_flags(int* argc, char** argv) {
  ObserveFlags flags;
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    if (std::strcmp(argv[i], "--course_record") == 0) {
      flags.record = true;
    } else if (std::strncmp(argv[i], "--course_replay=", 16) == 0) {
      flags.replay_dir = argv[i] + 16;
    } else {
      argv[kept++] = argv[i];
    }
  }
  *argc = kept;
  argv[kept] = nullptr;
  return flags;
}

}  // namespace

int main(int argc, char** argv) {
  // The points each exercise is worth (COURSE_POINTS), for the grader: JSON, no GPU needed.
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--course_points") == 0) {
      std::string json = "{";
      for (const auto& [exercise, points] : course::points_table()) {
        if (json.size() > 1) json += ", ";
        json += json_string(exercise) + ": " + std::to_string(points);
      }
      std::printf("%s}\n", json.c_str());
      return 0;
    }
  }
  const ObserveFlags observe = take_observe_flags(&argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  // Listing the tests (the runner and ctest do it to register them) must not touch the GPU.
  if (::testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  std::string why;
  const bool gpu = course::gpu_available(&why);
  if (gpu) {
    std::printf("[ course   ] %s\n", course::describe(course::device_facts()).c_str());
  } else {
    std::printf("[ course   ] %s: GPU tests will be reported as SKIPPED, not passed\n",
                why.c_str());
  }
  std::printf("[ course   ] random seed %llu (set COURSE_SEED to repeat)\n",
              static_cast<unsigned long long>(course::run_seed()));
  if (const char* fd = std::getenv("COURSE_EVENTS_FD")) {
    static Channel channel(std::atoi(fd));
    ::testing::UnitTest::GetInstance()->listeners().Append(new EventStream(&channel, gpu));
    // A replay's own failure names no file and line: they would be this file's.
    const auto fail = [](const std::string& message) {
      GTEST_MESSAGE_AT_("", -1, message.c_str(), ::testing::TestPartResult::kNonFatalFailure);
    };
    if (observe.record) {
      course::detail::observe_configure(
          course::ObserveMode::kRecord, "", [](const std::string& frame) { channel.write(frame); },
          fail);
    } else if (!observe.replay_dir.empty()) {
      course::detail::observe_configure(course::ObserveMode::kReplay, observe.replay_dir, {}, fail);
    }
  }
  return RUN_ALL_TESTS();
}
