// float64 CPU references for Day 3: the functions the GPU's special function unit approximates
// (exp2, log2, rsqrt, tanh), the segment-wise warp operations (sum, max, broadcast, inclusive
// scan over segments of 32 elements), and the two ways of saying how far an approximation is
// (relative error, and units in the last place of float32).
//
// Special values follow IEEE 754 and the C library, which is also what the PTX ISA specifies
// for the approximate instructions: exp2(-inf) = +0, log2(+-0) = -inf, log2(x < 0) = NaN,
// rsqrt(+0) = +inf, rsqrt(-0) = -inf, rsqrt(+inf) = +0, tanh(+-inf) = +-1; NaN in, NaN out.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace course::reference {

// ------------------------------------------------------------------ the four functions
inline double exp2(double x) { return std::exp2(x); }
inline double log2(double x) { return std::log2(x); }
// 1 / sqrt(x): sqrt(-0) = -0, so rsqrt(-0) = -inf, as IEEE 754's rSqrt and rsqrt.approx give.
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline double tanh(double x) { return std::tanh(x); }

// ------------------------------------------------------------------ measuring approximations

// |got - exact| / |exact|. Zero when they are equal (both infinite with one sign included);
// infinite when exact is 0 and got is not, or when exactly one of them is NaN or infinite.
inline double relative_error(double got, double exact) {
  if (std::isnan(got) || std::isnan(exact))
    return std::isnan(got) && std::isnan(exact) ? 0.0 : std::numeric_limits<double>::infinity();
  if (got == exact) return 0.0;
  if (std::isinf(got) || std::isinf(exact) || exact == 0.0)
    return std::numeric_limits<double>::infinity();
  return std::fabs(got - exact) / std::fabs(exact);
}

// |got - exact|, with the same conventions for NaN and infinities as relative_error.
inline double absolute_error(double got, double exact) {
  if (std::isnan(got) || std::isnan(exact))
    return std::isnan(got) && std::isnan(exact) ? 0.0 : std::numeric_limits<double>::infinity();
  if (got == exact) return 0.0;
  return std::fabs(got - exact);  // infinite when one of them is
}

// float32 values as integers that count upwards in value order: consecutive floats differ by
// one, -0 and +0 are both 0, +inf is FLT_MAX + 1. (IEEE 754 orders the non-negative floats
// like their bit patterns; the negative ones are mirrored.)
inline std::int64_t f32_ordinal(float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const std::int64_t magnitude = bits & 0x7fffffffu;
  return (bits >> 31) ? -magnitude : magnitude;
}

// How many float32 steps ("units in the last place") lie between got and the exact value
// rounded to float32. 0 means correctly rounded; the PTX ISA states ex2.approx.f32 as "at most
// 2 ulp from the correctly rounded result", which is ulp_distance_f32(got, exact) <= 2.
// Two NaNs are 0 apart; a NaN and a number are infinitely far apart.
inline double ulp_distance_f32(float got, double exact) {
  const float rounded = static_cast<float>(exact);  // round to nearest even (overflow -> inf)
  if (std::isnan(got) || std::isnan(rounded))
    return std::isnan(got) && std::isnan(rounded) ? 0.0 : std::numeric_limits<double>::infinity();
  const std::int64_t d = f32_ordinal(got) - f32_ordinal(rounded);
  return static_cast<double>(d < 0 ? -d : d);
}

// ------------------------------------------------------------------ warp segments
// The warp exercises split an array of n elements into segments of `segment` elements (32: one
// per warp); the last segment may be shorter. Lanes past the end hold the operation's identity
// (0 for sums, -inf for max), so they never change a result.

inline std::size_t segment_count(std::size_t n, std::size_t segment) {
  if (segment == 0) throw std::invalid_argument("segment length must be > 0");
  return (n + segment - 1) / segment;
}

// out[s] = x[s*segment] + ... + x[min((s+1)*segment, n) - 1]
inline std::vector<double> segment_sums(const std::vector<double>& x, std::size_t segment = 32) {
  std::vector<double> out(segment_count(x.size(), segment), 0.0);
  for (std::size_t i = 0; i < x.size(); ++i) out[i / segment] += x[i];
  return out;
}

// out[s] = the largest element of segment s, NaN when the segment holds a NaN (a NaN must reach
// the result: fmax/fmaxf would drop it).
inline std::vector<double> segment_max(const std::vector<double>& x, std::size_t segment = 32) {
  std::vector<double> out(segment_count(x.size(), segment),
                          -std::numeric_limits<double>::infinity());
  for (std::size_t i = 0; i < x.size(); ++i) {
    double& m = out[i / segment];
    if (std::isnan(x[i]) || x[i] > m) m = std::isnan(m) ? m : x[i];
  }
  return out;
}

// y[i] = x[start + src_lane] where start is the first index of i's segment; 0 when that index is
// past the end of x (the lane holds no element).
inline std::vector<double> segment_broadcast(const std::vector<double>& x, std::size_t src_lane,
                                             std::size_t segment = 32) {
  if (src_lane >= segment) throw std::invalid_argument("segment_broadcast: src_lane >= segment");
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t src = i / segment * segment + src_lane;
    y[i] = src < x.size() ? x[src] : 0.0;
  }
  return y;
}

// y[i] = x[start] + ... + x[i]: the inclusive prefix sum, restarting at every segment.
inline std::vector<double> segment_inclusive_scan(const std::vector<double>& x,
                                                  std::size_t segment = 32) {
  std::vector<double> y(x.size());
  double running = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i % segment == 0) running = 0.0;
    running += x[i];
    y[i] = running;
  }
  return y;
}

}  // namespace course::reference
