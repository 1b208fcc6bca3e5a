// Day 2 tests. Each suite is one exercise of README.md; each test runs in its own process.
//
// The suites are parameterised by element type (float32, float16, bfloat16). A test runs one
// launcher over a list of sizes (or shapes) and stops at the first one that fails, so the message
// you read is about a single run. Every run draws fresh random inputs, poisons the output and the
// guard elements around it, and checks
//   - the output against a float64 CPU reference (course/reference/activation.h), bit for bit for
//     the copies, within the dtype's tolerance (course/dtype.h) for the activations;
//   - that the guard elements still hold their poison: nothing was written outside the output.
// Sizes include 1, primes (1009), 2^20 + 3 and others that are not multiples of the vector width
// (4 floats, 8 halves); pointers offset by one element (not 16-byte aligned); and, through
// max_blocks (lab.h), grids small enough that every thread goes round its loop many times.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "course/buffer.h"
#include "course/dtype.h"
#include "course/random.h"
#include "course/reference/activation.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using course::half;
namespace ref = course::reference;

// A copy computes nothing, it only moves values: every element must arrive bit for bit.
constexpr course::Tolerance kExact{0.0, 0.0};
// The dtype's own tolerance (course/dtype.h): float32 math, one rounding to T at the end.
constexpr course::Tolerance kDefault{-1.0, -1.0};

// Poisoned elements after the end of every output, which must keep their poison.
constexpr std::size_t kGuard = 64;

// GeLU's far negative tail: for x below about -2, 0.5 x (1 + tanh(u)) adds two nearly opposite
// numbers (tanh(u) -> -1), and float32 keeps only a few correct digits of a result close to 0.
// Next to the larger elements of a long output that error is invisible (the bounds of
// course::compare are relative to the output's size, its rms), but an output of one or a few
// elements has nothing else to be measured against: a correct kernel could fail on an unlucky
// draw. So outputs of fewer than kFewElements elements take their GeLU inputs from [-1, 3),
// where float32 GeLU is accurate to a few ulps (lesson §6, think question 5).
constexpr std::int64_t kFewElements = 16;
constexpr double kFewLo = -1.0, kFewHi = 3.0;

// ---------------------------------------------------------------------------------------------
// Element types as a test parameter (course/testing.h).
using DType = course::ElementType;
using course::dtype_name;
using course::dtype_param_name;
using course::kAllElementTypes;

// with_dtype(d, f) calls f(Tag<T>{}) for the element type T that d names; inside f,
// `using T = typename decltype(tag)::type;` recovers it.
template <class T>
struct Tag {
  using type = T;
};
template <class F>
void with_dtype(DType d, F&& f) {
  switch (d) {
    case DType::kFloat32:
      return f(Tag<float>{});
    case DType::kFloat16:
      return f(Tag<half>{});
    case DType::kBFloat16:
      return f(Tag<bfloat16>{});
  }
}

template <class T>
constexpr int kVecWidth = 16 / static_cast<int>(sizeof(T));

template <class T>
std::string launcher_name(const std::string& name) {
  return name + "<" + course::DType<T>::name + ">";
}

bool failed() { return ::testing::Test::HasFailure(); }

// True when every element outside [offset, offset + n) still holds the poison; otherwise one
// failure that names the first element written out of bounds.
template <class T>
bool expect_nothing_written_outside(const std::vector<T>& all, std::size_t offset, std::size_t n,
                                    const std::string& who, const std::string& output) {
  for (std::size_t k = 0; k < offset; ++k)
    if (!course::DType<T>::is_poison(all[k])) {
      ADD_FAILURE() << who << " wrote before the start of " << output << " (element "
                    << static_cast<std::int64_t>(k) - static_cast<std::int64_t>(offset)
                    << " changed): an index that starts too low, or a head that goes backwards";
      return false;
    }
  for (std::size_t k = offset + n; k < all.size(); ++k)
    if (!course::DType<T>::is_poison(all[k])) {
      ADD_FAILURE() << who << " wrote past the end of the " << n << "-element " << output
                    << " (element " << k - offset << " changed). A bounds test (i < n) is "
                    << "missing, or a whole vector was stored where fewer than "
                    << kVecWidth<T> << " elements were left: the tail must go element by "
                    << "element (lesson §5).";
      return false;
    }
  return true;
}

