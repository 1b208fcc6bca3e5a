// CPU references for Day 8's scans and sampling: an inclusive scan that wraps like int32, and
// the decisions of min-p / top-k / top-p sampling computed in float64, with the margin a float32
// GPU computation is allowed (lab.h of Day 8 defines the sampling rules).
//
// A sampled token is a discrete decision: float32 sums on the GPU and float64 sums here can
// disagree only when the decision is closer than the rounding errors to a boundary (a running
// sum within `tolerance` of top_p, or of u * M). So each reference returns, besides its answer,
// the answers a correct float32 kernel could also give; a test demands the exact token wherever
// that set holds one token, and membership in the lenient allowed set always.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace course::reference {

// y[i] = x[0] + ... + x[i] in int32 arithmetic that wraps around (as uint32: two's complement),
// which is what a GPU scan of int32 computes. Summing in int64 and casting would give the same.
inline std::vector<std::int32_t> inclusive_scan_wrapping(const std::vector<std::int32_t>& x) {
  std::vector<std::int32_t> y(x.size());
  std::uint32_t acc = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    acc += static_cast<std::uint32_t>(x[i]);
    y[i] = static_cast<std::int32_t>(acc);
  }
  return y;
}

// The threshold of a filter on one row, and how far float32 arithmetic may move it.
struct Threshold {
  double exact = 0.0;    // t in float64 (lab.h): the allowed tokens are those with p >= t
  double lenient = 0.0;  // the smallest t a float32 kernel may pick: every token with p >=
                         // lenient may be drawn; == exact when the set is certain
  bool certain() const { return lenient == exact; }
};

// min-p: t = min_p * max, the product rounded to float32 exactly as __fmul_rn does (the
// product of two floats is exact in float64; one rounding to float gives the same value).
inline Threshold min_p_threshold(const float* row, std::size_t vocab, float min_p) {
  float max = 0.0f;
  for (std::size_t i = 0; i < vocab; ++i) max = std::max(max, row[i]);
  const auto t = static_cast<double>(static_cast<float>(static_cast<double>(min_p) * max));
  return {t, t};
}

// top-k: the k-th largest probability, counting repeats; 0 (everything) when k >= vocab. Exact:
// no sum is involved.
inline Threshold top_k_threshold(const float* row, std::size_t vocab, std::int64_t k) {
  if (k >= static_cast<std::int64_t>(vocab)) return {0.0, 0.0};
  std::vector<float> v(row, row + vocab);
  std::nth_element(v.begin(), v.begin() + (k - 1), v.end(), std::greater<float>());
  const double t = v[static_cast<std::size_t>(k - 1)];
  return {t, t};
}

// top-p: walking down the probabilities from the largest, the first one at which the running
// sum (in float64) reaches top_p; 0 when the row adds up to less. `tolerance` (absolute, in
// probability) is how far a float32 running sum may be from the float64 one: the lenient
// threshold is the one for top_p + tolerance (a larger set), and the set is certain when
// top_p - tolerance gives the same threshold too.
inline Threshold top_p_threshold(const float* row, std::size_t vocab, double top_p,
                                 double tolerance) {
  std::vector<float> v(row, row + vocab);
  std::sort(v.begin(), v.end(), std::greater<float>());
  const auto threshold_for = [&](double target) {
    double sum = 0.0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      sum += v[i];
      if (sum >= target) return static_cast<double>(v[i]);
    }
    return 0.0;
  };
  const double exact = threshold_for(top_p);
  const double low = threshold_for(top_p + tolerance), high = threshold_for(top_p - tolerance);
  return {exact, low == high ? exact : low};
}

// The draw of lab.h for one row: with the allowed tokens p >= t, M their sum and T = u * M,
// the first index whose running sum of allowed probabilities exceeds T (else the last allowed
// token with p > 0). `tolerance` (relative to M) is how far the GPU's float32 running sums may
// be from these: every token whose interval [sum before it, sum after it) comes within
// tolerance * M of T could be drawn by a correct kernel. Returns the tokens that could be drawn,
// in index order, the float64 answer first... (`*exact` receives it). Empty only when no token
// has p > 0 among the allowed.
inline std::vector<std::int64_t> draw_candidates(const float* row, std::size_t vocab, double t,
                                                 float u, double tolerance, std::int64_t* exact) {
  double mass = 0.0;
  for (std::size_t i = 0; i < vocab; ++i)
    if (row[i] >= t) mass += row[i];
  const double target = static_cast<double>(u) * mass, margin = tolerance * mass;
  std::vector<std::int64_t> out;
  *exact = -1;
  double before = 0.0;
  std::int64_t last_nonzero = -1;
  for (std::size_t i = 0; i < vocab; ++i) {
    if (!(row[i] >= t) || row[i] == 0.0f) continue;
    const double after = before + row[i];
    if (*exact < 0 && after > target) *exact = static_cast<std::int64_t>(i);
    if (after > target - margin && before <= target + margin)
      out.push_back(static_cast<std::int64_t>(i));
    last_nonzero = static_cast<std::int64_t>(i);
    before = after;
  }
  if (*exact < 0) *exact = last_nonzero;
  // The fallback token (rounding left every running sum <= u * M) is a candidate when the last
  // running sum is within the margin of T.
  if (last_nonzero >= 0 && before <= target + margin &&
      std::find(out.begin(), out.end(), last_nonzero) == out.end())
    out.push_back(last_nonzero);
  return out;
}

}  // namespace course::reference
