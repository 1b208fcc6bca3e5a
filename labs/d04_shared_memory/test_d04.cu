// Day 4 tests. Each suite is one exercise of README.md.
//
//   TransposeN...            the kernel against the float64 reference, for every shape and
//                            dtype: every element in its place, nothing written past the end
//   TransposeN...Layout      (3, 4, 5) the tile layout against a model of the 32 shared-memory
//                            banks: the warp's row writes and column reads of the lesson must be
//                            conflict-free. Pure host code: these run without a GPU.
//   TransposeN...Limits      the launchers' promises: negative sides and overlapping in and out
//                            throw, an empty matrix needs no pointer
//
// What a kernel of this day can get wrong, and the test that sees it:
//   - sides that are not a multiple of the 32-wide tile or of variant 5's 64-row tile, sides of
//     1 and primes: edge tiles must skip what lies outside the matrix:
//     TransposeN*.MovesEveryElementToItsTransposedPlace (1 x 777, 33 x 65, 1000 x 999, ...)
//   - the output's bounds tested against the input's (out_r < rows instead of < cols): the same
//     tests on shapes that are not square (33 x 65 and 65 x 33), and the guard after the output
//   - an edge tile that LOADS outside the matrix (the values are never stored): memcheck, graded
//     on Day 4; stores past the end: the guard after the output and memcheck
//   - no __syncthreads() between filling the tile and reading it (a race): racecheck, graded on
//     Day 4, and the tests when the race shows
//   - a layout that maps two elements to one place, wastes shared memory, or leaves a bank
//     conflict on the row write or the column read: TransposeN*Layout (host only)
//   - variant 5: a misaligned pointer, or rows or cols not a multiple of the vector width, on
//     the 16-byte path (a misaligned access faults): Transpose5Vectorized.HandlesPointersNot
//     AlignedTo16Bytes, the shapes 37 x 64 (output rows of 37) and 1000 x 999; a fallback that
//     stores whole vectors past a row's end: the same tests and the guard
//   - an index or offset computed in 32 bits (r * cols + c, c * rows + r, a row's start):
//     TransposeN*LargeIndex (33001 x 65537 and 33000 x 65528)
//   - the launchers' limits (rows, cols >= 0; in and out must not overlap): TransposeN*Limits
//
// What the tests read back from the code under test (device results, the tile_index_* layouts,
// exceptions) goes through an observation (course/observe.h), so that the grader can judge the
// student's values in the reference program.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "course/buffer.h"
#include "course/dtype.h"
#include "course/large.h"
#include "course/random.h"
#include "course/reference/transpose.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using course::half;

// A transpose computes nothing, it only moves values: every element must arrive bit for bit,
// so the comparison allows no error at all (not the dtype's rounding tolerance).
constexpr course::Tolerance kExact{0.0, 0.0};

// Elements after the end of the output that must keep their poison.
constexpr std::size_t kGuard = 64;

using DType = course::ElementType;  // element types as a test parameter (course/testing.h)
using course::dtype_name;
using course::dtype_param_name;
using course::kAllElementTypes;

// One variant of lab.h, for each element type.
template <class T>
using Launcher = void (*)(const T*, T*, std::int64_t, std::int64_t);

struct Variant {
  const char* name;
  const char* todo;
  Launcher<float> f32;
  Launcher<half> f16;
  Launcher<bfloat16> bf16;
};

const Variant kNaive{"transpose_1_naive", "TODO d04.1", &d04::transpose_1_naive<float>,
                     &d04::transpose_1_naive<half>, &d04::transpose_1_naive<bfloat16>};
const Variant kSmem{"transpose_2_smem", "TODO d04.2", &d04::transpose_2_smem<float>,
                    &d04::transpose_2_smem<half>, &d04::transpose_2_smem<bfloat16>};
const Variant kPadded{"transpose_3_padded", "TODO d04.3", &d04::transpose_3_padded<float>,
                      &d04::transpose_3_padded<half>, &d04::transpose_3_padded<bfloat16>};
const Variant kSwizzled{"transpose_4_swizzled", "TODO d04.4", &d04::transpose_4_swizzled<float>,
                        &d04::transpose_4_swizzled<half>, &d04::transpose_4_swizzled<bfloat16>};
