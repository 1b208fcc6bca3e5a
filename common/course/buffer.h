// DeviceBuffer<T>: an owning, typed array in GPU memory.
//
// cudaMalloc'd memory that is freed when the buffer goes out of scope (also when a test
// fails half-way with an exception), moves but never copies implicitly, and says what it
// holds: size() elements of T, bytes() bytes. Copies to and from the host are explicit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "course/check.h"
#include "course/dtype.h"
#include "course/observe.h"

namespace course {

namespace detail {
// Fills `bytes` bytes at `data` with copies of `pattern` (`pattern_bytes` of 1, 2, 4, 8 or 16,
// dividing `bytes`) with one kernel on the default stream, and waits for it: poisoning a
// 256 MiB output costs a tenth of a millisecond instead of a host array and an upload.
void fill_pattern(void* data, std::size_t bytes, const void* pattern, std::size_t pattern_bytes);
}  // namespace detail

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : size_(count) {
    if (count > 0) COURSE_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);  // never throw from a destructor
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }

  // host -> device; host.size() + offset must fit.
  void upload(const std::vector<T>& host, std::size_t offset = 0) {
    require(offset + host.size() <= size_, "DeviceBuffer::upload: host data does not fit");
    if (!host.empty())
      COURSE_CUDA_CHECK(
          cudaMemcpy(data_ + offset, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  // device -> host: count elements starting at offset (all of them by default).
  std::vector<T> download(std::size_t offset = 0,
                          std::size_t count = static_cast<std::size_t>(-1)) const {
    if (count == static_cast<std::size_t>(-1)) count = size_ - offset;
    require(offset + count <= size_, "DeviceBuffer::download: range out of bounds");
    std::vector<T> host(count);
    if (count > 0)
      COURSE_CUDA_CHECK(
          cudaMemcpy(host.data(), data_ + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  // download() for a test that checks what it reads: the grader sees the same values
  // (course/observe.h). Kernel code never calls it; the tests call nothing else.
  std::vector<T> read_back(std::size_t offset = 0,
                           std::size_t count = static_cast<std::size_t>(-1)) const {
    std::vector<T> host = download(offset, count);
    observe_bytes(host.data(), host.size() * sizeof(T), "read_back");
    return host;
  }
  // Fill with DType<T>::poison(): an element the kernel never writes keeps a value that no
  // computation produces, so a comparison can tell "never written" from "wrong".
  void poison() { fill(DType<T>::poison()); }
  void fill(const T& value) {
    if constexpr (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8 ||
                  sizeof(T) == 16) {
      if (size_ > 0) detail::fill_pattern(data_, bytes(), &value, sizeof(T));
    } else {
      upload(std::vector<T>(size_, value));
    }
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace course
