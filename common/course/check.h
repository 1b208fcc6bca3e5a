// Error checking for every CUDA call and every kernel launch.
//
// CUDA reports errors in two ways: a call returns a cudaError_t, and a kernel launch
// records its error for the next call to pick up (a bad configuration at once, a fault
// inside the kernel only when the host next waits for the device). An unchecked error
// surfaces later, at an unrelated line. So: wrap every call in COURSE_CUDA_CHECK, put
// COURSE_LAUNCH_CHECK() after every launch, and a failure names the file and line it came
// from. Errors are thrown as course::CudaError, so a test fails with the message instead of
// the whole process aborting.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

namespace course {

class CudaError : public std::runtime_error {
 public:
  CudaError(cudaError_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* expr, const char* file,
                                          int line) {
  std::ostringstream msg;
  msg << file << ":" << line << ": " << expr << " failed: " << cudaGetErrorName(code) << " ("
      << cudaGetErrorString(code) << ")";
  throw CudaError(code, msg.str());
}

// Set COURSE_SYNC_LAUNCHES=1 to make every launch check wait for the kernel, so that a fault
// inside a kernel is reported at its own launch instead of at the next synchronising call.
inline bool sync_after_launch() {
  static const bool on = [] {
    const char* v = std::getenv("COURSE_SYNC_LAUNCHES");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return on;
}

// A launcher's arguments are checked before anything reaches the GPU: a wrong size or a
// misaligned pointer is a message, not an illegal address.
class InvalidArgument : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

inline void require(bool condition, const std::string& message) {
  if (!condition) throw InvalidArgument(message);
}

template <class T>
constexpr T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

inline bool is_aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace course

#define COURSE_CUDA_CHECK(expr)                                           \
  do {                                                                    \
    cudaError_t course_err_ = (expr);                                     \
    if (course_err_ != cudaSuccess)                                       \
      ::course::throw_cuda_error(course_err_, #expr, __FILE__, __LINE__); \
  } while (0)

// After every kernel launch: reports a bad launch configuration at once and, with
// COURSE_SYNC_LAUNCHES=1, a fault inside the kernel too.
#define COURSE_LAUNCH_CHECK()                                                       \
  do {                                                                              \
    cudaError_t course_err_ = cudaGetLastError();                                   \
    if (course_err_ == cudaSuccess && ::course::sync_after_launch())                \
      course_err_ = cudaDeviceSynchronize();                                        \
    if (course_err_ != cudaSuccess)                                                 \
      ::course::throw_cuda_error(course_err_, "kernel launch", __FILE__, __LINE__); \
  } while (0)