const Variant kVectorized{"transpose_5_vectorized", "TODO d04.5",
                          &d04::transpose_5_vectorized<float>, &d04::transpose_5_vectorized<half>,
                          &d04::transpose_5_vectorized<bfloat16>};

struct Shape {
  DType dtype;
  std::int64_t rows, cols;
};

// How GoogleTest prints the parameters (instead of their bytes).
void PrintTo(const Shape& s, std::ostream* os) {
  *os << dtype_name(s.dtype) << " [" << s.rows << ", " << s.cols << "]";
}

// Sides of 1, primes, sides that are not multiples of the 32-wide tile or of variant 5's
// 64-row tile and 4- or 8-element vectors, and a few that are. 37 x 64: whole vectors along the
// input's rows but not along the output's (37 elements), so variant 5 must not take its 16-byte
// path; 1000 x 999 the other way round.
std::vector<Shape> shapes() {
  const std::pair<std::int64_t, std::int64_t> sides[] = {
      {1, 1},     {1, 777},    {777, 1},   {32, 32},   {33, 65}, {65, 33},
      {136, 200}, {1000, 999}, {4097, 31}, {31, 4097}, {37, 64}};
  std::vector<Shape> out;
  for (DType d : kAllElementTypes)
    for (const auto& [rows, cols] : sides) out.push_back({d, rows, cols});
  return out;
}

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  return dtype_name(info.param.dtype) + "_" + std::to_string(info.param.rows) + "x" +
         std::to_string(info.param.cols);
}

// Runs one launcher on a random [rows, cols] matrix and checks the [cols, rows] result against
// the reference, and that nothing after the output was written. `offset` shifts both pointers
// by that many elements (1: not 16-byte aligned).
template <class T>
void expect_transpose(Launcher<T> launch, const Variant& v, std::int64_t rows, std::int64_t cols,
                      std::size_t offset = 0) {
  const auto n = static_cast<std::size_t>(rows * cols);
  const auto host_in = course::random_uniform<T>(n, course::seed_for(1));
  DeviceBuffer<T> in(offset + n), out(offset + n + kGuard);
  in.upload(host_in, offset);
  out.poison();
  launch(in.data() + offset, out.data() + offset, rows, cols);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<T> all = out.read_back();
  const std::vector<T> got(all.begin() + static_cast<std::ptrdiff_t>(offset),
                           all.begin() + static_cast<std::ptrdiff_t>(offset + n));

  course::CompareOptions options;
  options.tolerance = kExact;
  options.cols = rows;  // the output is [cols, rows]: positions are reported as [row, col] of it
  options.what = std::string("the [") + std::to_string(cols) + ", " + std::to_string(rows) +
                 "] output of " + v.name + " (" + v.todo + ")";
  COURSE_EXPECT_MATCH(
      got,
      course::reference::transpose(course::as_doubles(host_in), static_cast<std::size_t>(rows),
                                   static_cast<std::size_t>(cols)),
      options);

  for (std::size_t k = 0; k < kGuard; ++k)
    if (!course::DType<T>::is_poison(all[offset + n + k])) {
      ADD_FAILURE() << v.name << " wrote past the end of the " << n << "-element output (out["
                    << n + k << "] changed): a store is missing its bounds test, or tests the "
                    << "output row against rows instead of cols";
      break;
    }
  for (std::size_t k = 0; k < offset; ++k)
    EXPECT_TRUE(course::DType<T>::is_poison(all[k]))
        << v.name << " wrote before the start of the output (out[-" << offset - k << "])";
}

void expect_transpose(const Variant& v, const Shape& s, std::size_t offset = 0) {
  switch (s.dtype) {
    case DType::kFloat32:
      return expect_transpose(v.f32, v, s.rows, s.cols, offset);
    case DType::kFloat16:
      return expect_transpose(v.f16, v, s.rows, s.cols, offset);
    case DType::kBFloat16:
      return expect_transpose(v.bf16, v, s.rows, s.cols, offset);
  }
}

class TransposeTest : public course::GpuTest, public ::testing::WithParamInterface<Shape> {};