template <class T>
std::vector<T> slice(const std::vector<T>& all, std::size_t offset, std::size_t n) {
  return std::vector<T>(all.begin() + static_cast<std::ptrdiff_t>(offset),
                        all.begin() + static_cast<std::ptrdiff_t>(offset + n));
}

template <class T>
bool expect_match(const std::vector<T>& got, const std::vector<double>& want,
                  const course::CompareOptions& options) {
  const course::Comparison c = course::compare(got, want, options);
  if (!c.ok) ADD_FAILURE() << c.message << course::seed_hint();
  return c.ok;
}

// =============================================================================================
// Element-wise launchers: y[i] = f(x[i]) for 0 <= i < n.

// One launch: the size, offsets of x and y from a 16-byte-aligned allocation (in elements), and a
// cap on the grid. Written Launch{1009}.offsets(1, 1).blocks(3).
struct Launch {
  std::int64_t n = 0;
  std::size_t x_offset = 0, y_offset = 0;
  int max_blocks = 0;

  Launch offsets(std::size_t x, std::size_t y) const {
    Launch r = *this;
    r.x_offset = x;
    r.y_offset = y;
    return r;
  }
  Launch blocks(int b) const {
    Launch r = *this;
    r.max_blocks = b;
    return r;
  }
  std::string text() const {
    std::ostringstream s;
    s << "n = " << n;
    if (x_offset || y_offset)
      s << ", x + " << x_offset << ", y + " << y_offset << " (not 16-byte aligned)";
    if (max_blocks) s << ", max_blocks = " << max_blocks;
    return s.str();
  }
};

template <class T>
struct Elementwise {
  std::string name;  // the launcher, for messages
  std::string todo;  // where to look
  std::function<void(const T*, T*, std::int64_t, int)> launch;
  double (*reference)(double);  // f of one element, in float64
  course::Tolerance tolerance;
  double lo, hi;            // the range of the random inputs
  bool few_narrow = false;  // outputs of fewer than kFewElements: inputs from [kFewLo, kFewHi)
  std::string detail = "";  // more arguments, for messages: "stride = 8"
};

double identity(double v) { return v; }
double gelu_ref(double v) { return ref::gelu_tanh(v); }

template <class T>
Elementwise<T> coalesced_copy() {
  return {"copy_1_coalesced", "TODO(d02.1)", &d02::copy_1_coalesced<T>, identity, kExact, -1, 1};
}
template <class T>
Elementwise<T> strided_copy(std::int64_t stride) {
  return {"copy_1_strided",
          "TODO(d02.2)",
          [stride](const T* x, T* y, std::int64_t n, int b) {
            d02::copy_1_strided(x, y, n, stride, b);
          },
          identity,
          kExact,
          -1,
          1,
          false,
          "stride = " + std::to_string(stride)};
}
template <class T>
Elementwise<T> vectorized_copy() {
  return {"copy_2_vectorized", "TODO(d02.4)", &d02::copy_2_vectorized<T>, identity, kExact, -1, 1};
}
template <class T>
Elementwise<T> gelu_op() {
  // [-5, 5]: the curved part of GeLU and both of its nearly linear tails.
  return {"gelu", "TODO(d02.5)", &d02::gelu<T>, gelu_ref, kDefault, -5, 5, /*few_narrow=*/true};
}

// Runs op once on fresh random inputs and checks the output and the guards around it.
template <class T>
bool expect_run(const Elementwise<T>& op, const Launch& run) {
  const auto n = static_cast<std::size_t>(run.n);
  const bool narrow = op.few_narrow && run.n < kFewElements;
  const auto host_x = course::random_uniform<T>(n, course::seed_for(n + 7 * run.x_offset),
                                                narrow ? kFewLo : op.lo, narrow ? kFewHi : op.hi);
  DeviceBuffer<T> x(run.x_offset + n), y(run.y_offset + n + kGuard);
  x.upload(host_x, run.x_offset);
  y.poison();
  op.launch(x.data() + run.x_offset, y.data() + run.y_offset, run.n, run.max_blocks);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<T> all = y.download();

  std::vector<double> want = course::as_doubles(host_x);
  for (double& v : want) v = op.reference(v);
  course::CompareOptions options;
  options.tolerance = op.tolerance;
  options.what = "y of " + launcher_name<T>(op.name) + " (" + run.text() +
                 (op.detail.empty() ? "" : ", " + op.detail) + "; " + op.todo + ")";
  const bool values_ok = expect_match(slice(all, run.y_offset, n), want, options);
  const bool bounds_ok =
      expect_nothing_written_outside(all, run.y_offset, n, launcher_name<T>(op.name), "y");
  return values_ok && bounds_ok;
}

