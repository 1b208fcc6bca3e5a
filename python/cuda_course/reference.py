"""float64 references of the operations python/bench_triton.py compares (Day 2's add-bias + GeLU,
Day 5's row softmax, Day 6's RMSNorm) and the course's comparison, in numpy: the formulas of
common/course/reference/ (activation.h, softmax.h, norm.h) and the rules of course/compare.h,
so that a result checked here passes or fails as it would in the C++ tests.

    ref = reference.softmax_rows(x64)            # x64: the inputs the GPU saw, as float64
    problem = reference.compare(got64, ref, "float32", "softmax")   # None, or what is wrong

Needs numpy (not PyTorch): the callers convert their tensors (t.double().cpu().numpy()).
"""

import math

import numpy as np

# (norm, elem) per output dtype: course::DType<T>::tolerance (common/course/dtype.h).
#   norm: bound on the relative L2 error ||got - ref|| / ||ref|| over the finite elements;
#   elem: bound on each element, |got - ref| <= elem * (|ref| + rms(ref)).
TOLERANCES = {"float32": (1e-5, 1e-4), "float16": (1e-3, 2e-3), "bfloat16": (8e-3, 1.6e-2)}

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715


def gelu_tanh(v):
    """GeLU, tanh approximation: 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))."""
    return 0.5 * v * (1.0 + np.tanh(SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v)))


def add_bias_gelu(x, bias):
    """y[r, c] = gelu(x[r, c] + bias[c]) for x [rows, cols] and bias [cols]."""
    return gelu_tanh(np.asarray(x, np.float64) + np.asarray(bias, np.float64)[None, :])


def softmax_rows(x):
    """Softmax of every row, exp(x - max) / sum(exp(x - max)), with PyTorch's answers for
    non-finite inputs (course/reference/softmax.h): -inf is a masked entry (0); a row of -inf,
    or one holding a NaN or +inf, is all NaN."""
    x = np.asarray(x, np.float64)
    y = np.full(x.shape, np.nan)
    if x.size == 0:
        return y
    poisoned = np.isnan(x).any(axis=1) | np.isposinf(x).any(axis=1)
    m = np.where(np.isnan(x), -np.inf, x).max(axis=1)
    ok = ~poisoned & (m != -np.inf)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(x[ok] - m[ok, None])  # exp(-inf) = 0: masked entries
        y[ok] = e / e.sum(axis=1, keepdims=True)  # the max contributes exp(0) = 1: sum >= 1
    return y


def rmsnorm(x, weight, eps):
    """y = x / sqrt(mean(x^2) + eps) * weight over each row of x [rows, hidden]."""
    x = np.asarray(x, np.float64)
    inv = 1.0 / np.sqrt((x * x).mean(axis=1, keepdims=True) + eps)
    return x * inv * np.asarray(weight, np.float64)[None, :]


def compare(got, ref, dtype, what="output", tolerance=None):
    """None when `got` (float64 values of a `dtype` output) matches the float64 reference `ref`
    within the dtype's tolerance (or `tolerance`, a (norm, elem) pair of its own, such as a
    log-sum-exp's); else what is wrong, in words, then the numbers. As course/compare.h: NaN
    never passes where the reference is finite (nor a finite value where it is NaN), every
    element must be within its bound and the whole within the norm bound."""
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    if got.shape != ref.shape:
        return f"{what}: shape {got.shape}, expected {ref.shape}"
    if got.size == 0:
        return None
    norm_tol, elem_tol = tolerance or TOLERANCES[dtype]
    finite_ref = np.isfinite(ref)
    rms = math.sqrt(float((ref[finite_ref] ** 2).mean())) if finite_ref.any() else 0.0
    nan_ref = np.isnan(ref)
    inf_ref = np.isinf(ref)
    bad_nonfinite = (nan_ref & ~np.isnan(got)) | (inf_ref & (got != ref)) | (
        finite_ref & ~np.isfinite(got))
    both = finite_ref & np.isfinite(got)
    diff = np.where(both, np.abs(got - ref), 0.0)
    allowed = elem_tol * (np.abs(ref) + rms)
    mismatch = both & ~(diff <= allowed)
    ref_sq = float((ref[finite_ref] ** 2).sum())
    err = math.sqrt(float((diff ** 2).sum()))
    rel = err / math.sqrt(ref_sq) if ref_sq > 0 else err
    if not bad_nonfinite.any() and not mismatch.any() and rel <= norm_tol:
        return None
    where = lambda i: tuple(int(k) for k in np.unravel_index(i, got.shape))  # noqa: E731
    if bad_nonfinite.any():
        i = int(np.flatnonzero(bad_nonfinite)[0])
        words = (f"{int(bad_nonfinite.sum())} elements are NaN or Inf where the reference is "
                 f"finite (or the reverse); the first at {where(i)}: got {got.flat[i]:.9g}, "
                 f"expected {ref.flat[i]:.9g}")
    elif mismatch.any():
        scaled = np.where(mismatch, diff / np.maximum(allowed, 1e-300), 0.0)
        i = int(np.argmax(scaled))
        words = (f"{int(mismatch.sum())} of {got.size} elements are outside {elem_tol:g} x "
                 f"(|ref| + rms(ref)); the worst at {where(i)}: got {got.flat[i]:.9g}, expected "
                 f"{ref.flat[i]:.9g}")
    else:
        words = "every element is within its bound, but not the whole"
    return f"{what} ({dtype}): {words}; relative L2 error {rel:.3g} (allowed {norm_tol:g})"
