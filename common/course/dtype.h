// The element types the labs compute with, and what "close enough" means for each.
//
// Every comparison in the course is against a float64 CPU reference computed from the very
// inputs the GPU saw (already rounded to the element type), so the only error left is the
// kernel's own: the final rounding to the output type plus float32 arithmetic inside.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace course {

using half = __half;
using bfloat16 = __nv_bfloat16;

// How close a result must be to the reference.
//  - norm: bound on the relative L2 error ||got - ref|| / ||ref|| over the whole output.
//  - elem: bound on each element, |got - ref| <= elem * (|ref| + rms(ref)); the rms term keeps
//    elements near zero (where relative error is meaningless) from failing on rounding alone.
struct Tolerance {
  double norm;
  double elem;
};

// The defaults, one per dtype, derived from the unit roundoff u of the output type:
//  float32  u = 2^-24 ≈ 6e-8. float32 arithmetic over a few dozen operations stays far below
//           1e-5 in norm; 1e-4 per element leaves room for tanhf/expf's few ulps.
//  half     u = 2^-11 ≈ 4.9e-4: rounding the output alone costs up to u per element, so
//           1e-3 in norm and 4u ≈ 2e-3 per element.
//  bfloat16 u = 2^-8 ≈ 3.9e-3: 8e-3 in norm and 4u ≈ 1.6e-2 per element.
//  integers must match exactly.
// Kernels that use approximate hardware math (tanh.approx, ex2.approx: Day 3) or accumulate
// very long sums pass an explicit Tolerance, named where it is used, with the reason.
template <class T>
struct DType;

template <>
struct DType<float> {
  static constexpr const char* name = "float32";
  static constexpr Tolerance tolerance{1e-5, 1e-4};
  static double to_double(float v) { return v; }
  static float from_double(double v) { return static_cast<float>(v); }
  // A quiet NaN with a payload no arithmetic produces: "this element was never written".
  static float poison() { return bits_to<float>(0x7fc0dead); }
  static bool is_poison(float v) { return to_bits(v) == 0x7fc0deadu; }
  static std::uint32_t to_bits(float v) {
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
  }
  template <class U>
  static U bits_to(std::uint32_t b) {
    U v;
    std::memcpy(&v, &b, 4);
    return v;
  }
};

template <>
struct DType<double> {
  static constexpr const char* name = "float64";
  static constexpr Tolerance tolerance{1e-12, 1e-10};
  static double to_double(double v) { return v; }
  static double from_double(double v) { return v; }
  static double poison() {
    std::uint64_t b = 0x7ff8deaddeaddeadull;
    double v;
    std::memcpy(&v, &b, 8);
    return v;
  }
  static bool is_poison(double v) {
    std::uint64_t b;
    std::memcpy(&b, &v, 8);
    return b == 0x7ff8deaddeaddeadull;
  }
};

template <>
struct DType<half> {
  static constexpr const char* name = "float16";
  static constexpr Tolerance tolerance{1e-3, 2e-3};
  static double to_double(half v) { return static_cast<double>(__half2float(v)); }
  static half from_double(double v) { return __float2half_rn(static_cast<float>(v)); }
  static half poison() { return __ushort_as_half(0x7e5d); }
  static bool is_poison(half v) { return __half_as_ushort(v) == 0x7e5d; }
};

template <>
struct DType<bfloat16> {
  static constexpr const char* name = "bfloat16";
  static constexpr Tolerance tolerance{8e-3, 1.6e-2};
  static double to_double(bfloat16 v) { return static_cast<double>(__bfloat162float(v)); }
  static bfloat16 from_double(double v) { return __float2bfloat16_rn(static_cast<float>(v)); }
  static bfloat16 poison() { return __ushort_as_bfloat16(0x7fdd); }
  static bool is_poison(bfloat16 v) { return __bfloat16_as_ushort(v) == 0x7fdd; }
};

// Integers: exact comparison; the poison is a value tests never produce.
template <class I>
struct IntDType {
  static constexpr Tolerance tolerance{0.0, 0.0};
  static double to_double(I v) { return static_cast<double>(v); }
  static I from_double(double v) { return static_cast<I>(v); }
  static I poison() {
    return static_cast<I>(sizeof(I) == 1 ? 0x5a : sizeof(I) == 2 ? 0x5aa5 : 0x5eadbeef);
  }
  static bool is_poison(I v) { return v == poison(); }
};
template <>
struct DType<std::int32_t> : IntDType<std::int32_t> {
  static constexpr const char* name = "int32";
};
template <>
struct DType<std::uint32_t> : IntDType<std::uint32_t> {
  static constexpr const char* name = "uint32";
};
template <>
struct DType<std::int64_t> : IntDType<std::int64_t> {
  static constexpr const char* name = "int64";
};
template <>
struct DType<std::int8_t> : IntDType<std::int8_t> {
  static constexpr const char* name = "int8";
};
template <>
struct DType<std::uint8_t> : IntDType<std::uint8_t> {
  static constexpr const char* name = "uint8";
};

template <class T>
double to_double(T v) {
  return DType<T>::to_double(v);
}
template <class T>
T from_double(double v) {
  return DType<T>::from_double(v);
}

// Round a float64 value through T: what the GPU sees when the host stores v as a T.
template <class T>
double round_through(double v) {
  return to_double(from_double<T>(v));
}

}  // namespace course
