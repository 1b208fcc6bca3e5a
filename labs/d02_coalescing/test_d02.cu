// Day 2 tests. Each suite is one exercise of README.md.
//
// What a kernel of this day can get wrong, and the test that sees it:
//   - sizes that are not a multiple of the vector width (4 floats, 8 halves), 1, primes: the
//     tail dropped or off by one: VectorizedCopy.HandlesTailNotMultipleOfVectorWidth,
//     Gelu.MatchesTheReferenceForEverySize, *.MatchesTheReferenceForEveryShape (cols 1, 7, 1009)
//   - the tail stored as a whole vector, or a row kernel without its column bound, writing past
//     the end: VectorizedCopy.DoesNotWritePastTheEnd and the guard elements every run checks
//     (course::expect_guards_untouched); memcheck is not run on Day 2
//   - pointers not 16-byte aligned (x + 1), or misaligned by different amounts (a 16-byte access
//     there faults): *.HandlesPointersNotAlignedTo16Bytes,
//     VectorizedCopy.HandlesPointersMisalignedByDifferentAmounts
//   - a grid-stride loop that steps by a block or a tile instead of the grid, or stops after one
//     pass (grids of 1 and 3 blocks): *.IsCorrectWhenEveryThreadLoops
//   - strides that divide n, leave a short last row, or exceed n: StridedCopy.*
//   - the vector type without alignas, or more than 16 bytes: VectorType (host), and the SASS
//     checks *_moves_16_bytes; load/store that are not one access: VectorTypeOnGpu
//   - an index or offset kept in 32 bits (i, row * stride + col, v * V, r * cols + col):
//     *LargeIndex (n = 2^31 + 2^24 + 17, rows * cols past 2^31)
//   - rounding toward zero instead of to nearest even (float16, bfloat16): *Rounding
//   - an extra rounding to T in the middle of a fused expression (x + bias, silu(gate)):
//     AddBiasGeluFusedPrecision, SiluAndMulRounding
//   - GeLU wrong on one side (|inner|), or through the unfused chain's rounded tmp:
//     Gelu.*, AddBiasGeluUnfused.*
//   - the launchers' limits (n, rows, cols, max_blocks >= 0, stride >= 1, 16-byte aligned
//     pointers for reverse_within_vectors): just outside throws, the first values inside work:
//     *.RejectsArgumentsOutsideItsLimits, VectorTypeOnGpu.GivenKernelRejectsMisalignedPointers
//
// What the tests read back from the code under test (device results, vec16_layout, exceptions)
// goes through an observation (course/observe.h), so that the grader can judge the student's
// values in the reference program.
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

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "course/buffer.h"
#include "course/dtype.h"
#include "course/large.h"
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

// Poisoned elements before and after every output (course::Guarded), which must keep their
// poison: 64, so that a whole block's worth of vectors stored past the end still lands in them.
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

// What to look at when an output's guard was written (course::expect_guards_untouched).
template <class T>
std::string guard_hint() {
  return "an index that starts too low or a head that goes backwards (before the start), a "
         "missing bounds test (i < n), or a whole vector stored where fewer than " +
         std::to_string(kVecWidth<T>) +
         " elements were left (past the end): the tail goes element by element (lesson §5)";
}

// Reads back a guarded output once: its values, and whether its guards still hold the poison
// (one failure naming `who` and `output` when not).
template <class T>
std::vector<T> read_guarded(const course::Guarded<T>& out, const std::string& who,
                            const std::string& output, bool& guards_ok) {
  const std::vector<T> all = out.buffer.read_back();
  guards_ok = course::expect_guards_untouched(all, out.offset, out.size, output + " of " + who,
                                              guard_hint<T>());
  return std::vector<T>(all.begin() + static_cast<std::ptrdiff_t>(out.offset),
                        all.begin() + static_cast<std::ptrdiff_t>(out.offset + out.size));
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
  DeviceBuffer<T> x(run.x_offset + n);
  x.upload(host_x, run.x_offset);
  course::Guarded<T> y(n, run.y_offset, kGuard);
  op.launch(x.data() + run.x_offset, y.data(), run.n, run.max_blocks);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  bool bounds_ok = false;
  const std::vector<T> got = read_guarded(y, launcher_name<T>(op.name), "y", bounds_ok);

  std::vector<double> want = course::as_doubles(host_x);
  for (double& v : want) v = op.reference(v);
  course::CompareOptions options;
  options.tolerance = op.tolerance;
  options.what = "y of " + launcher_name<T>(op.name) + " (" + run.text() +
                 (op.detail.empty() ? "" : ", " + op.detail) + "; " + op.todo + ")";
  const bool values_ok = expect_match(got, want, options);
  return values_ok && bounds_ok;
}