// The limits every launcher checks (lab.h): a negative side, and in and out that overlap (a
// transpose cannot be done in place), throw course::InvalidArgument; an empty matrix is accepted
// without touching a pointer. What each call did is observed, so that the grader judges it. Then
// the first shape inside, 1 x 1, must be transposed right. The launchers are given: a student
// who changes one must keep its checks.
void expect_limits(const Variant& v) {
  DeviceBuffer<float> in(16), out(16);
  const auto rejected = [&](const std::function<void()>& call, const std::string& what,
                            const char* why) {
    const course::Thrown t = course::observed_throw<course::InvalidArgument>(call, "rejected call");
    EXPECT_TRUE(t.threw) << v.name << "(" << what << ") must throw course::InvalidArgument (" << why
                         << "): keep the given launcher's course::require. It "
                         << (t.threw_other ? "threw another exception: " + t.what
                                           : std::string("threw nothing"));
  };
  rejected([&] { v.f32(in.data(), out.data(), -1, 4); }, "rows = -1", "rows must be >= 0");
  rejected([&] { v.f32(in.data(), out.data(), 4, -1); }, "cols = -1", "cols must be >= 0");
  rejected([&] { v.f32(in.data(), in.data(), 4, 4); }, "out = in", "in and out must not overlap");
  rejected([&] { v.f32(in.data(), in.data() + 15, 4, 4); }, "out = in + 15",
           "in and out must not overlap, not even by one element");
  COURSE_EXPECT_NO_THROW(v.f32(nullptr, nullptr, 0, 4));
  COURSE_EXPECT_NO_THROW(v.f32(nullptr, nullptr, 4, 0));
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  if (::testing::Test::HasFailure()) return;
  expect_transpose(v.f32, v, 1, 1);
}

// ---------------------------------------------------------------- Exercise 1: naive

