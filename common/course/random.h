// Deterministic random inputs.
//
// Every test draws fresh inputs from a seed: by default a new seed per run (so a kernel must
// compute the right function on any input, not on one lucky array), printed with every
// failure so the run can be repeated exactly with COURSE_SEED=<seed>.
#pragma once

#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "course/dtype.h"

namespace course {

// The seed of this process: COURSE_SEED if set, otherwise drawn once from the OS.
std::uint64_t run_seed();

// A seed for one input of one test: mixes the run seed with a per-input salt so that the
// inputs of one test differ from each other but are reproducible together.
inline std::uint64_t seed_for(std::uint64_t salt) {
  std::uint64_t z = run_seed() + 0x9e3779b97f4a7c15ull * (salt + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// n values uniform in [lo, hi), rounded to T (integers: uniform in [lo, hi] inclusive).
template <class T>
std::vector<T> random_uniform(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 gen(seed);
  std::vector<T> out(n);
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<long long> dist(static_cast<long long>(lo), static_cast<long long>(hi));
    for (auto& v : out) v = static_cast<T>(dist(gen));
  } else {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (auto& v : out) v = from_double<T>(dist(gen));
  }
  return out;
}

// n values from a normal distribution (mean, stddev), rounded to T.
template <class T>
std::vector<T> random_normal(std::size_t n, std::uint64_t seed, double mean = 0.0, double stddev = 1.0) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> dist(mean, stddev);
  std::vector<T> out(n);
  for (auto& v : out) v = from_double<T>(dist(gen));
  return out;
}

// The values of a host array as float64, for the CPU references.
template <class T>
std::vector<double> as_doubles(const std::vector<T>& v) {
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = DType<T>::to_double(v[i]);
  return out;
}

}  // namespace course
