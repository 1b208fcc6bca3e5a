// The diagnosis behind course::compare: classify every element, then explain the pattern.
#include "course/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace course {
namespace {

enum class Verdict { kOk, kUnwritten, kNonFinite, kMismatch };

std::string position(std::int64_t i, std::int64_t cols) {
  std::ostringstream s;
  if (cols > 0) {
    s << "[" << i / cols << ", " << i % cols << "]";
  } else {
    s << i;
  }
  return s.str();
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.8g", v);
  return buf;
}

// True when the failing elements are exactly a suffix [first, n) of the output.
bool failures_form_suffix(const std::vector<Verdict>& verdicts, std::int64_t first) {
  for (std::size_t i = static_cast<std::size_t>(first); i < verdicts.size(); ++i)
    if (verdicts[i] == Verdict::kOk) return false;
  return true;
}

}  // namespace

Comparison compare_values(const std::vector<double>& got, const std::vector<bool>& poisoned,
                          const std::vector<double>& ref, Tolerance tol,
                          const CompareOptions& options) {
  Comparison c;
  const std::string& what = options.what;
  if (got.size() != ref.size()) {
    std::ostringstream m;
    m << what << " has " << got.size() << " elements but the reference has " << ref.size()
      << ": the test and the launcher disagree on the shape.";
    c.message = m.str();
    return c;
  }
  const std::size_t n = got.size();
  if (n == 0) {
    c.ok = true;
    return c;
  }

  // rms of the reference: the scale below which relative error per element stops meaning much.
  double ref_sq = 0.0;
  std::size_t finite_refs = 0;
  for (double r : ref)
    if (std::isfinite(r)) {
      ref_sq += r * r;
      ++finite_refs;
    }
  const double rms = finite_refs ? std::sqrt(ref_sq / static_cast<double>(finite_refs)) : 0.0;

  std::vector<Verdict> verdicts(n, Verdict::kOk);
  double err_sq = 0.0;
  std::vector<std::pair<double, std::size_t>> worst;  // (scaled error, index)
  for (std::size_t i = 0; i < n; ++i) {
    const double g = got[i], r = ref[i];
    Verdict v = Verdict::kOk;
    if (poisoned[i]) {
      v = Verdict::kUnwritten;
    } else if (std::isnan(r)) {
      if (!std::isnan(g)) v = Verdict::kNonFinite;  // the operation must propagate NaN
    } else if (std::isinf(r)) {
      if (g != r) v = Verdict::kNonFinite;
    } else if (!std::isfinite(g)) {
      v = Verdict::kNonFinite;
    } else {
      const double diff = std::fabs(g - r);
      err_sq += diff * diff;
      const double allowed = tol.elem * (std::fabs(r) + rms);
      if (diff > allowed) {
        v = Verdict::kMismatch;
        worst.emplace_back(allowed > 0 ? diff / allowed : diff, i);
      }
    }
    verdicts[i] = v;
    if (v != Verdict::kOk) {
      if (c.first_bad < 0) c.first_bad = static_cast<std::int64_t>(i);
      if (v == Verdict::kUnwritten) ++c.unwritten;
      if (v == Verdict::kNonFinite) ++c.bad_nonfinite;
      if (v == Verdict::kMismatch) ++c.mismatches;
    }
  }
  c.rel_error = ref_sq > 0 ? std::sqrt(err_sq / ref_sq) : std::sqrt(err_sq);
  const std::size_t bad = c.unwritten + c.bad_nonfinite + c.mismatches;
  c.ok = bad == 0 && c.rel_error <= tol.norm;
  if (c.ok) return c;

  std::ostringstream m;
  const std::int64_t first = c.first_bad;
  const bool suffix = first > 0 && failures_form_suffix(verdicts, first);
  // 1. The likely cause, in words.
  if (c.unwritten == n) {
    m << "No element of " << what << " was written: the kernel did not run or wrote somewhere "
      << "else. Is the TODO still there? Did the launch fail (grid of 0 blocks, too many threads)?";
  } else if (c.unwritten > 0 && suffix && c.unwritten == bad) {
    m << what << " was written up to index " << first - 1 << " but the last " << n - first
      << " elements (from " << position(first, options.cols) << " on) never were: the loop or "
      << "the grid stops early. Check the tail: n = " << n << " need not be a multiple of the "
      << "block size or the vector width.";
  } else if (c.unwritten > 0) {
    m << c.unwritten << " of " << n << " elements of " << what << " were never written (first at "
      << position(first, options.cols) << "): the grid does not cover every element. Check the "
      << "index computation, the bounds test and, for a grid-stride loop, the stride.";
  } else if (c.bad_nonfinite > 0) {
    m << c.bad_nonfinite << " elements of " << what << " are NaN or Inf where the reference is "
      << "finite, or the other way round (first at " << position(first, options.cols) << "). "
      << "Look for reads past the end of an input, uninitialised (shared) memory, overflow "
      << "(exp of a large value without subtracting the maximum), or a NaN that should have "
      << "propagated and did not.";
  } else if (suffix) {
    m << "The first " << first << " elements of " << what << " are right, but from "
      << position(first, options.cols) << " on they are wrong: check the tail handling (the "
      << "elements left over after the vectorized or tiled part).";
  } else if (c.mismatches == n) {
    m << "Every element of " << what << " differs from the reference: the formula is wrong, or "
      << "the inputs are read at the wrong index.";
  } else if (c.mismatches > 0) {
    m << c.mismatches << " of " << n << " elements of " << what << " differ from the reference "
      << "(first at " << position(first, options.cols) << "): look for an indexing mistake "
      << "(rows vs columns, a missing offset) or a race between threads.";
  } else {
    m << "Every element of " << what << " is close, but the error over the whole output is too "
      << "large: a precision problem, such as accumulating in a narrow type.";
  }
  // 2. The numbers.
  m << "\n  relative L2 error " << number(c.rel_error) << " (allowed " << number(tol.norm) << "); "
    << c.mismatches << " mismatched, " << c.unwritten << " never written, " << c.bad_nonfinite
    << " NaN/Inf, of " << n << " elements";
  if (first >= 0) {
    const auto f = static_cast<std::size_t>(first);
    m << "\n  first bad element " << position(first, options.cols) << ": expected "
      << number(ref[f]) << ", got "
      << (poisoned[f] ? std::string("<never written>") : number(got[f]));
  }
  std::sort(worst.begin(), worst.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  if (worst.size() > 1) {
    m << "\n  worst elements:";
    for (std::size_t k = 0; k < std::min<std::size_t>(worst.size(), 5); ++k) {
      const std::size_t i = worst[k].second;
      m << " " << position(static_cast<std::int64_t>(i), options.cols) << " expected "
        << number(ref[i]) << " got " << number(got[i]) << ";";
    }
  }
  c.message = m.str();
  return c;
}

// ---------------------------------------------------------------------------------------------
// Rounding to a 16-bit type.
namespace {

// The distance between consecutive values of the format around |v| (its ulp there); below the
// smallest normal value the subnormals' fixed spacing.
double format_spacing(double v, const Format16& format) {
  int e = 0;
  std::frexp(std::fabs(v), &e);  // |v| = m 2^e with m in [0.5, 1): |v| in [2^(e-1), 2^e)
  const int exponent = std::max(e - 1, format.min_exponent);
  return std::ldexp(1.0, exponent - (format.precision - 1));
}

double overflow_to_infinity(double magnitude, double v, const Format16& format) {
  const double r = magnitude > format.max_finite ? HUGE_VAL : magnitude;
  return std::copysign(r, v);
}

double round_away_from_zero(double v, const Format16& format) {
  if (!std::isfinite(v)) return v;
  const double step = format_spacing(v, format);
  return overflow_to_infinity(std::ceil(std::fabs(v) / step) * step, v, format);
}

std::string short_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.8g", v);
  return buf;
}

std::string long_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

}  // namespace