template <class T>
void expect_runs(const Elementwise<T>& op, std::initializer_list<Launch> runs) {
  for (const Launch& run : runs)
    if (!expect_run(op, run)) return;  // one failing run is enough to read
}

using course::expect_rejected;

// An element-wise launcher's limits: n = -1 and max_blocks = -1 (just outside) throw; n = 0 is
// accepted without touching a pointer (null ones here); n = 1 on a grid of 1 block (the first
// values inside that do work) is copied or computed right.
template <class T>
void expect_limits(const Elementwise<T>& op) {
  const std::string who = launcher_name<T>(op.name);
  DeviceBuffer<T> x(1), y(1);
  expect_rejected([&] { op.launch(x.data(), y.data(), -1, 0); }, who + "(n = -1)",
                  "n must be >= 0");
  expect_rejected([&] { op.launch(x.data(), y.data(), 1, -1); }, who + "(n = 1, max_blocks = -1)",
                  "max_blocks must be >= 0, 0 = the launcher's choice");
  COURSE_EXPECT_NO_THROW(op.launch(nullptr, nullptr, 0, 0));
  if (failed()) return;
  expect_run(op, Launch{1}.blocks(1));
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

TEST_P(CoalescedCopy, RejectsArgumentsOutsideItsLimits) {
  with_dtype(GetParam(),
             [](auto tag) { expect_limits(coalesced_copy<typename decltype(tag)::type>()); });
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

TEST_P(StridedCopy, RejectsArgumentsOutsideItsLimits) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    DeviceBuffer<T> x(1), y(1);
    expect_rejected([&] { d02::copy_1_strided(x.data(), y.data(), 1, 0); },
                    launcher_name<T>("copy_1_strided") + "(n = 1, stride = 0)",
                    "stride must be >= 1 (lab.h)");
    expect_limits(strided_copy<T>(1));  // stride = 1: the first stride inside
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
    const d02::VecLayout layout = course::observed(d02::vec16_layout<T>(), "vec16_layout");
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

// Runs reverse_within_vectors over `vectors` random vectors; checks y and the guard after it.
template <class T>
bool expect_reversed(std::size_t vectors) {
  constexpr std::size_t V = kVecWidth<T>;
  const std::size_t n = vectors * V;
  const auto host_x = course::random_uniform<T>(n, course::seed_for(300 + vectors));
  DeviceBuffer<T> x(host_x);
  course::Guarded<T> y(n, 0, kGuard);
  d02::reverse_within_vectors(x.data(), y.data(), static_cast<std::int64_t>(vectors));
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  bool bounds_ok = false;
  const std::vector<T> got = read_guarded(y, "Vec::store", "y", bounds_ok);
  const std::vector<double> xs = course::as_doubles(host_x);
  std::vector<double> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = xs[i / V * V + (V - 1 - i % V)];
  course::CompareOptions options;
  options.tolerance = kExact;
  options.cols = static_cast<std::int64_t>(V);  // [vector, element]
  options.what = "y of reverse_within_vectors<" + std::string(course::DType<T>::name) + "> with " +
                 std::to_string(vectors) + " vectors (it calls your Vec::load " +
                 "and Vec::store: TODO d02.3b, d02.3c)";
  return expect_match(got, want, options) && bounds_ok;
}

TEST_P(VectorTypeOnGpu, LoadsAndStoresWholeVectors) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    for (const std::size_t vectors : {std::size_t{1}, std::size_t{37}, std::size_t{4099}})
      if (!expect_reversed<T>(vectors)) return;
  });
}

// A 16-byte access at an address that is not a multiple of 16 faults, so the given launcher
// rejects such pointers (lab.h) before the kernel sees them; aligned ones must work.
TEST_P(VectorTypeOnGpu, GivenKernelRejectsMisalignedPointers) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    const std::string who = launcher_name<T>("reverse_within_vectors");
    DeviceBuffer<T> x(2 * kVecWidth<T>), y(2 * kVecWidth<T>);
    expect_rejected([&] { d02::reverse_within_vectors(x.data() + 1, y.data(), 1); },
                    who + "(x + 1)", "x must be 16-byte aligned");
    expect_rejected([&] { d02::reverse_within_vectors(x.data(), y.data() + 1, 1); },
                    who + "(y + 1)", "y must be 16-byte aligned");
    expect_rejected([&] { d02::reverse_within_vectors(x.data(), y.data(), -1); },
                    who + "(vectors = -1)", "vectors must be >= 0");
    COURSE_CUDA_CHECK(cudaDeviceSynchronize());
    expect_reversed<T>(1);
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

