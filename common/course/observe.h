// What a test observes of the code under test, so that the grader can check it in a process
// the student's code is not linked into (docs/grading.md, "The trust boundary").
//
// A student's kernel.cu is linked into the program that tests it, so that program's own verdict
// is the student's to forge. When the grader runs it (`--course_record`), every value the test
// reads back from the code under test is also sent to the grader: every DeviceBuffer::download,
// every course::gather, and every value a test passes through course::observed(). Then the
// grader runs the same tests again in the REFERENCE program, linked with the solution and never
// with the student's code (`--course_replay=<dir>`): there every such read returns the student's
// value instead of the solution's. The inputs are the same (the same seed), the references and
// the assertions are the test's own, so the replay's verdict is the student's results judged by
// code the student cannot touch.
//
//   const auto got = y.download();                         // observed automatically
//   EXPECT_EQ(course::observed(d13::cache_key(s, n, o)), expected);      // a host value
//   COURSE_EXPECT_THROW(d11::validate_decode(shape, t, 7), course::InvalidArgument);
//
// Rules for a test (tests/README of each day follows them; docs/grading.md explains why):
//   - every value of the code under test that an assertion uses must reach it through an
//     observation: a download, course::observed(...), or COURSE_EXPECT_THROW / _NO_THROW;
//   - never pass an observed value back into the code under test (a pointer the student's
//     allocator returned means nothing in the reference program): observe what the assertion
//     compares (`observed(p == q)`), not the pointers;
//   - the same seed must give the same observations in the same order; observations made on
//     several threads at once carry a key (ObservationKey) so that each thread's are in order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace course {

enum class ObserveMode { kOff, kRecord, kReplay };
ObserveMode observe_mode();

// One observation of `bytes` bytes at `data` (fixed size: the test decides it). Recording: sent
// to the grader. Replaying: overwritten with what the program under test recorded at the same
// step; a step it did not record (or recorded with another size) fails the test and leaves the
// memory poisoned with 0xff bytes, which no check passes.
void observe_bytes(void* data, std::size_t bytes, const char* what);

// A value of any size (a string, a vector's contents): replaying, `blob` becomes what the
// program under test recorded, whatever its size.
void observe_blob(std::string* blob, const char* what);

template <class T>
T observed(T value, const char* what = "value") {
  static_assert(std::is_trivially_copyable_v<T>,
                "observed(): a trivially copyable value, a std::string, a std::vector or a "
                "std::optional of one");
  observe_bytes(&value, sizeof(T), what);
  return value;
}

inline std::string observed(std::string value, const char* what = "string") {
  observe_blob(&value, what);
  return value;
}
inline std::string observed(const char* value, const char* what = "string") {
  return observed(std::string(value), what);
}

template <class T>
std::vector<T> observed(std::vector<T> value, const char* what = "vector") {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_same_v<T, bool>,
                "observed(std::vector<T>): T trivially copyable (not bool)");
  std::string blob(reinterpret_cast<const char*>(value.data()), value.size() * sizeof(T));
  observe_blob(&blob, what);
  value.resize(blob.size() / sizeof(T));
  if (!blob.empty()) std::memcpy(value.data(), blob.data(), value.size() * sizeof(T));
  return value;
}

inline std::vector<std::string> observed(std::vector<std::string> value,
                                         const char* what = "strings") {
  auto count = observed(static_cast<std::uint64_t>(value.size()), what);
  value.resize(static_cast<std::size_t>(count));
  for (auto& s : value) s = observed(std::move(s), what);
  return value;
}

template <class T>
std::optional<T> observed(std::optional<T> value, const char* what = "optional") {
  const bool present = observed(value.has_value(), what);
  if (!present) return std::nullopt;
  if (!value) value.emplace();  // replaying a value the reference did not have
  return observed(std::move(*value), what);
}

// What a call did: whether it threw an exception of the given type, and its message.
struct Thrown {
  bool threw = false;        // an exception of the expected type
  bool threw_other = false;  // another exception (what says which)
  std::string what;
};

namespace detail {
Thrown observe_thrown(Thrown thrown, const char* what);
}  // namespace detail

// Runs `call`, and observes whether it threw E (or another exception). Replaying, the call is
// made too (the reference program's state goes on as the student's did), but what it did is
// the student's.
template <class E>
Thrown observed_throw(const std::function<void()>& call, const char* what = "throws") {
  Thrown t;
  try {
    call();
  } catch (const E& e) {
    t.threw = true;
    t.what = e.what();
  } catch (...) {
    t.threw_other = true;
    t.what = "an exception that is not a " + std::string(typeid(E).name());
    try {
      throw;
    } catch (const std::exception& e) {
      t.what = e.what();
    } catch (...) {
    }
  }
  return detail::observe_thrown(std::move(t), what);
}

// Observations made while an ObservationKey lives on this thread carry its key: a test whose
// threads observe at once gives each thread its own key, and each key's observations are
// replayed in their own order.
class ObservationKey {
 public:
  explicit ObservationKey(std::string key);
  ~ObservationKey();
  ObservationKey(const ObservationKey&) = delete;
  ObservationKey& operator=(const ObservationKey&) = delete;

 private:
  std::string previous_;
};

namespace detail {
// For the test programs' main() (test_main.cpp): the mode, from --course_record or
// --course_replay=<dir>, and each test's start and end.
// send: writes one recorded frame to the grader; fail: fails the running test with a message.
void observe_configure(ObserveMode mode, const std::string& replay_dir,
                       const std::function<void(const std::string&)>& send,
                       const std::function<void(const std::string&)>& fail);
void observe_test_start(const std::string& test);
// The end of a test: "" when every recorded observation was replayed, else what went wrong.
std::string observe_test_end();
// The tape file of a test in a replay folder: a 64-bit FNV-1a hash of its full name, in hex
// (tools/course/runner.py names the files the same way).
std::string tape_file_name(const std::string& test);
}  // namespace detail

}  // namespace course

// EXPECT_THROW / EXPECT_NO_THROW whose outcome the grader sees (observed_throw). Like
// GoogleTest's, they take more words after them:
//   COURSE_EXPECT_THROW(d01::vector_add(a, b, c, -1), course::InvalidArgument)
//       << "n = -1 must be rejected (lab.h)";
// (The switch is GoogleTest's guard against a dangling else.)
#define COURSE_EXPECT_THROW(statement, exception)                                   \
  switch (0)                                                                        \
  case 0:                                                                           \
  default:                                                                          \
    if (const ::course::Thrown course_thrown_ =                                     \
            ::course::observed_throw<exception>([&] { statement; }, #statement);    \
        course_thrown_.threw) {                                                     \
    } else                                                                          \
      ADD_FAILURE() << "Expected `" #statement "` to throw " #exception ", but it " \
                    << (course_thrown_.threw_other                                  \
                            ? "threw another exception: " + course_thrown_.what     \
                            : std::string("threw nothing"))                         \
                    << ". "

#define COURSE_EXPECT_NO_THROW(statement)                                             \
  switch (0)                                                                          \
  case 0:                                                                             \
  default:                                                                            \
    if (const ::course::Thrown course_thrown_ =                                       \
            ::course::observed_throw<std::exception>([&] { statement; }, #statement); \
        !course_thrown_.threw && !course_thrown_.threw_other) {                       \
    } else                                                                            \
      ADD_FAILURE() << "Expected `" #statement "` not to throw, but it threw: "       \
                    << course_thrown_.what << ". "