class Transpose1Naive : public TransposeTest {};
TEST_P(Transpose1Naive, MovesEveryElementToItsTransposedPlace) {
  expect_transpose(kNaive, GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, Transpose1Naive, ::testing::ValuesIn(shapes()), shape_name);

class Transpose1NaiveLimits : public course::GpuTest {};
TEST_F(Transpose1NaiveLimits, RejectsNegativeSidesAndOverlappingBuffers) { expect_limits(kNaive); }

// ---------------------------------------------------------------- Exercise 2: shared memory

class Transpose2Smem : public TransposeTest {};
TEST_P(Transpose2Smem, MovesEveryElementToItsTransposedPlace) {
  expect_transpose(kSmem, GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, Transpose2Smem, ::testing::ValuesIn(shapes()), shape_name);

class Transpose2SmemLimits : public course::GpuTest {};
TEST_F(Transpose2SmemLimits, RejectsNegativeSidesAndOverlappingBuffers) { expect_limits(kSmem); }

// ---------------------------------------------------------------- Exercise 3: padded

class Transpose3Padded : public TransposeTest {};
TEST_P(Transpose3Padded, MovesEveryElementToItsTransposedPlace) {
  expect_transpose(kPadded, GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, Transpose3Padded, ::testing::ValuesIn(shapes()), shape_name);

class Transpose3PaddedLimits : public course::GpuTest {};
TEST_F(Transpose3PaddedLimits, RejectsNegativeSidesAndOverlappingBuffers) {
  expect_limits(kPadded);
}

// ---------------------------------------------------------------- Exercise 4: swizzled

class Transpose4Swizzled : public TransposeTest {};
TEST_P(Transpose4Swizzled, MovesEveryElementToItsTransposedPlace) {
  expect_transpose(kSwizzled, GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, Transpose4Swizzled, ::testing::ValuesIn(shapes()), shape_name);

class Transpose4SwizzledLimits : public course::GpuTest {};
TEST_F(Transpose4SwizzledLimits, RejectsNegativeSidesAndOverlappingBuffers) {
  expect_limits(kSwizzled);
}

// ---------------------------------------------------------------- Exercise 5: vectorized

class Transpose5Vectorized : public TransposeTest {};
TEST_P(Transpose5Vectorized, MovesEveryElementToItsTransposedPlace) {
  expect_transpose(kVectorized, GetParam());
}
// in + 1 and out + 1 are not 16-byte aligned: the kernel must take its element-by-element path.
TEST_P(Transpose5Vectorized, HandlesPointersNotAlignedTo16Bytes) {
  expect_transpose(kVectorized, GetParam(), 1);
}
INSTANTIATE_TEST_SUITE_P(Shapes, Transpose5Vectorized, ::testing::ValuesIn(shapes()), shape_name);

class Transpose5VectorizedLimits : public course::GpuTest {};
TEST_F(Transpose5VectorizedLimits, RejectsNegativeSidesAndOverlappingBuffers) {
  expect_limits(kVectorized);
}

// =============================================================================================
// 64-bit indices (TransposeNLargeIndex): matrices of just over 2^31 elements, where the flat
// index r * cols + c, or c * rows + r on the output side, wraps if any part of it is computed in
// 32 bits. bfloat16 (4 GiB per matrix); the input is filled on the GPU with a pattern the host
// recomputes at any index (course/large.h), and the output is checked at the start, around
// 2^31, at the end and at a few hundred places in between. Not square, so that rows and cols
// mixed up show; 33001 x 65537 is no multiple of a tile or of a vector (the fallback of variant
// 5), 33000 x 65528 is a multiple of 8 on both sides (variant 5's 16-byte path). They run alone
// on the GPU (lab.json's serial_suites).
struct LargeShape {
  std::int64_t rows, cols;
};
constexpr LargeShape kLargeOddShape{33001, 65537};     // 2^31 + 15,302,889 elements
constexpr LargeShape kLargeVectorShape{33000, 65528};  // 2^31 + 14,940,352 elements
constexpr std::size_t kLargeTransposeBytes = 2 * std::size_t{33001} * 65537 * sizeof(bfloat16);

void expect_large_transpose(const Variant& v, const LargeShape& s) {
  using T = bfloat16;
  const std::int64_t n = s.rows * s.cols;
  DeviceBuffer<T> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
  const course::Pattern p{course::seed_for(401), -1.0, 1.0};
  course::fill_pattern(in.data(), n, p);
  course::poison_on_device(out.data(), n);
  v.bf16(in.data(), out.data(), s.rows, s.cols);
  COURSE_CUDA_CHECK(cudaDeviceSynchronize());
  // Output element o is out[c, r] = in[r, c] with c = o / rows, r = o % rows.
  const auto at = course::large_sample_indices(n, course::seed_for(402));
  std::vector<double> want(at.size());
  for (std::size_t k = 0; k < at.size(); ++k)
    want[k] = course::pattern_double_value<T>(p, at[k] % s.rows * s.cols + at[k] / s.rows);
  course::CompareOptions options;
  options.tolerance = kExact;
  options.cols = s.rows;  // positions as [row, col] of the [cols, rows] output
  options.what = std::string("the [") + std::to_string(s.cols) + ", " + std::to_string(s.rows) +
                 "] bfloat16 output of " + v.name + " (" + v.todo +
                 ": r * cols + c and c * rows "
                 "+ r in 64 bits)";
  COURSE_EXPECT_SAMPLES_MATCH(course::gather(out.data(), n, at), want, at, options);
}

class Transpose1NaiveLargeIndex : public course::GpuTest {};
TEST_F(Transpose1NaiveLargeIndex, MovesElementsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeTransposeBytes);
  expect_large_transpose(kNaive, kLargeOddShape);
}

class Transpose2SmemLargeIndex : public course::GpuTest {};
TEST_F(Transpose2SmemLargeIndex, MovesElementsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeTransposeBytes);
  expect_large_transpose(kSmem, kLargeOddShape);
}

class Transpose3PaddedLargeIndex : public course::GpuTest {};
TEST_F(Transpose3PaddedLargeIndex, MovesElementsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeTransposeBytes);
  expect_large_transpose(kPadded, kLargeOddShape);
}

class Transpose4SwizzledLargeIndex : public course::GpuTest {};
TEST_F(Transpose4SwizzledLargeIndex, MovesElementsPastTwoToThe31) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeTransposeBytes);
  expect_large_transpose(kSwizzled, kLargeOddShape);
}