TEST_P(VectorizedCopy, RejectsArgumentsOutsideItsLimits) {
  with_dtype(GetParam(),
             [](auto tag) { expect_limits(vectorized_copy<typename decltype(tag)::type>()); });
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

TEST_P(Gelu, RejectsArgumentsOutsideItsLimits) {
  with_dtype(GetParam(), [](auto tag) { expect_limits(gelu_op<typename decltype(tag)::type>()); });
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

// An output of `n` elements, poisoned, with kGuard poisoned elements on both sides.
template <class T>
struct Output : course::Guarded<T> {
  Output(std::size_t count, std::size_t off) : course::Guarded<T>(count, off, kGuard) {}
  // Downloads the output; checks it against want and the guards. False on any failure.
  bool expect(const std::vector<double>& want, std::int64_t cols, const std::string& who,
              const std::string& name, const std::string& what) const {
    bool guards_ok = false;
    const std::vector<T> got = read_guarded(*this, who, name, guards_ok);
    course::CompareOptions options;
    options.cols = cols;
    options.what = what;
    const bool values_ok = expect_match(got, want, options);
    return guards_ok && values_ok;
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

// A row launcher's limits: rows = -1, cols = -1 and max_blocks = -1 (just outside) throw; an
// empty shape (rows = 0 or cols = 0) is accepted without touching a pointer (null ones here).
// launch(rows, cols, max_blocks, null): one call of the launcher, with null pointers if `null`.
void expect_row_limits(const std::string& who, const char* cols_name,
                       const std::function<void(std::int64_t, std::int64_t, int, bool)>& launch) {
  const std::string shape = std::string(", ") + cols_name + " = ";
  expect_rejected([&] { launch(-1, 1, 0, false); }, who + "(rows = -1" + shape + "1)",
                  "rows must be >= 0");
  expect_rejected([&] { launch(1, -1, 0, false); }, who + "(rows = 1" + shape + "-1)",
                  "the row length must be >= 0");
  expect_rejected([&] { launch(1, 1, -1, false); },
                  who + "(rows = 1" + shape + "1, max_blocks = -1)",
                  "max_blocks must be >= 0, 0 = the launcher's choice");
  COURSE_EXPECT_NO_THROW(launch(0, 1, 0, true));
  COURSE_EXPECT_NO_THROW(launch(1, 0, 0, true));
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
    expect_add_bias_gelu<T>({Shape{67, 4096}.blocks(3), Shape{250, 1001}.blocks(1)},
                            /*fused=*/false);
  });
}
// The limits, then the first shape inside (1 x 1 on a grid of 1 block).
template <class T>
void expect_add_bias_gelu_limits(bool fused) {
  DeviceBuffer<T> x(2), bias(2), tmp(2), y(2);
  const auto launch = [&](std::int64_t rows, std::int64_t cols, int max_blocks, bool null) {
    const T* xp = null ? nullptr : x.data();
    const T* bp = null ? nullptr : bias.data();
    T* tp = null ? nullptr : tmp.data();
    T* yp = null ? nullptr : y.data();
    if (fused) {
      d02::add_bias_gelu_fused(xp, bp, yp, rows, cols, max_blocks);
    } else {
      d02::add_bias_gelu_unfused(xp, bp, tp, yp, rows, cols, max_blocks);
    }
  };
  expect_row_limits(launcher_name<T>(fused ? "add_bias_gelu_fused" : "add_bias_gelu_unfused"),
                    "cols", launch);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  if (failed()) return;
  expect_add_bias_gelu<T>(Shape{1, 1}.blocks(1), fused);
}

TEST_P(AddBiasGeluUnfused, RejectsArgumentsOutsideItsLimits) {
  with_dtype(GetParam(),
             [](auto tag) { expect_add_bias_gelu_limits<typename decltype(tag)::type>(false); });
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
        {Shape{252, 1000}.blocks(1), Shape{67, 4096}.blocks(3), Shape{250, 1001}.blocks(3)},
        /*fused=*/true);
  });
}

