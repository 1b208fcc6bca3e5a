// Deterministic random inputs.
//
// Every test draws fresh inputs from a seed: by default a new seed per run (so a kernel must
// compute the right function on any input, not on one lucky array), printed with every
// failure so the run can be repeated exactly with COURSE_SEED=<seed>.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

#include "course/dtype.h"

namespace course {

// The seed of this process: COURSE_SEED if set, otherwise drawn once from the OS.
std::uint64_t run_seed();

// A seed for one input of one test: mixes the run seed with a per-input salt so that the
// inputs of one test differ from each other but are reproducible together.
std::uint64_t seed_for(std::uint64_t salt);

namespace detail {

// SplitMix64's output function: a bijection of 64-bit words that scrambles every input bit
// into every output bit.
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The i-th random word of the stream `seed`. The generator is counter-based (SplitMix64 over
// seed + (i + 1) * golden ratio, which passes BigCrush), so element i does not depend on
// elements 0..i-1: a large input is filled in parallel chunks, with the same values whatever
// the number of threads.
inline std::uint64_t random_word(std::uint64_t seed, std::uint64_t i) {
  return mix64(seed + 0x9e3779b97f4a7c15ull * (i + 1));
}

// A double uniform in [0, 1) from the top 53 bits of a word.
inline double unit_interval(std::uint64_t word) {
  return static_cast<double>(word >> 11) * 0x1.0p-53;
}

// Runs body(begin, end) over [0, n) split into contiguous chunks, on up to all the host's
// cores when n is large enough to be worth it (a benchmark's input has up to 2^28 elements).
void parallel_chunks(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body);

}  // namespace detail

// n values uniform in [lo, hi), rounded to T (integers: uniform in [lo, hi] inclusive).
template <class T>
std::vector<T> random_uniform(std::size_t n, std::uint64_t seed, double lo = -1.0,
                              double hi = 1.0) {
  std::vector<T> out(n);
  if constexpr (std::is_integral_v<T>) {
    const auto first = static_cast<long long>(lo);
    // hi - lo + 1 values; the multiply-shift maps a word onto them with a bias below 2^-32.
    const auto count = static_cast<unsigned __int128>(static_cast<long long>(hi) - first) + 1;
    detail::parallel_chunks(n, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const auto k =
            static_cast<unsigned long long>((detail::random_word(seed, i) * count) >> 64);
        out[i] = static_cast<T>(first + static_cast<long long>(k));
      }
    });
  } else {
    detail::parallel_chunks(n, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) {
        const double v = lo + (hi - lo) * detail::unit_interval(detail::random_word(seed, i));
        out[i] = from_double<T>(v < hi ? v : lo);  // (hi - lo) * u can round up to hi
      }
    });
  }
  return out;
}

// n values from a normal distribution (mean, stddev), rounded to T (Box-Muller on two words).
template <class T>
std::vector<T> random_normal(std::size_t n, std::uint64_t seed, double mean = 0.0,
                             double stddev = 1.0) {
  std::vector<T> out(n);
  detail::parallel_chunks(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const double u1 = 1.0 - detail::unit_interval(detail::random_word(seed, 2 * i));  // (0, 1]
      const double u2 = detail::unit_interval(detail::random_word(seed, 2 * i + 1));
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      out[i] = from_double<T>(mean + stddev * z);
    }
  });
  return out;
}

// The values of a host array as float64, for the CPU references.
template <class T>
std::vector<double> as_doubles(const std::vector<T>& v) {
  std::vector<double> out(v.size());
  detail::parallel_chunks(v.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) out[i] = DType<T>::to_double(v[i]);
  });
  return out;
}

}  // namespace course