template <class T>
void expect_runs(const Elementwise<T>& op, std::initializer_list<Launch> runs) {
  for (const Launch& run : runs)
    if (!expect_run(op, run)) return;  // one failing run is enough to read
}

// ---------------------------------------------------------------- Exercise 1: coalesced copy
class CoalescedCopy : public course::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(CoalescedCopy, CopiesEveryElementExactly) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_runs(coalesced_copy<T>(), {Launch{1009}, Launch{(1 << 20) + 3}, Launch{33}, Launch{1}});
  });
}

TEST_P(CoalescedCopy, IsCorrectWhenEveryThreadLoops) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_runs(coalesced_copy<T>(), {Launch{1009}.blocks(1), Launch{(1 << 20) + 3}.blocks(3)});
  });
}
INSTANTIATE_TEST_SUITE_P(DTypes, CoalescedCopy, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);

// ---------------------------------------------------------------- Exercise 2: strided copy
// The tests check that every element is copied, not how: the benchmark (BM_copy_1_strided)
// shows what the access pattern costs.
class StridedCopy : public course::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(StridedCopy, CopiesEveryElementForEveryStride) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    // n, stride: stride 1 (the coalesced copy), strides that divide n and strides that leave a
    // short last row, a stride of one 32-byte sector or more, and strides of n and more.
    const std::pair<std::int64_t, std::int64_t> cases[] = {
        {1, 1},     {1009, 1}, {1009, 2},    {1009, 8},  {1009, 33},
        {4096, 32}, {4096, 7}, {1000, 1000}, {10, 4000}, {(1 << 20) + 3, 64}};
    for (const auto& [n, stride] : cases)
      if (!expect_run(strided_copy<T>(stride), Launch{n})) return;
  });
}

TEST_P(StridedCopy, IsCorrectWhenEveryThreadLoops) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    if (!expect_run(strided_copy<T>(7), Launch{1009}.blocks(1))) return;
    expect_run(strided_copy<T>(32), Launch{(1 << 20) + 3}.blocks(3));
  });
}
INSTANTIATE_TEST_SUITE_P(DTypes, StridedCopy, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);

// ---------------------------------------------------------------- Exercise 3: the vector type
class VectorType : public ::testing::TestWithParam<DType> {};

// Host only: the compiler's sizeof and alignof of your Vec16<T>. Runs without a GPU.
TEST_P(VectorType, IsSixteenBytesAlignedToSixteenBytes) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    const d02::VecLayout layout = d02::vec16_layout<T>();
    const std::string type = std::string("Vec16<") + course::DType<T>::name + ">";
    EXPECT_EQ(layout.bytes, 16u)
        << "sizeof(" << type << ") is " << layout.bytes << " bytes: it must hold 16 / sizeof(T) = "
        << kVecWidth<T> << " elements of T and nothing else (TODO d02.3a).";
    EXPECT_EQ(layout.alignment, 16u)
        << "alignof(" << type << ") is " << layout.alignment << ": declare the struct "
        << "alignas(sizeof(T) * N) (TODO d02.3a). Without it the compiler cannot assume a Vec16 "
        << "is 16-byte aligned and splits each load and store into " << 16 / layout.alignment
        << " smaller ones (lesson §4).";
  });
}

// The given kernel reverse_within_vectors loads each 16-byte vector with your load(), reverses
// it with operator[] and writes it with your store().
class VectorTypeOnGpu : public course::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(VectorTypeOnGpu, LoadsAndStoresWholeVectors) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr std::size_t V = kVecWidth<T>;
    for (const std::size_t vectors : {std::size_t{1}, std::size_t{37}, std::size_t{4099}}) {
      const std::size_t n = vectors * V;
      const auto host_x = course::random_uniform<T>(n, course::seed_for(300 + vectors));
      DeviceBuffer<T> x(host_x), y(n + kGuard);
      y.poison();
      d02::reverse_within_vectors(x.data(), y.data(), static_cast<std::int64_t>(vectors));
      COURSE_CUDA_CHECK(cudaDeviceSynchronize());
      const std::vector<T> all = y.download();
      const std::vector<double> xs = course::as_doubles(host_x);
      std::vector<double> want(n);
      for (std::size_t i = 0; i < n; ++i) want[i] = xs[i / V * V + (V - 1 - i % V)];
      course::CompareOptions options;
      options.tolerance = kExact;
      options.cols = static_cast<std::int64_t>(V);  // [vector, element]
      options.what = "y of reverse_within_vectors<" + std::string(course::DType<T>::name) +
                     "> with " + std::to_string(vectors) + " vectors (it calls your Vec::load " +
                     "and Vec::store: TODO d02.3b, d02.3c)";
      if (!expect_match(slice(all, 0, n), want, options)) return;
      if (!expect_nothing_written_outside(all, 0, n, "Vec::store", "y")) return;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(DTypes, VectorType, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);
INSTANTIATE_TEST_SUITE_P(DTypes, VectorTypeOnGpu, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);

// ---------------------------------------------------------------- Exercise 4: vectorized copy
class VectorizedCopy : public course::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(VectorizedCopy, CopiesSizesThatAreMultiplesOfTheVectorWidth) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_runs(vectorized_copy<T>(), {Launch{8}, Launch{4096}, Launch{1 << 20}});
  });
}