class Transpose5VectorizedLargeIndex : public course::GpuTest {};
TEST_F(Transpose5VectorizedLargeIndex, MovesElementsPastTwoToThe31OnBothPaths) {
  COURSE_SKIP_UNLESS_GPU_MEMORY(kLargeTransposeBytes);
  expect_large_transpose(kVectorized, kLargeVectorShape);
  if (HasFailure()) return;
  expect_large_transpose(kVectorized, kLargeOddShape);
}

// ================================================================ The bank model (lesson §5)
// Shared memory has 32 banks of 4 bytes: byte address a is in bank (a / 4) % 32, and each bank
// delivers one 4-byte word per wavefront. A warp's access is served in phases: all 32 lanes
// together for accesses of up to 4 bytes, 16 lanes at a time for 8 bytes, 8 lanes at a time for
// 16 bytes (so one phase moves at most 128 bytes). A phase takes as many wavefronts as the most
// DIFFERENT words one bank must deliver; lanes that read the same word share it (broadcast).
struct Wavefronts {
  int count = 0;    // wavefronts the access takes
  int ideal = 0;    // its number of phases: the count without conflicts
  std::string why;  // the worst bank of the worst phase, in words
};

Wavefronts wavefronts(const std::vector<std::int64_t>& lane_bytes, int access_bytes) {
  constexpr int kBankCount = 32, kWordBytes = 4;
  const std::size_t lanes_per_phase = access_bytes <= kWordBytes ? 32 : 128 / access_bytes;
  Wavefronts w;
  int worst_phase = 0;
  for (std::size_t first = 0; first < lane_bytes.size(); first += lanes_per_phase) {
    std::map<std::int64_t, std::set<std::int64_t>> words_of_bank;
    std::map<std::int64_t, std::set<std::size_t>> lanes_of_bank;
    const std::size_t end = std::min(first + lanes_per_phase, lane_bytes.size());
    for (std::size_t lane = first; lane < end; ++lane)
      for (std::int64_t word = lane_bytes[lane] / kWordBytes;
           word <= (lane_bytes[lane] + access_bytes - 1) / kWordBytes; ++word) {
        words_of_bank[word % kBankCount].insert(word);
        lanes_of_bank[word % kBankCount].insert(lane);
      }
    std::int64_t worst_bank = 0;
    int most = 0;
    for (const auto& [bank, words] : words_of_bank)
      if (static_cast<int>(words.size()) > most) {
        most = static_cast<int>(words.size());
        worst_bank = bank;
      }
    w.count += most;
    ++w.ideal;
    if (most > worst_phase) {
      worst_phase = most;
      std::ostringstream s;
      const std::set<std::size_t>& lanes = lanes_of_bank[worst_bank];
      s << "bank " << worst_bank << " must deliver " << most << " different words, to lanes";
      std::size_t shown = 0;
      for (auto it = lanes.begin(); it != lanes.end() && shown < 8; ++it, ++shown) s << " " << *it;
      if (lanes.size() > shown) s << " and " << lanes.size() - shown << " more";
      w.why = s.str();
    }
  }
  return w;
}

// Checks a tile layout: every element has its own place, the footprint is as expected, and the
// given warp accesses (each a list of 32 (row, col) elements, or fewer lanes for 16-byte accesses
// that name the first element of each lane's chunk) are conflict-free.
using TileIndex = int (*)(int, int);
struct WarpAccess {
  std::string what;
  std::vector<std::pair<int, int>> lanes;  // (row, col) of the tile, per lane
  int access_bytes;
};

