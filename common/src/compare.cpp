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

}  // namespace course