TEST_P(VectorizedCopy, HandlesTailNotMultipleOfVectorWidth) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    // A size with whole vectors and a tail first: a missing tail then reads as such.
    expect_runs(vectorized_copy<T>(),
                {Launch{1009}, Launch{(1 << 20) + 3}, Launch{7}, Launch{3}, Launch{1}});
  });
}

// x + 1 and y + 1 are misaligned by the same amount: the launcher copies a head of a few
// elements with the V = 1 kernel, then the rest with 16-byte vectors from an aligned address.
TEST_P(VectorizedCopy, HandlesPointersNotAlignedTo16Bytes) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_runs(vectorized_copy<T>(),
                {Launch{1009}.offsets(1, 1), Launch{1009}.offsets(2, 2),
                 Launch{(1 << 20) + 3}.offsets(1, 1), Launch{5}.offsets(1, 1)});
  });
}

// x + 1 and y: no head aligns both, so the launcher runs the V = 1 kernel over everything.
TEST_P(VectorizedCopy, HandlesPointersMisalignedByDifferentAmounts) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_runs(vectorized_copy<T>(), {Launch{1009}.offsets(1, 0), Launch{1009}.offsets(0, 3),
                                       Launch{(1 << 20) + 3}.offsets(1, 2)});
  });
}

// Sizes one either side of a multiple of the vector width: a tail handled as a whole vector
// writes up to V - 1 elements past the end, into the guard.
TEST_P(VectorizedCopy, DoesNotWritePastTheEnd) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_runs(vectorized_copy<T>(), {Launch{4095}, Launch{4097}, Launch{17}, Launch{15},
                                       Launch{9}, Launch{5}, Launch{3}});
  });
}

TEST_P(VectorizedCopy, IsCorrectWhenEveryThreadLoops) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_runs(vectorized_copy<T>(),
                {Launch{(1 << 20) + 3}.blocks(1), Launch{(1 << 20) + 3}.blocks(3),
                 Launch{1009}.offsets(1, 1).blocks(1)});
  });
}
INSTANTIATE_TEST_SUITE_P(DTypes, VectorizedCopy, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);

// ---------------------------------------------------------------- Exercise 5: GeLU
class Gelu : public course::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(Gelu, MatchesTheReferenceForEverySize) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_runs(gelu_op<T>(),
                {Launch{1009}, Launch{4096}, Launch{(1 << 20) + 3}, Launch{7}, Launch{1}});
  });
}

TEST_P(Gelu, HandlesPointersNotAlignedTo16Bytes) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_runs(gelu_op<T>(), {Launch{1009}.offsets(1, 1), Launch{1009}.offsets(1, 0),
                               Launch{(1 << 20) + 3}.offsets(1, 1)});
  });
}

TEST_P(Gelu, IsCorrectWhenEveryThreadLoops) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_runs(gelu_op<T>(),
                {Launch{(1 << 20) + 3}.blocks(3), Launch{1009}.offsets(1, 1).blocks(1)});
  });
}
INSTANTIATE_TEST_SUITE_P(DTypes, Gelu, ::testing::ValuesIn(kAllElementTypes), dtype_param_name);

// =============================================================================================
// Row launchers: [rows, cols] matrices, row-major.

// One run: the shape, an offset (in elements) of every pointer from a 16-byte-aligned
// allocation, and a cap on the grid. Written Shape{33, 1000}.offset(1).blocks(3).
struct Shape {
  std::int64_t rows = 0, cols = 0;
  std::size_t offset_elements = 0;
  int max_blocks = 0;