// The layout is the code under test: its whole table, index(r, c) for every element of the tile,
// is computed once and observed (so that the grader judges the student's layout), and every
// check below reads the table, never the function.
void expect_layout(TileIndex layout, const char* name, const char* todo, int rows, int cols,
                   int elem_bytes, int max_footprint, const std::vector<WarpAccess>& accesses) {
  std::vector<int> table(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) table[static_cast<std::size_t>(r) * cols + c] = layout(r, c);
  table = course::observed(std::move(table), name);
  // Element (r, c) of the tile; every (r, c) the checks ask for lies inside it.
  const auto index = [&](int r, int c) { return table[static_cast<std::size_t>(r) * cols + c]; };
  std::set<int> seen;
  int footprint = 0;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const int i = index(r, c);
      ASSERT_GE(i, 0) << name << "(" << r << ", " << c << ") = " << i << ": negative index";
      ASSERT_TRUE(seen.insert(i).second)
          << name << " puts two elements of the tile at index " << i << " (one is (" << r << ", "
          << c << ")): each element needs its own place, or one overwrites the other";
      footprint = std::max(footprint, i + 1);
    }
  EXPECT_LE(footprint, max_footprint)
      << name << " spreads the " << rows << " x " << cols << " tile over " << footprint
      << " elements of shared memory; this variant needs at most " << max_footprint;
  int failures = 0;
  for (const WarpAccess& a : accesses) {
    // A wide access moves a lane's elements as one: they must sit side by side, aligned.
    if (a.access_bytes > elem_bytes)
      for (const auto& [r, c] : a.lanes) {
        ASSERT_EQ(std::int64_t{index(r, c)} * elem_bytes % a.access_bytes, 0)
            << name << "(" << r << ", " << c << ") is not " << a.access_bytes
            << "-byte aligned: " << a.what << " needs it to be";
        for (int e = 1; e < a.access_bytes / elem_bytes; ++e)
          ASSERT_EQ(index(r, c + e), index(r, c) + e)
              << name << " does not keep the elements (" << r << ", " << c << ") .. (" << r << ", "
              << c + a.access_bytes / elem_bytes - 1 << ") side by side: " << a.what
              << " moves them as one " << a.access_bytes << "-byte vector";
      }
    std::vector<std::int64_t> bytes;
    for (const auto& [r, c] : a.lanes) bytes.push_back(std::int64_t{index(r, c)} * elem_bytes);
    const Wavefronts w = wavefronts(bytes, a.access_bytes);
    if (w.count != w.ideal && failures++ < 3)
      ADD_FAILURE() << a.what << " takes " << w.count << " wavefronts instead of " << w.ideal
                    << " with " << name << " (" << todo << "): " << w.why
                    << ". A bank conflict: spread the lanes over all 32 banks (lesson §5-§7).";
  }
}

class LayoutTest : public ::testing::TestWithParam<DType> {};

int elem_bytes(DType d) { return d == DType::kFloat32 ? 4 : 2; }

// The accesses of variants 2-4 to their 32 x 32 tile: a warp writes one row (lane l: column l)
// and reads one column (lane l: row l).
std::vector<WarpAccess> tile32_accesses(int elem) {
  constexpr int kTile = 32;
  std::vector<WarpAccess> out;
  for (int r = 0; r < kTile; ++r) {
    WarpAccess a{"writing tile row " + std::to_string(r) + " (lane l writes column l)", {}, elem};
    for (int l = 0; l < kTile; ++l) a.lanes.emplace_back(r, l);
    out.push_back(a);
  }
  for (int c = 0; c < kTile; ++c) {
    WarpAccess a{"reading tile column " + std::to_string(c) + " (lane l reads row l)", {}, elem};
    for (int l = 0; l < kTile; ++l) a.lanes.emplace_back(l, c);
    out.push_back(a);
  }
  return out;
}

// ---------------------------------------------------------------- Exercise 3: the padded layout
class Transpose3PaddedLayout : public LayoutTest {};
TEST_P(Transpose3PaddedLayout, WritesRowsAndReadsColumnsWithoutBankConflicts) {
  const DType d = GetParam();
  const TileIndex index = d == DType::kFloat32   ? &d04::tile_index_3_padded<float>
                          : d == DType::kFloat16 ? &d04::tile_index_3_padded<half>
                                                 : &d04::tile_index_3_padded<bfloat16>;
  // At most one 4-byte bank of padding per row.
  const int pad = 4 / elem_bytes(d);
  expect_layout(index, "tile_index_3_padded", "TODO d04.3: kPad", 32, 32, elem_bytes(d),
                32 * (32 + pad), tile32_accesses(elem_bytes(d)));
}
INSTANTIATE_TEST_SUITE_P(DTypes, Transpose3PaddedLayout, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);

