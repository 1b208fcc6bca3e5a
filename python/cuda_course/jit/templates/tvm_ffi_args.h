// Argument checks for functions exported with TVM-FFI (the JIT's rendered sources and
// python/csrc/course_py_tvm_ffi.cpp). Each check throws with TVM_FFI_THROW(ValueError) or
// TVM_FFI_THROW(TypeError): TVM-FFI carries the exception across the C ABI, and Python receives
// a ValueError or TypeError with this message, naming the argument. Never a crash.
//
// The order is deliberate: dtype, dimensions, shape and layout are checked before the device, so
// all of them can be tested on a machine without a GPU (with CPU tensors: numpy arrays); the
// device comes last, and nothing here touches the GPU.
#ifndef COURSE_TVM_FFI_ARGS_H_  // (a guard, not #pragma once: the JIT pastes this file into its
#define COURSE_TVM_FFI_ARGS_H_  // sources, where #pragma once would be a warning)

#include <cuda_runtime.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <cstdint>
#include <string>

namespace course_ffi {

using tvm::ffi::TensorView;

inline constexpr DLDataType kFloat32{kDLFloat, 32, 1};
inline constexpr DLDataType kFloat16{kDLFloat, 16, 1};
inline constexpr DLDataType kBFloat16{kDLBfloat, 16, 1};
inline constexpr DLDataType kInt32{kDLInt, 32, 1};
inline constexpr DLDataType kUInt8{kDLUInt, 8, 1};

inline bool same(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

inline std::string dtype_name(DLDataType t) {
  std::string s = t.code == kDLFloat    ? "float"
                  : t.code == kDLBfloat ? "bfloat"
                  : t.code == kDLInt    ? "int"
                  : t.code == kDLUInt   ? "uint"
                                        : "(code " + std::to_string(t.code) + ")";
  s += std::to_string(t.bits);
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

inline std::string shape_string(const TensorView& t) {
  std::string s = "(";
  for (int i = 0; i < t.ndim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + (t.ndim() == 1 ? ",)" : ")");
}

// dtype, number of dimensions and a compact row-major layout (size-1 dimensions may have any
// stride, as PyTorch gives them).
inline void check_tensor(const TensorView& t, const char* name, DLDataType dtype, int ndim) {
  if (!same(t.dtype(), dtype))
    TVM_FFI_THROW(TypeError) << name << ": expected dtype " << dtype_name(dtype) << ", got "
                             << dtype_name(t.dtype());
  if (t.ndim() != ndim)
    TVM_FFI_THROW(ValueError) << name << ": expected " << ndim << " dimensions, got " << t.ndim()
                              << " (shape " << shape_string(t) << ")";
  std::int64_t expected = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    if (t.size(i) != 1 && t.stride(i) != expected)
      TVM_FFI_THROW(ValueError) << name << ": must be contiguous (row-major, no gaps), got shape "
                                << shape_string(t);
    expected *= t.size(i);
  }
}

inline void check_dim(const TensorView& t, const char* name, int i, std::int64_t want,
                      const char* what) {
  if (t.size(i) != want)
    TVM_FFI_THROW(ValueError) << name << ": dimension " << i << " must be " << what << " = " << want
                              << ", got shape " << shape_string(t);
}

// Last: every tensor on a CUDA device, the same one. check_cuda(x, "x", w, "weight", ...) returns
// the device's id.
inline void check_cuda_one(const TensorView& t, const char* name, int& device) {
  if (t.device().device_type != kDLCUDA)
    TVM_FFI_THROW(ValueError) << name << ": must be on a CUDA device (DLPack device type "
                              << static_cast<int>(kDLCUDA) << ", kDLCUDA), got device type "
                              << t.device().device_type;
  if (device >= 0 && t.device().device_id != device)
    TVM_FFI_THROW(ValueError) << name << ": is on cuda:" << t.device().device_id
                              << ", the tensors before it on cuda:" << device;
  device = t.device().device_id;
}

template <class... Rest>
int check_cuda(const TensorView& t, const char* name, const Rest&... rest) {
  int device = -1;
  check_cuda_one(t, name, device);
  if constexpr (sizeof...(rest) > 0) {
    const int others = check_cuda(rest...);
    if (others != device)
      TVM_FFI_THROW(ValueError) << name << ": is on cuda:" << device
                                << ", the tensors after it on cuda:" << others;
  }
  return device;
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <class T>
T* data(const TensorView& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data_ptr()) + t.byte_offset());
}

// The stream the caller's framework has current for `device`: PyTorch's current stream when the
// tensors came from PyTorch (TVM-FFI reads it at the call), else what tvm_ffi.use_raw_stream set.
inline cudaStream_t env_stream(int device) {
  return static_cast<cudaStream_t>(TVMFFIEnvGetStream(kDLCUDA, device));
}

// A launch error (no kernel image for this GPU, too many resources) as a RuntimeError.
inline void check_launch(const char* who) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    TVM_FFI_THROW(RuntimeError) << who << ": CUDA error " << cudaGetErrorName(e) << ": "
                                << cudaGetErrorString(e);
}

// The current CUDA device set to `device` for the scope (a launch goes to the current device).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    cudaGetDevice(&previous_);
    if (previous_ != device) {
      const cudaError_t e = cudaSetDevice(device);
      if (e != cudaSuccess)
        TVM_FFI_THROW(RuntimeError) << "cudaSetDevice(" << device << "): " << cudaGetErrorString(e);
    }
  }
  ~DeviceScope() {
    int now = -1;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace course_ffi

#endif  // COURSE_TVM_FFI_ARGS_H_