TEST_P(AddBiasGeluFused, RejectsArgumentsOutsideItsLimits) {
  with_dtype(GetParam(),
             [](auto tag) { expect_add_bias_gelu_limits<typename decltype(tag)::type>(true); });
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
    for (const Shape& s : {Shape{252, 1000}.blocks(1), Shape{67, 4096}.blocks(3)})
      if (!expect_silu_and_mul<T>(s)) return;
  });
}

TEST_P(SiluAndMul, RejectsArgumentsOutsideItsLimits) {
  with_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    DeviceBuffer<T> input(2), out(1);
    expect_row_limits(launcher_name<T>("silu_and_mul"), "d",
                      [&](std::int64_t rows, std::int64_t d, int max_blocks, bool null) {
                        d02::silu_and_mul(null ? nullptr : input.data(),
                                          null ? nullptr : out.data(), rows, d, max_blocks);
                      });
    COURSE_CUDA_CHECK(cudaDeviceSynchronize());
    if (failed()) return;
    expect_silu_and_mul<T>(Shape{1, 1}.blocks(1));
  });
}
INSTANTIATE_TEST_SUITE_P(DTypes, SiluAndMul, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);

// =============================================================================================
// 64-bit indices (the *LargeIndex suites): arrays of just over 2^31 elements, where an index or
// offset computed in 32 bits wraps. They are filled on the GPU with a pattern the host recomputes
// at any index (course/large.h); the output is checked at the start, on both sides of 2^31, at
// the end and at a few hundred indices in between. bfloat16 halves the memory: 4 GiB per array.
// They run alone on the GPU (lab.json's serial_suites).
constexpr std::int64_t kLargeN = course::kLargeCount;  // 2^31 + 2^24 + 17
using Large = bfloat16;

// Runs an element-wise launcher on kLargeN elements with x and y `offset` elements past a
// 16-byte boundary, with the launcher's own grid, and checks y at the sampled indices.
template <class T>
void expect_large_elementwise(const Elementwise<T>& op, std::size_t offset) {
  const std::int64_t n = kLargeN;
  const auto count = static_cast<std::size_t>(n) + offset;
  DeviceBuffer<T> x(count), y(count);
  const course::Pattern p{course::seed_for(801), op.lo, op.hi};
  course::fill_pattern(x.data() + offset, n, p);
  course::poison_on_device(y.data(), static_cast<std::int64_t>(count));
  op.launch(x.data() + offset, y.data() + offset, n, 0);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto at = course::large_sample_indices(n, course::seed_for(802));
  std::vector<double> want(at.size());
  for (std::size_t k = 0; k < at.size(); ++k)
    want[k] = op.reference(course::pattern_double_value<T>(p, at[k]));
  course::CompareOptions options;
  options.tolerance = op.tolerance;
  options.what = "y of " + launcher_name<T>(op.name) + " (n = 2^31 + 2^24 + 17" +
                 (offset ? ", x + 1 and y + 1: not 16-byte aligned" : std::string()) +
                 (op.detail.empty() ? "" : ", " + op.detail) + "; " + op.todo + ")";
  COURSE_EXPECT_SAMPLES_MATCH(course::gather(y.data() + offset, n, at), want, at, options);
  if (offset > 0)
    EXPECT_TRUE(course::DType<T>::is_poison(course::gather(y.data(), 1, {0})[0]))
        << launcher_name<T>(op.name) << " wrote the element before y: an index went negative";
}

constexpr std::size_t kLargeElementwiseBytes = 2 * (kLargeN + 1) * sizeof(Large);  // x, y: 8 GiB

class CoalescedCopyLargeIndex : public course::GpuTest {};

TEST_F(CoalescedCopyLargeIndex, CopiesElementsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeElementwiseBytes);
  expect_large_elementwise(coalesced_copy<Large>(), 0);
}

class StridedCopyLargeIndex : public course::GpuTest {};

TEST_F(StridedCopyLargeIndex, CopiesElementsPastTwoToThe31) {
  // Element i = row * stride + col: row * stride reaches 2^31.
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeElementwiseBytes);
  expect_large_elementwise(strided_copy<Large>(3), 0);
}

class VectorizedCopyLargeIndex : public course::GpuTest {};

TEST_F(VectorizedCopyLargeIndex, CopiesElementsPastTwoToThe31AlignedOrNot) {
  // The 16-byte path with a tail (n is not a multiple of 8), then the head + body split.
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeElementwiseBytes);
  expect_large_elementwise(vectorized_copy<Large>(), 0);
  if (HasFailure()) return;
  expect_large_elementwise(vectorized_copy<Large>(), 1);
}