  Shape offset(std::size_t e) const {
    Shape s = *this;
    s.offset_elements = e;
    return s;
  }
  Shape blocks(int b) const {
    Shape s = *this;
    s.max_blocks = b;
    return s;
  }
  std::size_t size() const { return static_cast<std::size_t>(rows * cols); }
  std::string text(const char* cols_name = "cols") const {
    std::ostringstream s;
    s << "rows = " << rows << ", " << cols_name << " = " << cols;
    if (offset_elements) s << ", every pointer + " << offset_elements << " (not 16-byte aligned)";
    if (max_blocks) s << ", max_blocks = " << max_blocks;
    return s.str();
  }
};

// An input of `n` random values in [lo, hi), placed `offset` elements into its buffer.
template <class T>
struct Input {
  std::vector<T> host;
  DeviceBuffer<T> device;
  std::size_t offset;

  Input(std::size_t n, std::size_t off, std::uint64_t salt, double lo, double hi)
      : host(course::random_uniform<T>(n, course::seed_for(salt), lo, hi)),
        device(off + n),
        offset(off) {
    device.upload(host, off);
  }
  const T* data() const { return device.data() + offset; }
};

// An output of `n` elements, poisoned, with guards on both sides.
template <class T>
struct Output {
  DeviceBuffer<T> device;
  std::size_t offset, n;

  Output(std::size_t count, std::size_t off) : device(off + count + kGuard), offset(off), n(count) {
    device.poison();
  }
  T* data() { return device.data() + offset; }
  // Downloads the output; checks it against want and the guards. False on any failure.
  bool expect(const std::vector<double>& want, std::int64_t cols, const std::string& who,
              const std::string& name, const std::string& what) const {
    const std::vector<T> all = device.download();
    course::CompareOptions options;
    options.cols = cols;
    options.what = what;
    const bool values_ok = expect_match(slice(all, offset, n), want, options);
    return expect_nothing_written_outside(all, offset, n, who, name) && values_ok;
  }
};

// ---------------------------------------------------------------- Exercise 6: add-bias + GeLU
// x in [-3, 3) and a bias in [-1, 1): sums over GeLU's curved part and its tails (for outputs of
// fewer than kFewElements elements, x in [-0.5, 2) and a bias in [-0.5, 1): sums in [-1, 3)).
template <class T>
bool expect_add_bias_gelu(const Shape& s, bool fused) {
  const std::string who = launcher_name<T>(fused ? "add_bias_gelu_fused" : "add_bias_gelu_unfused");
  const bool few = static_cast<std::int64_t>(s.size()) < kFewElements;
  const Input<T> x(s.size(), s.offset_elements, 600 + s.size(), few ? -0.5 : -3.0, few ? 2.0 : 3.0);
  const Input<T> bias(static_cast<std::size_t>(s.cols), s.offset_elements, 601 + s.size(),
                      few ? -0.5 : -1.0, 1.0);
  Output<T> y(s.size(), s.offset_elements), tmp(s.size(), s.offset_elements);
  if (fused) {
    d02::add_bias_gelu_fused(x.data(), bias.data(), y.data(), s.rows, s.cols, s.max_blocks);
  } else {
    d02::add_bias_gelu_unfused(x.data(), bias.data(), tmp.data(), y.data(), s.rows, s.cols,
                               s.max_blocks);
  }
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());

  const std::vector<double> xs = course::as_doubles(x.host), bs = course::as_doubles(bias.host);
  if (fused)
    return y.expect(ref::add_bias_gelu(xs, bs), s.cols, who, "y",
                    "y of " + who + " (" + s.text() + "; TODO d02.6b)");

  // The unfused chain stores x + bias as T in tmp, and GeLU reads it back from there: the
  // reference of y is GeLU of that rounded sum.
  std::vector<double> sum(s.size()), want_y(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    sum[i] = xs[i] + bs[i % static_cast<std::size_t>(s.cols)];
    want_y[i] = ref::gelu_tanh(course::round_through<T>(sum[i]));
  }
  if (!tmp.expect(sum, s.cols, launcher_name<T>("add_bias"), "tmp",
                  "tmp = x + bias, written by " + launcher_name<T>("add_bias") + " (" + s.text() +
                      "; TODO d02.6a)"))
    return false;
  return y.expect(want_y, s.cols, who, "y",
                  "y = gelu(tmp), written by your gelu of Exercise 5 (" + s.text() + ")");
}