// ---------------------------------------------------------------- Exercise 4: the swizzled layout
class Transpose4SwizzledLayout : public LayoutTest {};
TEST_P(Transpose4SwizzledLayout, WritesRowsAndReadsColumnsWithoutBankConflicts) {
  const DType d = GetParam();
  const TileIndex index = d == DType::kFloat32   ? &d04::tile_index_4_swizzled<float>
                          : d == DType::kFloat16 ? &d04::tile_index_4_swizzled<half>
                                                 : &d04::tile_index_4_swizzled<bfloat16>;
  // No padding at all: exactly the 32 x 32 elements of the tile.
  expect_layout(index, "tile_index_4_swizzled", "TODO d04.4: swizzled_index", 32, 32, elem_bytes(d),
                32 * 32, tile32_accesses(elem_bytes(d)));
}
INSTANTIATE_TEST_SUITE_P(DTypes, Transpose4SwizzledLayout, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);

// ---------------------------------------------------------------- Exercise 5: the chunk swizzle
// Variant 5's tile: 64 rows of 128 bytes (8 chunks of kVec = 16 / elem_bytes elements).
// Load: a warp stores 4 rows, 8 lanes per row, one 16-byte chunk each (lane l: row l / 8,
//   chunk l % 8).
// Store: a warp reads, for k < kVec, element k of 32 vectors: lane l takes column
//   4 m + l / 8 and row (8 g + l % 8) kVec + k, for the warp's column group m and vector group g.
class Transpose5VectorizedLayout : public LayoutTest {};
TEST_P(Transpose5VectorizedLayout, StoresChunksAndReadsColumnsWithoutBankConflicts) {
  const DType d = GetParam();
  const TileIndex index = d == DType::kFloat32   ? &d04::tile_index_5_vectorized<float>
                          : d == DType::kFloat16 ? &d04::tile_index_5_vectorized<half>
                                                 : &d04::tile_index_5_vectorized<bfloat16>;
  const int elem = elem_bytes(d), vec = 16 / elem;
  constexpr int kRows = 64, kChunks = 8, kLanesPerUnit = 8, kUnitsPerWarp = 4;
  const int cols = kChunks * vec, groups = kRows / (kChunks * vec);
  std::vector<WarpAccess> accesses;
  for (int r = 0; r < kRows; r += kUnitsPerWarp) {
    WarpAccess a{"storing tile rows " + std::to_string(r) + "-" + std::to_string(r + 3) +
                     " as 16-byte chunks (lane l: row " + std::to_string(r) +
                     " + l / 8, chunk l % 8)",
                 {},
                 16};
    for (int l = 0; l < 32; ++l) a.lanes.emplace_back(r + l / kLanesPerUnit, (l % kChunks) * vec);
    accesses.push_back(a);
  }
  for (int m = 0; m < cols / kUnitsPerWarp; ++m)
    for (int g = 0; g < groups; ++g)
      for (int k = 0; k < vec; ++k) {
        WarpAccess a{"reading element " + std::to_string(k) + " of the vectors of tile columns " +
                         std::to_string(4 * m) + "-" + std::to_string(4 * m + 3) +
                         (groups > 1 ? ", vector group " + std::to_string(g) : std::string()) +
                         " (lane l: column " + std::to_string(4 * m) + " + l / 8, row (" +
                         std::to_string(8 * g) + " + l % 8) * " + std::to_string(vec) + " + " +
                         std::to_string(k) + ")",
                     {},
                     elem};
        for (int l = 0; l < 32; ++l)
          a.lanes.emplace_back((kLanesPerUnit * g + l % kLanesPerUnit) * vec + k,
                               kUnitsPerWarp * m + l / kLanesPerUnit);
        accesses.push_back(a);
      }
  // Swizzling moves chunks around; it needs no extra space.
  expect_layout(index, "tile_index_5_vectorized", "TODO d04.5: swizzled_chunk", kRows, cols, elem,
                kRows * cols, accesses);
}
INSTANTIATE_TEST_SUITE_P(DTypes, Transpose5VectorizedLayout, ::testing::ValuesIn(kAllElementTypes),
                         dtype_param_name);

}  // namespace