class GeluLargeIndex : public course::GpuTest {};

TEST_F(GeluLargeIndex, ComputesElementsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeElementwiseBytes);
  expect_large_elementwise(gelu_op<Large>(), 0);
}

// The row launchers on [rows, cols] of just over 2^31 elements: cols = 4096 takes the 16-byte
// path, cols = 4099 the element-by-element one. The flat index r * cols + c passes 2^31 in the
// last rows.
const Shape kLargeShapes[] = {Shape{course::large_rows(4096), 4096},
                              Shape{course::large_rows(4099), 4099}};
constexpr std::size_t kLargeRowBytes = 2 * (course::kLargeCount + 4099) * sizeof(Large);  // 8 GiB

// Runs add_bias (fused = false) or add_bias_gelu_fused on one large shape and checks y at the
// sampled indices against the reference of x + bias, or of gelu(x + bias).
void expect_large_add_bias(const Shape& s, bool fused) {
  using T = Large;
  const std::int64_t n = s.rows * s.cols;
  const std::string who = launcher_name<T>(fused ? "add_bias_gelu_fused" : "add_bias");
  DeviceBuffer<T> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
  const course::Pattern px{course::seed_for(811), -3.0, 3.0};
  const auto bias =
      course::random_uniform<T>(static_cast<std::size_t>(s.cols), course::seed_for(812), -1.0, 1.0);
  DeviceBuffer<T> dbias(bias);
  course::fill_pattern(x.data(), n, px);
  course::poison_on_device(y.data(), n);
  if (fused) {
    d02::add_bias_gelu_fused(x.data(), dbias.data(), y.data(), s.rows, s.cols);
  } else {
    d02::add_bias(x.data(), dbias.data(), y.data(), s.rows, s.cols);
  }
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const auto at = course::large_sample_indices(n, course::seed_for(813));
  std::vector<double> want(at.size());
  for (std::size_t k = 0; k < at.size(); ++k) {
    const double sum = course::pattern_double_value<T>(px, at[k]) +
                       course::to_double(bias[static_cast<std::size_t>(at[k] % s.cols)]);
    want[k] = fused ? ref::gelu_tanh(sum) : sum;
  }
  course::CompareOptions options;
  options.cols = s.cols;
  options.what =
      "y of " + who + " (" + s.text() + "; " + (fused ? "TODO d02.6b" : "TODO d02.6a") + ")";
  COURSE_EXPECT_SAMPLES_MATCH(course::gather(y.data(), n, at), want, at, options);
}

class AddBiasGeluLargeIndex : public course::GpuTest {};

TEST_F(AddBiasGeluLargeIndex, AddBiasReachesElementsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeRowBytes);
  for (const Shape& s : kLargeShapes) {
    expect_large_add_bias(s, /*fused=*/false);
    if (HasFailure()) return;
  }
}

TEST_F(AddBiasGeluLargeIndex, FusedKernelReachesElementsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeRowBytes);
  for (const Shape& s : kLargeShapes) {
    expect_large_add_bias(s, /*fused=*/true);
    if (HasFailure()) return;
  }
}

class SiluAndMulLargeIndex : public course::GpuTest {};

TEST_F(SiluAndMulLargeIndex, ReachesOutputsPastTwoToThe31) {
  // out is [rows, d] with rows * d > 2^31, so the input [rows, 2 d] passes 2^32 too.
  using T = Large;
  COURSE_SKIP_UNLESS_GPU_MEMORY(3 * (course::kLargeCount + 4099) * sizeof(T));  // 12 GiB
  for (const Shape& s : kLargeShapes) {
    const std::int64_t d = s.cols, n = s.rows * d;
    DeviceBuffer<T> input(static_cast<std::size_t>(2 * n)), out(static_cast<std::size_t>(n));
    const course::Pattern p{course::seed_for(821), -5.0, 5.0};
    course::fill_pattern(input.data(), 2 * n, p);
    course::poison_on_device(out.data(), n);
    d02::silu_and_mul(input.data(), out.data(), s.rows, d);
    COURSE_CUDA_CHECK(cudaDeviceSynchronize());
    const auto at = course::large_sample_indices(n, course::seed_for(822));
    std::vector<double> want(at.size());
    for (std::size_t k = 0; k < at.size(); ++k) {
      const std::int64_t r = at[k] / d, c = at[k] % d;
      want[k] = ref::silu(course::pattern_double_value<T>(p, r * 2 * d + c)) *
                course::pattern_double_value<T>(p, r * 2 * d + d + c);
    }
    course::CompareOptions options;
    options.cols = d;
    options.what =
        "out of " + launcher_name<T>("silu_and_mul") + " (" + s.text("d") + "; TODO d02.7b)";
    COURSE_EXPECT_SAMPLES_MATCH(course::gather(out.data(), n, at), want, at, options);
    if (HasFailure()) return;
  }
}