double round_nearest_even(double v, const Format16& format) {
  if (!std::isfinite(v)) return v;
  const double step = format_spacing(v, format);
  const double q = std::fabs(v) / step;  // exact: step is a power of two
  const double below = std::floor(q), rest = q - below;
  double r = below;
  if (rest > 0.5 || (rest == 0.5 && std::fmod(below, 2.0) != 0.0)) r = below + 1.0;
  return overflow_to_infinity(r * step, v, format);
}

double round_toward_zero(double v, const Format16& format) {
  if (!std::isfinite(v)) return v;
  const double step = format_spacing(v, format);
  // Truncation never overflows to infinity: it stops at the largest finite value.
  return std::copysign(std::min(std::floor(std::fabs(v) / step) * step, format.max_finite), v);
}

RoundingCheck check_rounding_values(const std::vector<double>& got,
                                    const std::vector<bool>& poisoned,
                                    const std::vector<double>& ref,
                                    const std::vector<double>& float_error, const Format16& format,
                                    const CompareOptions& options) {
  RoundingCheck c;
  const std::string& what = options.what;
  if (got.size() != ref.size() || float_error.size() != ref.size()) {
    std::ostringstream m;
    m << what << " has " << got.size() << " elements, the reference " << ref.size()
      << " and the error bounds " << float_error.size() << ": the test is inconsistent.";
    c.message = m.str();
    return c;
  }
  const std::size_t n = got.size();
  enum class Kind { kOk, kUnwritten, kTowardZero, kAway, kOneStep, kFar };
  std::vector<std::pair<std::size_t, Kind>> bad;  // (index, how it is wrong), in index order
  std::size_t within_one_step = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (poisoned[i]) {
      ++c.unwritten;
      bad.emplace_back(i, Kind::kUnwritten);
      continue;
    }
    const double r = ref[i], g = got[i];
    double expected = 0.0;
    if (std::isnan(r)) {
      ++c.checked;
      if (std::isnan(g)) continue;
    } else {
      const double err = std::fabs(float_error[i]);
      expected = round_nearest_even(r, format);
      if (!(std::isfinite(err) && round_nearest_even(r - err, format) == expected &&
            round_nearest_even(r + err, format) == expected))
        continue;  // the float32 result may lie on either side of a midpoint: not checked
      ++c.checked;
      if (g == expected) continue;
    }
    ++c.wrong;
    Kind kind = Kind::kFar;
    if (std::isfinite(r) && std::isfinite(g)) {
      if (g == round_toward_zero(r, format)) {
        kind = Kind::kTowardZero;
        ++c.toward_zero;
      } else if (g == round_away_from_zero(r, format)) {
        kind = Kind::kAway;
      } else if (std::fabs(g - expected) <= format_spacing(r, format)) {
        kind = Kind::kOneStep;
      }
      if (kind != Kind::kFar) ++within_one_step;
    }
    bad.emplace_back(i, kind);
  }
  if (!bad.empty()) c.first_bad = static_cast<std::int64_t>(bad.front().first);
  c.ok = bad.empty();
  if (c.ok) return c;

  const auto position = [&](std::size_t i) {
    std::ostringstream s;
    if (options.cols > 0) {
      s << "[" << static_cast<std::int64_t>(i) / options.cols << ", "
        << static_cast<std::int64_t>(i) % options.cols << "]";
    } else {
      s << i;
    }
    return s.str();
  };
  std::ostringstream m;
  // 1. The likely cause, in words.
  if (c.unwritten > 0) {
    m << c.unwritten << " of " << n << " elements of " << what << " were never written (first at "
      << position(bad.front().first) << "): the kernel did not store them.";
  } else if (c.toward_zero == c.wrong) {
    m << c.wrong << " of the " << c.checked << " checked elements of " << what
      << " are rounded toward zero instead of to the nearest " << format.name << ": convert with "
      << format.round_nearest << " / course::from_float, not a truncating conversion ("
      << (std::string(format.name) == "bfloat16" ? "__float2bfloat16_rz" : "__float2half_rz")
      << ", or dropping the low bits of the float).";
  } else if (within_one_step == c.wrong) {
    m << c.wrong << " of the " << c.checked << " checked elements of " << what << " are a "
      << format.name << " step away from the correctly rounded result, in both directions: the "
      << "float32 value before the final rounding is less precise than float32 arithmetic "
      << "allows. Keep every intermediate in float32 (one rounded to " << format.name
      << " on the way loses bits) and round once, when storing, with " << format.round_nearest
      << ".";
  } else {
    m << c.wrong << " of the " << c.checked << " checked elements of " << what
      << " are not the correctly rounded result (NaN or Inf, or more than one " << format.name
      << " step away): the float32 result itself is wrong.";
  }
  // 2. The numbers.
  m << "\n  " << c.checked << " of " << n << " elements checked (the others lie within the "
    << "float32 error bound of a rounding midpoint); " << c.wrong << " wrong, " << c.toward_zero
    << " rounded toward zero, " << c.unwritten << " never written";
  for (std::size_t k = 0; k < std::min<std::size_t>(bad.size(), 5); ++k) {
    const auto [i, kind] = bad[k];
    m << "\n  element " << position(i) << ": ";
    if (kind == Kind::kUnwritten) {
      m << "never written (the reference is " << long_number(ref[i]) << ")";
      continue;
    }
    m << "expected " << short_number(round_nearest_even(ref[i], format)) << " (the nearest "
      << format.name << " to " << long_number(ref[i]) << "), got " << short_number(got[i]);
    switch (kind) {
      case Kind::kTowardZero:
        m << " (rounded toward zero?)";
        break;
      case Kind::kAway:
        m << " (the other neighbour: rounded away from the nearest?)";
        break;
      case Kind::kOneStep:
        m << " (one step off)";
        break;
      default:
        m << " (more than one step off)";
        break;
    }
  }
  c.message = m.str();
  return c;
}

}  // namespace course
