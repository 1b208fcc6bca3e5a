// Comparing a GPU result with its float64 CPU reference, and saying in words what is wrong.
//
// A comparison fails when the relative L2 error ||got - ref|| / ||ref|| exceeds the dtype's
// norm tolerance, when any element is outside its element tolerance, when an element is NaN
// or Inf where the reference is finite (NaN never passes), or when an element still holds
// the poison value (it was never written). The message starts with the likely cause in
// words ("never written", "wrong from index k on: the tail", "NaN") and then the numbers: the
// first bad element and the worst ones, as [row, col] when the output is a matrix.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "course/dtype.h"

namespace course {

struct CompareOptions {
  Tolerance tolerance{-1.0, -1.0};  // negative: the output dtype's default (dtype.h)
  std::int64_t cols = 0;            // > 0: the output is a row-major matrix with this many columns
  std::string what = "output";      // what the output is called in the message
};

struct Comparison {
  bool ok = false;
  double rel_error = 0.0;      // ||got - ref|| / ||ref|| over elements where both are finite
  std::size_t mismatches = 0;  // elements outside the element tolerance (finite, written)
  std::size_t unwritten = 0;   // elements that still hold the poison value
  std::size_t bad_nonfinite =
      0;                        // NaN/Inf where the reference is finite, or finite where it is not
  std::int64_t first_bad = -1;  // index of the first failing element, -1 if none
  std::string message;          // empty when ok
};

// The type-independent core: got as float64, with a flag for elements still poisoned.
Comparison compare_values(const std::vector<double>& got, const std::vector<bool>& poisoned,
                          const std::vector<double>& ref, Tolerance tolerance,
                          const CompareOptions& options);

template <class T>
Comparison compare(const std::vector<T>& got, const std::vector<double>& ref,
                   CompareOptions options = {}) {
  Tolerance tol = options.tolerance.norm < 0 ? DType<T>::tolerance : options.tolerance;
  std::vector<double> values(got.size());
  std::vector<bool> poisoned(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    poisoned[i] = DType<T>::is_poison(got[i]);
    values[i] = DType<T>::to_double(got[i]);
  }
  return compare_values(values, poisoned, ref, tol, options);
}

// ---------------------------------------------------------------------------------------------
// Rounding to a 16-bit type, checked exactly.
//
// A kernel that computes in float32 and stores float16 or bfloat16 must round each result to
// the NEAREST 16-bit value (ties to even: __float2half_rn, __float2bfloat16_rn,
// course::from_float). Rounding toward zero (truncation: __float2bfloat16_rz, or dropping the low
// 16 bits of a float) costs at most one more step of the 16-bit type, which the tolerances of
// course::compare allow; so this check asks for the exact value wherever the answer is certain.
// Element i is checked when every value within float_error[i] of the float64 reference rounds to
// the same 16-bit value (the float32 arithmetic of the kernel, at most float_error[i] away from
// the reference, cannot have crossed a rounding midpoint); it must then equal that value, the
// reference rounded to nearest even. Choose float_error as a bound of the kernel's float32 error
// before its final rounding: a few float32 ulps of the result (2^-24 relative each), more for a
// long sum or for approximate functions (__expf, tanh.approx), named where it is used.

// The 16-bit formats: significand bits (with the implicit one), the exponent of the smallest
// normal value, the largest finite value, and the conversion that rounds to nearest even.
struct Format16 {
  const char* name;
  int precision;
  int min_exponent;
  double max_finite;
  const char* round_nearest;
};
inline constexpr Format16 kFloat16Format{"float16", 11, -14, 65504.0, "__float2half_rn"};
inline constexpr Format16 kBFloat16Format{"bfloat16", 8, -126, 3.3895313892515355e38,
                                          "__float2bfloat16_rn"};

template <class T>
constexpr Format16 format16() {
  static_assert(std::is_same_v<T, half> || std::is_same_v<T, bfloat16>,
                "the rounding check is for 16-bit floating-point outputs (half, bfloat16)");
  if constexpr (std::is_same_v<T, half>) return kFloat16Format;
  return kBFloat16Format;
}

// v rounded to the format: to nearest, ties to even (overflow gives infinity); and the
// neighbour of v toward zero (what truncation gives). Exact, in float64.
double round_nearest_even(double v, const Format16& format);
double round_toward_zero(double v, const Format16& format);

struct RoundingCheck {
  bool ok = false;
  std::size_t checked = 0;      // elements whose correctly rounded value is certain
  std::size_t wrong = 0;        // ... of which the output is another value (NaN/Inf included)
  std::size_t toward_zero = 0;  // ... of which the output is the reference rounded toward zero
  std::size_t unwritten = 0;    // elements that still hold the poison value (never written)
  std::int64_t first_bad = -1;  // index of the first unwritten or wrong element, -1 if none
  std::string message;          // empty when ok
};

// The type-independent core: got as float64, with a flag for elements still poisoned.
RoundingCheck check_rounding_values(const std::vector<double>& got,
                                    const std::vector<bool>& poisoned,
                                    const std::vector<double>& ref,
                                    const std::vector<double>& float_error, const Format16& format,
                                    const CompareOptions& options);

// float_error[i] bounds the kernel's float32 error at element i, in absolute terms.
template <class T>
RoundingCheck check_rounding(const std::vector<T>& got, const std::vector<double>& ref,
                             const std::vector<double>& float_error,
                             const CompareOptions& options = {}) {
  std::vector<double> values(got.size());
  std::vector<bool> poisoned(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    poisoned[i] = DType<T>::is_poison(got[i]);
    values[i] = DType<T>::to_double(got[i]);
  }
  return check_rounding_values(values, poisoned, ref, float_error, format16<T>(), options);
}

// The same with a bound relative to each reference: float_error[i] = relative * |ref[i]|.
template <class T>
RoundingCheck check_rounding(const std::vector<T>& got, const std::vector<double>& ref,
                             double relative_float_error, const CompareOptions& options = {}) {
  std::vector<double> float_error(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i)
    float_error[i] = relative_float_error * std::fabs(ref[i]);
  return check_rounding(got, ref, float_error, options);
}

}  // namespace course
