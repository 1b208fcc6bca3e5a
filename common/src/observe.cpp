#include "course/observe.h"

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "course/json.h"

namespace course {

namespace {

struct Record {
  std::string what;
  std::string bytes;
};

struct State {
  ObserveMode mode = ObserveMode::kOff;
  std::string replay_dir;
  std::function<void(const std::string&)> send;  // recording: one frame to the grader
  std::function<void(const std::string&)> fail;  // replaying: fails the running test
  std::mutex mutex;
  // Replaying: the current test's records, by key, in order; and what went wrong.
  std::map<std::string, std::deque<Record>> tape;
  std::string problem;
  bool test_open = false;
};

State& state() {
  static State s;
  return s;
}

thread_local std::string current_key;

std::string describe_step(const std::string& key, const char* what) {
  return std::string("`") + what + "`" + (key.empty() ? "" : " (" + key + ")");
}

// Replaying: the next record of `key`, or an explanation of why there is none.
bool next_record(const std::string& key, const char* what, Record* out) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto found = s.tape.find(key);
  if (found == s.tape.end() || found->second.empty()) {
    if (s.problem.empty())
      s.problem = "the program under test did not report the step " + describe_step(key, what) +
                  " that the test reads here (it ended the test early, or took other steps)";
    return false;
  }
  *out = std::move(found->second.front());
  found->second.pop_front();
  if (out->what != what && s.problem.empty())
    s.problem = "the program under test reported " + describe_step(key, out->what.c_str()) +
                " where the test reads " + describe_step(key, what);
  return true;
}

void record(const std::string& key, const char* what, const void* data, std::size_t bytes) {
  State& s = state();
  std::string frame = "{\"event\":\"observe\",\"key\":" + json_string(key) +
                      ",\"what\":" + json_string(what) + ",\"n\":" + std::to_string(bytes) + "}\n";
  frame.append(static_cast<const char*>(data), bytes);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.send(frame);
}

}  // namespace

ObserveMode observe_mode() { return state().mode; }

void observe_bytes(void* data, std::size_t bytes, const char* what) {
  State& s = state();
  if (s.mode == ObserveMode::kRecord) {
    record(current_key, what, data, bytes);
  } else if (s.mode == ObserveMode::kReplay) {
    Record r;
    if (next_record(current_key, what, &r) && r.bytes.size() == bytes) {
      std::memcpy(data, r.bytes.data(), bytes);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (s.problem.empty())
        s.problem = "the program under test reported " + std::to_string(r.bytes.size()) +
                    " bytes for the step " + describe_step(current_key, what) +
                    ", where the test reads " + std::to_string(bytes);
    }
    std::memset(data, 0xff, bytes);
    if (s.fail) s.fail("checked by the grader: " + s.problem);
  }
}

void observe_blob(std::string* blob, const char* what) {
  State& s = state();
  if (s.mode == ObserveMode::kRecord) {
    record(current_key, what, blob->data(), blob->size());
  } else if (s.mode == ObserveMode::kReplay) {
    Record r;
    if (next_record(current_key, what, &r)) {
      *blob = std::move(r.bytes);
      return;
    }
    blob->assign(1, '\xff');
    if (s.fail) s.fail("checked by the grader: " + s.problem);
  }
}

namespace detail {

Thrown observe_thrown(Thrown thrown, const char* what) {
  std::string blob =
      std::string(thrown.threw ? "1" : "0") + (thrown.threw_other ? "1" : "0") + thrown.what;
  observe_blob(&blob, what);
  if (blob.size() < 2) return Thrown{false, true, "(not a recorded outcome)"};
  return Thrown{blob[0] == '1', blob[1] == '1', blob.substr(2)};
}

void observe_configure(ObserveMode mode, const std::string& replay_dir,
                       const std::function<void(const std::string&)>& send,
                       const std::function<void(const std::string&)>& fail) {
  State& s = state();
  s.mode = mode;
  s.replay_dir = replay_dir;
  s.send = send;
  s.fail = fail;
}

std::string tape_file_name(const std::string& test) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits
  for (const char c : test) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.tape", static_cast<unsigned long long>(h));
  return name;
}

void observe_test_start(const std::string& test) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.tape.clear();
  s.problem.clear();
  s.test_open = true;
  if (s.mode != ObserveMode::kReplay) return;
  // The tape (tools/course/runner.py writes it from the frames of the recording run): a first
  // line with the test's name, then per observation a line "<key> <what> <n>" (key and what in
  // hex, "-" when empty) and n bytes.
  std::ifstream in(s.replay_dir + "/" + tape_file_name(test), std::ios::binary);
  if (!in) {
    s.problem = "the program under test recorded nothing for this test";
    return;
  }
  std::string line;
  std::getline(in, line);
  if (line != test) {
    s.problem = "the recording of this test is for another test (" + line + ")";
    return;
  }
  const auto unhex = [](const std::string& hex, std::string* out) {
    out->clear();
    if (hex == "-") return true;
    if (hex.size() % 2 != 0) return false;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
      const std::string pair = hex.substr(i, 2);
      char* end = nullptr;
      const long v = std::strtol(pair.c_str(), &end, 16);
      if (end != pair.c_str() + 2) return false;
      out->push_back(static_cast<char>(v));
    }
    return true;
  };
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key_hex, what_hex, key, what;
    unsigned long long n = 0;
    if (!(fields >> key_hex >> what_hex >> n) || !unhex(key_hex, &key) || !unhex(what_hex, &what)) {
      s.problem = "the recording of this test is damaged";
      return;
    }
    Record r{what, std::string(static_cast<std::size_t>(n), '\0')};
    if (!in.read(r.bytes.data(), static_cast<std::streamsize>(r.bytes.size()))) {
      s.problem = "the recording of this test is cut short";
      return;
    }
    s.tape[key].push_back(std::move(r));
  }
}

std::string observe_test_end() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.test_open = false;
  if (s.mode != ObserveMode::kReplay) return "";
  if (!s.problem.empty()) return s.problem;
  std::size_t left = 0;
  std::string example;
  for (const auto& [key, records] : s.tape) {
    left += records.size();
    if (!records.empty() && example.empty())
      example = describe_step(key, records.front().what.c_str());
  }
  if (left == 0) return "";
  return "the program under test reported " + std::to_string(left) +
         " more steps than the test takes (the first: " + example + ")";
}

}  // namespace detail

ObservationKey::ObservationKey(std::string key) : previous_(std::move(current_key)) {
  current_key = std::move(key);
}

ObservationKey::~ObservationKey() { current_key = std::move(previous_); }

}  // namespace course