// =============================================================================================
// Rounding (the *Rounding suites): every kernel computes in float32 and rounds once, to the
// NEAREST T (lesson §6.2; from_float). A conversion that rounds toward zero is off by at most one
// step of T, which the tolerances above allow, so these tests ask for the exact 16-bit value
// wherever the float32 result cannot have crossed a rounding midpoint (course::check_rounding).
// Each bounds the float32 error of its kernel before the final rounding:
constexpr double kFloatUlp = 0x1p-24;  // float32's unit roundoff: half an ulp, relative
// GeLU with tanhf: tanhf is within 2 ulps (of 1, where |tanh| is near 1), an absolute error of
// 0.5 |x| 2^-23 in 0.5 x (1 + tanh u); 4 times that, plus 16 ulps of y for the polynomial and
// the products (a student's x / (1 + expf(-2u)) stays inside too).
double gelu_float_error(double x, double y) {
  return 16 * kFloatUlp * std::fabs(y) + std::fabs(x) * 0x1p-22;
}
// x + bias: one float32 addition, exact or rounded once.
constexpr double kAddBiasFloatError = 2 * kFloatUlp;
// silu(g) * up: expf (2 ulps; __expf about 8 for |g| <= 5), a division, a product: 32 ulps.
constexpr double kSiluFloatError = 32 * kFloatUlp;

const DType k16BitTypes[] = {DType::kFloat16, DType::kBFloat16};

// with_dtype for the 16-bit types only (a float32 output has no 16-bit rounding to check).
template <class F>
void with_16bit_dtype(DType d, F&& f) {
  if (d == DType::kFloat16) return f(Tag<half>{});
  if (d == DType::kBFloat16) return f(Tag<bfloat16>{});
  ADD_FAILURE() << "the rounding tests are for float16 and bfloat16 outputs";
}

template <class T>
bool expect_rounded_to_nearest(const std::vector<T>& got, const std::vector<double>& want,
                               const std::vector<double>& float_error,
                               const course::CompareOptions& options) {
  const course::RoundingCheck c = course::check_rounding(got, want, float_error, options);
  if (!c.ok) ADD_FAILURE() << c.message << course::seed_hint();
  // The bounds leave most elements far enough from a midpoint to be checked; if not, the test
  // itself is too lax to mean anything.
  EXPECT_GT(c.checked, got.size() / 2)
      << "only " << c.checked << " of " << got.size() << " elements of " << options.what
      << " could be checked: the test's float32 error bound is too wide for this dtype";
  return c.ok;
}

class GeluRounding : public course::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(GeluRounding, RoundsTheFloat32ResultToTheNearest16BitValue) {
  with_16bit_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    const std::size_t n = 8 * 4099 + 5;  // the 16-byte body and a tail
    const auto host_x = course::random_uniform<T>(n, course::seed_for(831), -5.0, 5.0);
    DeviceBuffer<T> x(host_x), y(n);
    y.poison();
    d02::gelu(x.data(), y.data(), static_cast<std::int64_t>(n));
    COURSE_CUDA_CHECK(cudaDeviceSynchronize());
    const auto got = y.read_back();
    const auto xs = course::as_doubles(host_x);
    std::vector<double> want(n), bound(n);
    for (std::size_t i = 0; i < n; ++i) {
      want[i] = ref::gelu_tanh(xs[i]);
      bound[i] = gelu_float_error(xs[i], want[i]);
    }
    course::CompareOptions options;
    options.what = "y of " + launcher_name<T>("gelu") + " (TODO d02.5)";
    if (!expect_match(got, want, options)) return;
    expect_rounded_to_nearest(got, want, bound, options);
  });
}
INSTANTIATE_TEST_SUITE_P(DTypes, GeluRounding, ::testing::ValuesIn(k16BitTypes), dtype_param_name);

