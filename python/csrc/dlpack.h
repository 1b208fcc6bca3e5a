// The DLPack structures this bridge reads, written from the DLPack specification
// (https://dmlc.github.io/dlpack/latest/c_api.html, dlpack.h v0.8 / v1.0: the unversioned
// DLManagedTensor, which is what __dlpack__() returns when no max_version is asked for). Only the
// layout matters: it is the ABI every framework shares.
#pragma once

#include <cstdint>

extern "C" {

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLCUDAManaged = 13,
} DLDeviceType;

typedef struct {
  int32_t device_type;  // a DLDeviceType
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
} DLDataTypeCode;

typedef struct {
  uint8_t code;  // a DLDataTypeCode
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;  // the element at index 0 is at (char*)data + byte_offset
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;    // [ndim]
  int64_t* strides;  // [ndim], in elements; NULL: compact row-major
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

}  // extern "C"