template <class T>
void expect_add_bias_gelu(std::initializer_list<Shape> shapes, bool fused) {
  for (const Shape& s : shapes)
    if (!expect_add_bias_gelu<T>(s, fused)) return;
}

class AddBiasGeluUnfused : public course::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(AddBiasGeluUnfused, MatchesTheReferenceForEveryShape) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_add_bias_gelu<T>({Shape{1, 1}, Shape{5, 1009}, Shape{33, 1000}, Shape{257, 4099}},
                            /*fused=*/false);
  });
}

TEST_P(AddBiasGeluUnfused, HandlesPointersNotAlignedTo16Bytes) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_add_bias_gelu<T>({Shape{33, 1000}.offset(1), Shape{5, 1009}.offset(1)},
                            /*fused=*/false);
  });
}

TEST_P(AddBiasGeluUnfused, IsCorrectWhenEveryThreadLoops) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_add_bias_gelu<T>({Shape{257, 4096}.blocks(3), Shape{1000, 1001}.blocks(1)},
                            /*fused=*/false);
  });
}
INSTANTIATE_TEST_SUITE_P(DTypes, AddBiasGeluUnfused, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);

class AddBiasGeluFused : public course::GpuTest, public ::testing::WithParamInterface<DType> {};

// Odd and prime column counts (7, 1009, 4099) take the element-by-element kernel; multiples of
// 8 the 16-byte one.
TEST_P(AddBiasGeluFused, MatchesTheReferenceForEveryShape) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_add_bias_gelu<T>({Shape{1, 1}, Shape{1, 7}, Shape{7, 1}, Shape{5, 1009}, Shape{33, 1000},
                             Shape{1000, 24}, Shape{64, 4096}, Shape{257, 4099}},
                            /*fused=*/true);
  });
}

TEST_P(AddBiasGeluFused, HandlesPointersNotAlignedTo16Bytes) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_add_bias_gelu<T>(
        {Shape{33, 1000}.offset(1), Shape{64, 4096}.offset(1), Shape{5, 1009}.offset(1)},
        /*fused=*/true);
  });
}

TEST_P(AddBiasGeluFused, IsCorrectWhenEveryThreadLoops) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    expect_add_bias_gelu<T>(
        {Shape{1000, 1000}.blocks(1), Shape{257, 4096}.blocks(3), Shape{1000, 1001}.blocks(3)},
        /*fused=*/true);
  });
}
INSTANTIATE_TEST_SUITE_P(DTypes, AddBiasGeluFused, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);

// ---------------------------------------------------------------- Exercise 7: SiLU-and-mul
// Shape{rows, d}: the input is [rows, 2 d] in [-5, 5), the output [rows, d].
template <class T>
bool expect_silu_and_mul(const Shape& s) {
  const std::string who = launcher_name<T>("silu_and_mul");
  const std::size_t d = static_cast<std::size_t>(s.cols);
  const Input<T> input(2 * s.size(), s.offset_elements, 700 + s.size(), -5.0, 5.0);
  Output<T> out(s.size(), s.offset_elements);
  d02::silu_and_mul(input.data(), out.data(), s.rows, s.cols, s.max_blocks);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  return out.expect(ref::silu_and_mul(course::as_doubles(input.host), d), s.cols, who, "out",
                    "out of " + who + " (" + s.text("d") + "; TODO d02.7)");
}

class SiluAndMul : public course::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(SiluAndMul, MatchesTheReferenceForEveryShape) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    for (const Shape& s : {Shape{1, 1}, Shape{1, 7}, Shape{3, 1009}, Shape{16, 4096},
                           Shape{257, 1000}, Shape{100, 4099}})
      if (!expect_silu_and_mul<T>(s)) return;
  });
}

TEST_P(SiluAndMul, HandlesPointersNotAlignedTo16Bytes) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    for (const Shape& s : {Shape{16, 4096}.offset(1), Shape{3, 1009}.offset(1)})
      if (!expect_silu_and_mul<T>(s)) return;
  });
}

TEST_P(SiluAndMul, IsCorrectWhenEveryThreadLoops) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    for (const Shape& s : {Shape{1000, 1000}.blocks(1), Shape{257, 4096}.blocks(3)})
      if (!expect_silu_and_mul<T>(s)) return;
  });
}
INSTANTIATE_TEST_SUITE_P(DTypes, SiluAndMul, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);

}  // namespace
