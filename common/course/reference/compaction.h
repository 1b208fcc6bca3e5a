// CPU references for Day 5's vote and match exercises: stable stream compaction, and counting
// keys per bucket (the histogram that a multi-way partition or a radix sort starts with).
//
// Stream compaction keeps the elements that satisfy a predicate and packs them together. It
// is STABLE when the kept elements come out in their input order: out[k] is the k-th kept
// element. Order matters to whoever reads the result (token ids after a top-p filter, the
// indices of non-zeros, ...), so the course's compaction is stable and its tests check the
// order, not just the set.
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

namespace course::reference {

// The elements of x for which keep(x[i]) is true, in input order.
template <class T, class Pred>
std::vector<T> compact_if(const std::vector<T>& x, Pred keep) {
  std::vector<T> out;
  for (const T& v : x)
    if (keep(v)) out.push_back(v);
  return out;
}

// The elements greater than threshold, in input order. Give it the values and the threshold
// the GPU saw (rounded to float, as float64), and it makes exactly the GPU's decisions.
inline std::vector<double> compact_greater(const std::vector<double>& x, double threshold) {
  return compact_if(x, [threshold](double v) { return v > threshold; });
}

// counts[b] = how many keys equal b, for 0 <= b < bins; keys outside [0, bins) are not counted.
// As float64, like every reference, so that course::compare can check it (exactly, for integer
// outputs).
template <class Int>
std::vector<double> count_keys(const std::vector<Int>& keys, std::size_t bins) {
  std::vector<double> counts(bins, 0.0);
  for (const Int k : keys) {
    if constexpr (std::is_signed_v<Int>) {
      if (k < 0) continue;
    }
    if (static_cast<std::size_t>(k) < bins) counts[static_cast<std::size_t>(k)] += 1.0;
  }
  return counts;
}

}  // namespace course::reference