// add_bias (6a) and add_bias_gelu_fused (6b) on one shape per path: cols = 1000 (16-byte) and
// cols = 1001 (element by element).
template <class T>
void expect_add_bias_rounding(bool fused) {
  for (const std::int64_t cols : {1000, 1001}) {
    const std::int64_t rows = 37;
    const auto n = static_cast<std::size_t>(rows * cols);
    const auto host_x = course::random_uniform<T>(n, course::seed_for(841), -3.0, 3.0);
    const auto host_b =
        course::random_uniform<T>(static_cast<std::size_t>(cols), course::seed_for(842), -1.0, 1.0);
    DeviceBuffer<T> x(host_x), bias(host_b), y(n);
    y.poison();
    if (fused) {
      d02::add_bias_gelu_fused(x.data(), bias.data(), y.data(), rows, cols);
    } else {
      d02::add_bias(x.data(), bias.data(), y.data(), rows, cols);
    }
    COURSE_CUDA_CHECK(cudaDeviceSynchronize());
    const auto got = y.read_back();
    const auto xs = course::as_doubles(host_x), bs = course::as_doubles(host_b);
    std::vector<double> want(n), bound(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double sum = xs[i] + bs[i % static_cast<std::size_t>(cols)];
      want[i] = fused ? ref::gelu_tanh(sum) : sum;
      bound[i] = fused ? gelu_float_error(sum, want[i]) : kAddBiasFloatError * std::fabs(sum);
    }
    course::CompareOptions options;
    options.cols = cols;
    options.what = "y of " + launcher_name<T>(fused ? "add_bias_gelu_fused" : "add_bias") +
                   " (rows = " + std::to_string(rows) + ", cols = " + std::to_string(cols) + "; " +
                   (fused ? "TODO d02.6b" : "TODO d02.6a") + ")";
    if (!expect_match(got, want, options)) return;
    if (!expect_rounded_to_nearest(got, want, bound, options)) return;
  }
}

class AddBiasGeluRounding : public course::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(AddBiasGeluRounding, AddBiasRoundsTheSumToTheNearest16BitValue) {
  with_16bit_dtype(GetParam(),
                   [](auto tag) { expect_add_bias_rounding<typename decltype(tag)::type>(false); });
}

TEST_P(AddBiasGeluRounding, FusedKernelRoundsTheFloat32ResultToTheNearest16BitValue) {
  with_16bit_dtype(GetParam(),
                   [](auto tag) { expect_add_bias_rounding<typename decltype(tag)::type>(true); });
}
INSTANTIATE_TEST_SUITE_P(DTypes, AddBiasGeluRounding, ::testing::ValuesIn(k16BitTypes),
                         dtype_param_name);

class SiluAndMulRounding : public course::GpuTest, public ::testing::WithParamInterface<DType> {};

TEST_P(SiluAndMulRounding, RoundsTheFloat32ResultToTheNearest16BitValue) {
  // silu(gate) * up is one float32 expression: rounding silu(gate) to T before the product is
  // an extra rounding, and shows here as results one step off in both directions.
  with_16bit_dtype(GetParam(), [](auto tag) {
    using T = typename decltype(tag)::type;
    for (const Shape& s : {Shape{37, 1000}, Shape{37, 1001}}) {
      const Input<T> input(2 * s.size(), 0, 851 + s.size(), -5.0, 5.0);
      Output<T> out(s.size(), 0);
      d02::silu_and_mul(input.data(), out.data(), s.rows, s.cols);
      COURSE_CUDA_CHECK(cudaDeviceSynchronize());
      const auto want =
          ref::silu_and_mul(course::as_doubles(input.host), static_cast<std::size_t>(s.cols));
      const auto got = out.read_back();
      std::vector<double> bound(want.size());
      for (std::size_t i = 0; i < want.size(); ++i) bound[i] = kSiluFloatError * std::fabs(want[i]);
      course::CompareOptions options;
      options.cols = s.cols;
      options.what =
          "out of " + launcher_name<T>("silu_and_mul") + " (" + s.text("d") + "; TODO d02.7)";
      if (!expect_match(got, want, options)) return;
      if (!expect_rounded_to_nearest(got, want, bound, options)) return;
    }
  });
}
INSTANTIATE_TEST_SUITE_P(DTypes, SiluAndMulRounding, ::testing::ValuesIn(k16BitTypes),
                         dtype_param_name);

