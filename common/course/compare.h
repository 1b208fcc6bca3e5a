// Comparing a GPU result with its float64 CPU reference, and saying in words what is wrong.
//
// A comparison fails when the relative L2 error ||got - ref|| / ||ref|| exceeds the dtype's
// norm tolerance, when any element is outside its element tolerance, when an element is NaN
// or Inf where the reference is finite (NaN never passes), or when an element still holds
// the poison value (it was never written). The message starts with the likely cause in
// words ("never written", "wrong from index k on: the tail", "NaN") and then the numbers: the
// first bad element and the worst ones, as [row, col] when the output is a matrix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
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

}  // namespace course