// =============================================================================================
// The fused kernel's intermediate (AddBiasGeluFusedPrecision): 6b computes gelu of the FLOAT32
// sum x + bias (TODO d02.6b; lesson §7); only y is rounded to T. Rounding the sum to T first
// moves it by up to half a step of T, and where GeLU is steep relative to its value that is a
// visible error: for x + bias in [-3.25, -2.25), GeLU's relative slope |gelu'/gelu| is 2 to 3.5,
// so half a bfloat16 step (2^-7 there) changes y by up to 2.7% (float16: 0.35%), while a
// correct kernel is within the final rounding (2^-8, 2^-11 relative) plus its float32 error.
// Bias values in [-0.35, 0.35) have low bits of their own, so most sums are not values of T.
template <class T>
void expect_sum_kept_in_float32() {
  const double unit_roundoff = std::is_same_v<T, half> ? 0x1p-11 : 0x1p-8;  // of the output
  for (const std::int64_t cols : {1000, 1001}) {
    const std::int64_t rows = 64;
    const auto n = static_cast<std::size_t>(rows * cols), width = static_cast<std::size_t>(cols);
    const auto host_x = course::random_uniform<T>(n, course::seed_for(861), -2.9, -2.6);
    const auto host_b = course::random_uniform<T>(static_cast<std::size_t>(cols),
                                                  course::seed_for(862), -0.35, 0.35);
    DeviceBuffer<T> x(host_x), bias(host_b), y(n);
    y.poison();
    d02::add_bias_gelu_fused(x.data(), bias.data(), y.data(), rows, cols);
    COURSE_CUDA_CHECK(cudaDeviceSynchronize());
    const auto got = y.read_back();
    const auto xs = course::as_doubles(host_x), bs = course::as_doubles(host_b);
    std::vector<double> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = ref::gelu_tanh(xs[i] + bs[i % width]);
    course::CompareOptions options;
    options.cols = cols;
    options.what = "y of " + launcher_name<T>("add_bias_gelu_fused") +
                   " with x + bias in "
                   "[-3.25, -2.25) (rows = " +
                   std::to_string(rows) + ", cols = " + std::to_string(cols) + "; TODO d02.6b)";
    // First whether y was written at all (never written, NaN), with any finite error allowed: the
    // per-element bound below is what this test is about.
    course::CompareOptions written = options;
    written.tolerance = {std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
    if (!expect_match(got, want, written)) return;
    // Per element: the final rounding plus the float32 error of GeLU there, with 50% to spare.
    std::size_t bad = 0, worst = 0;
    double worst_ratio = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double sum = xs[i] + bs[i % width];
      const double allowed =
          1.5 * (unit_roundoff * std::fabs(want[i]) + gelu_float_error(sum, want[i]));
      const double ratio = std::fabs(course::to_double(got[i]) - want[i]) / allowed;
      if (ratio > 1.0) ++bad;
      if (ratio > worst_ratio) {
        worst_ratio = ratio;
        worst = i;
      }
    }
    if (bad == 0) continue;
    const double sum = xs[worst] + bs[worst % width];
    ADD_FAILURE() << bad << " of " << n << " elements of " << options.what << " are further "
                  << "from gelu(x + bias) than the final rounding to " << course::DType<T>::name
                  << " allows: the sum x + bias was rounded to " << course::DType<T>::name
                  << " before the GeLU. Keep it in float32, to_float(x) + to_float(bias), and "
                  << "round only gelu's result (TODO d02.6b).\n  worst: y[" << worst / width << ", "
                  << worst % width << "] = gelu(" << xs[worst] << " + " << bs[worst % width]
                  << " = " << sum << "): expected " << want[worst] << ", got "
                  << course::to_double(got[worst]) << " (" << worst_ratio
                  << " times the allowed error; the sum rounded to " << course::DType<T>::name
                  << " is " << course::round_through<T>(sum) << ")" << course::seed_hint();
    return;
  }
}

class AddBiasGeluFusedPrecision : public course::GpuTest,
                                  public ::testing::WithParamInterface<DType> {};

TEST_P(AddBiasGeluFusedPrecision, KeepsTheSumXPlusBiasInFloat32) {
  with_16bit_dtype(GetParam(),
                   [](auto tag) { expect_sum_kept_in_float32<typename decltype(tag)::type>(); });
}
INSTANTIATE_TEST_SUITE_P(DTypes, AddBiasGeluFusedPrecision, ::testing::ValuesIn(k16BitTypes),
                         dtype_param_name);

}  // namespace
