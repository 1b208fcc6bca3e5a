// Day 11 tests. Each suite is one exercise of README.md (a suite named ExerciseSomething counts
// toward Exercise). PagedKvValidation and SplitKvRanges run on the host, without a GPU. The GPU
// suites build a paged cache whose pages are shuffled, some shared by two sequences, and whose
// unused rows (pages no sequence owns, slots past a sequence's last token) hold NaN: a kernel
// that reads a row it should not gets NaN in its output. Outputs are poisoned and guarded, and
// compared with the float64 reference of course/reference/attention.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "course/buffer.h"
#include "course/check.h"
#include "course/random.h"
#include "course/reference/attention.h"
#include "course/testing.h"
#include "lab.h"

namespace {

using course::bfloat16;
using course::DeviceBuffer;
using course::ElementType;
using course::half;
namespace ref = course::reference;

// ---------------------------------------------------------------- Exercise 1: PagedKvValidation
COURSE_POINTS(PagedKvValidation, 10);

// A valid batch: 3 sequences of 20, 16 and 1 tokens in pages of 16 (2, 1 and 1 pages) of a cache
// of 8 pages, 2 KV heads of 128; 8 query heads (ratio 4).
d11::CacheShape valid_shape() { return {8, 16, 2, 128}; }
d11::PageTable valid_table() { return {{0, 2, 3, 4}, {5, 0, 7, 3}, {4, 16, 1}}; }
constexpr int kValidQoHeads = 8;

// validate_decode must reject the table; so must upload_paged_kv (for a table or shape, not a
// head count, which plan_decode checks), and before it touches the GPU: the upload is where the
// table is checked, once (lab.h), and it allocates nothing for a table it refuses. (These cases
// run without a GPU: an upload that got as far as allocating would throw a CudaError here.)
enum class Check { kTableAndUpload, kTableOnly };

void expect_rejected(const d11::CacheShape& shape, const d11::PageTable& table, int qo_heads,
                     const std::string& what, Check check = Check::kTableAndUpload) {
  try {
    d11::validate_decode(shape, table, qo_heads);
  } catch (const course::InvalidArgument& e) {
    EXPECT_FALSE(std::string(e.what()).empty()) << what << ": the message should say what is wrong";
    if (check == Check::kTableOnly) return;
    try {
      (void)d11::upload_paged_kv(shape, table);
      ADD_FAILURE() << "upload_paged_kv accepted " << what
                    << ": it must call validate_decode before anything else";
    } catch (const course::InvalidArgument&) {
    } catch (const std::exception& e2) {
      ADD_FAILURE() << what << ": upload_paged_kv threw something other than "
                    << "course::InvalidArgument (does it validate before allocating?): "
                    << e2.what();
    }
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": validate_decode threw something other than course::InvalidArgument"
                  << " (use course::require): " << e.what();
    return;
  }
  ADD_FAILURE() << "validate_decode accepted " << what
                << " (TODO(d11.1)): the kernel would read outside the cache or the page table";
}

TEST(PagedKvValidation, AcceptsAValidTableAndRejectsPageIndicesOutOfRange) {
  EXPECT_NO_THROW(d11::validate_decode(valid_shape(), valid_table(), kValidQoHeads));
  for (std::int32_t bad : {-1, 8, 9, std::numeric_limits<std::int32_t>::max(),
                           std::numeric_limits<std::int32_t>::min()}) {
    auto table = valid_table();
    table.page_indices[2] = bad;
    expect_rejected(valid_shape(), table, kValidQoHeads,
                    "page index " + std::to_string(bad) + " in a cache of 8 pages");
  }
}

TEST(PagedKvValidation, RejectsABadIndptr) {
  auto table = valid_table();
  table.indptr = {0, 2, 3, 4, 4};
  expect_rejected(valid_shape(), table, kValidQoHeads, "an indptr of batch + 2 entries");
  table.indptr = {1, 2, 3, 4};
  expect_rejected(valid_shape(), table, kValidQoHeads, "an indptr that does not start at 0");
  table.indptr = {0, 3, 2, 4};
  expect_rejected(valid_shape(), table, kValidQoHeads, "a decreasing indptr");
  table.indptr = {0, 2, 3, 5};
  expect_rejected(valid_shape(), table, kValidQoHeads,
                  "an indptr ending past page_indices (5 of 4 entries)");
  table.indptr = {0, 1, 2, 3};
  expect_rejected(valid_shape(), table, kValidQoHeads,
                  "an indptr ending before page_indices (3 of 4 entries)");
}

TEST(PagedKvValidation, RejectsLengthsThatDoNotFitTheirPages) {
  auto table = valid_table();
  table.last_page_len[0] = 0;
  expect_rejected(valid_shape(), table, kValidQoHeads, "a last page holding 0 tokens");
  table = valid_table();
  table.last_page_len[1] = 17;
  expect_rejected(valid_shape(), table, kValidQoHeads, "a last page of 17 tokens (page_size 16)");
  table = valid_table();
  table.last_page_len[2] = -3;
  expect_rejected(valid_shape(), table, kValidQoHeads, "a negative last_page_len");
  table = {{0, 2, 2, 3}, {5, 0, 7}, {4, 16, 1}};
  expect_rejected(valid_shape(), table, kValidQoHeads, "a sequence with no page");
}

TEST(PagedKvValidation, RejectsWrongHeadRatiosAndShapes) {
  // (The head count is not the upload's business: plan_decode checks it, see run_and_check.)
  expect_rejected(valid_shape(), valid_table(), 3, "3 query heads for 2 KV heads",
                  Check::kTableOnly);
  expect_rejected(valid_shape(), valid_table(), 0, "0 query heads", Check::kTableOnly);
  auto shape = valid_shape();
  shape.num_kv_heads = 0;
  expect_rejected(shape, valid_table(), kValidQoHeads, "0 KV heads");
  shape = valid_shape();
  shape.head_dim = 96;
  expect_rejected(shape, valid_table(), kValidQoHeads, "head_dim 96");
  shape = valid_shape();
  shape.page_size = 0;
  expect_rejected(shape, valid_table(), kValidQoHeads, "page_size 0");
  shape = valid_shape();
  shape.num_pages = 0;
  expect_rejected(shape, valid_table(), kValidQoHeads, "a cache of 0 pages");
  expect_rejected(valid_shape(), d11::PageTable{{0}, {}, {}}, kValidQoHeads, "an empty batch");
}

// ---------------------------------------------------------------- Exercise 3 (host): SplitKvRanges
COURSE_POINTS(SplitKv, 20);

::testing::AssertionResult splits_cover(std::int64_t len, int num_splits) {
  const std::int64_t chunk = (len + num_splits - 1) / num_splits;
  std::int64_t covered = 0;
  for (int s = 0; s < num_splits; ++s) {
    const d11::SplitRange r = d11::split_range(len, num_splits, s);
    const std::string where = "len " + std::to_string(len) + ", " + std::to_string(num_splits) +
                              " splits, split " + std::to_string(s) + " = [" +
                              std::to_string(r.begin) + ", " + std::to_string(r.end) + "): ";
    if (r.begin != covered)
      return ::testing::AssertionFailure() << where << "should start at " << covered
                                           << ", where the previous split ended (TODO(d11.5))";
    if (r.end < r.begin || r.end - r.begin > chunk)
      return ::testing::AssertionFailure()
             << where << "should hold 0 .. ceil(len / splits) = " << chunk << " tokens";
    if (r.end < len && r.end - r.begin != chunk)
      return ::testing::AssertionFailure()
             << where << "every split before the end should hold ceil(len / splits) = " << chunk
             << " tokens";
    covered = r.end;
  }
  if (covered != len)
    return ::testing::AssertionFailure()
           << "len " << len << ", " << num_splits << " splits: the splits cover " << covered
           << " tokens, not all of them (TODO(d11.5))";
  return ::testing::AssertionSuccess();
}

TEST(SplitKvRanges, CoverEveryTokenOnceInOrder) {
  for (std::int64_t len : {1, 2, 15, 16, 17, 1000, 32768, 131071, 131072})
    for (int splits : {1, 2, 3, 7, 33, 64, 128}) EXPECT_TRUE(splits_cover(len, splits));
}

// ---------------------------------------------------------------- the GPU problems
// How close: o is rounded to the dtype of q (the default tolerance of half and bfloat16, whose
// rounding is the largest error: the float32 dot products of 16-bit inputs and float32 sums of a
// few thousand terms are ~1e-6 relative); lse is float32, computed from float32 scores whose error
// is ~1e-6 of |score| plus exp2f/log2f's 2 ulps: 1e-5 of (|lse| + rms) per element is ample,
// while a score scaled wrongly or a token dropped moves lse by far more.
constexpr course::Tolerance kLseTolerance{1e-5, 1e-5};

// Where the sequences' pages are. Sequence b > 0 starts with sequence 0's first
// `shared_prefix_pages` pages (a common prompt); they must be full pages of both.
struct Layout {
  std::vector<int> lengths;
  int page_size = 16;
  int shared_prefix_pages = 0;
};

template <class T>
struct Problem {
  d11::CacheShape shape;
  d11::PageTable table;
  int num_qo_heads = 0;
  float scale = 0.0f;
  std::vector<T> q, k, v;
};

// Pages are numbered in allocation order, then shuffled: page_indices are a random permutation.
// Three extra pages belong to nobody. Every row of the cache that holds no token is NaN.
template <class T>
Problem<T> make_problem(const Layout& layout, int num_kv_heads, int ratio, int head_dim,
                        float scale, double q_range, std::uint64_t salt) {
  Problem<T> pr;
  const int ps = layout.page_size;
  const int batch = static_cast<int>(layout.lengths.size());
  std::vector<std::vector<int>> logical(batch);  // each sequence's pages, in allocation ids
  int next = 0;
  for (int b = 0; b < batch; ++b) {
    const int pages = (layout.lengths[b] + ps - 1) / ps;
    for (int i = 0; i < pages; ++i)
      logical[b].push_back(b > 0 && i < layout.shared_prefix_pages ? logical[0][i] : next++);
  }
  constexpr int kUnusedPages = 3;
  const int num_pages = next + kUnusedPages;
  std::vector<int> perm(num_pages);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(course::seed_for(salt));
  std::shuffle(perm.begin(), perm.end(), rng);

  pr.shape = {num_pages, ps, num_kv_heads, head_dim};
  pr.num_qo_heads = num_kv_heads * ratio;
  pr.scale = scale;
  pr.table.indptr.push_back(0);
  std::vector<bool> used(static_cast<std::size_t>(num_pages) * ps, false);  // (page, slot)
  for (int b = 0; b < batch; ++b) {
    for (int page : logical[b]) pr.table.page_indices.push_back(perm[page]);
    pr.table.indptr.push_back(static_cast<std::int32_t>(pr.table.page_indices.size()));
    const int len = layout.lengths[b];
    pr.table.last_page_len.push_back(len - (static_cast<int>(logical[b].size()) - 1) * ps);
    for (int j = 0; j < len; ++j)
      used[static_cast<std::size_t>(perm[logical[b][j / ps]]) * ps + j % ps] = true;
  }
  const std::size_t row = static_cast<std::size_t>(num_kv_heads) * head_dim;  // one (page, slot)
  const std::size_t n = used.size() * row;
  pr.k = course::random_uniform<T>(n, course::seed_for(salt + 1));
  pr.v = course::random_uniform<T>(n, course::seed_for(salt + 2));
  const T nan = course::from_double<T>(std::numeric_limits<double>::quiet_NaN());
  for (std::size_t r = 0; r < used.size(); ++r)
    if (!used[r])
      for (std::size_t e = 0; e < row; ++e) pr.k[r * row + e] = pr.v[r * row + e] = nan;
  pr.q = course::random_uniform<T>(static_cast<std::size_t>(batch) * pr.num_qo_heads * head_dim,
                                   course::seed_for(salt + 3), -q_range, q_range);
  return pr;
}

// The float64 reference, read through the page table: o [batch, num_qo_heads, head_dim], lse.
template <class T>
void reference(const Problem<T>& pr, std::vector<double>& o, std::vector<double>& lse) {
  const auto& t = pr.table;
  const std::size_t D = static_cast<std::size_t>(pr.shape.head_dim);
  const std::size_t ps = static_cast<std::size_t>(pr.shape.page_size);
  const std::size_t kv_heads = static_cast<std::size_t>(pr.shape.num_kv_heads);
  const int ratio = pr.num_qo_heads / pr.shape.num_kv_heads;
  o.clear();
  lse.clear();
  for (int b = 0; b < t.batch(); ++b) {
    const std::size_t len =
        static_cast<std::size_t>(d11::sequence_length(t, pr.shape.page_size, b));
    for (int h = 0; h < pr.num_qo_heads; ++h) {
      const std::size_t g = static_cast<std::size_t>(h / ratio);
      const std::size_t q0 = (static_cast<std::size_t>(b) * pr.num_qo_heads + h) * D;
      auto at = [&](const std::vector<T>& cache, std::size_t j, std::size_t d) {
        const std::size_t page = static_cast<std::size_t>(t.page_indices[t.indptr[b] + j / ps]);
        return course::to_double(cache[((page * ps + j % ps) * kv_heads + g) * D + d]);
      };
      const ref::AttentionRow row =
          ref::attention_row([&](std::size_t d) { return course::to_double(pr.q[q0 + d]); },
                             [&](std::size_t j, std::size_t d) { return at(pr.k, j, d); },
                             [&](std::size_t j, std::size_t d) { return at(pr.v, j, d); }, len, D,
                             static_cast<double>(pr.scale));
      o.insert(o.end(), row.o.begin(), row.o.end());
      lse.push_back(row.lse);
    }
  }
}

// Runs decode_attention on the problem and checks o, lse and the guards around them.
template <class T>
void run_and_check(const Problem<T>& pr, int num_splits, const std::string& todo) {
  SCOPED_TRACE("num_splits = " + std::to_string(num_splits) +
               ", page_size = " + std::to_string(pr.shape.page_size));
  const d11::PagedKv kv = d11::upload_paged_kv(pr.shape, pr.table);
  DeviceBuffer<T> dq(pr.q), dk(pr.k), dv(pr.v);
  const std::size_t rows = static_cast<std::size_t>(pr.table.batch()) * pr.num_qo_heads;
  course::Guarded<T> o(rows * pr.shape.head_dim, 0);
  course::Guarded<float> lse(rows, 0);
  // The plan (once per table, lab.h); its split workspace poisoned: a merge that reads a partial
  // result the attention kernel did not write sees NaN, not a stale value.
  d11::DecodePlan plan = d11::plan_decode(kv, pr.num_qo_heads, num_splits);
  if (num_splits != d11::kAutoSplits) {
    EXPECT_EQ(plan.num_splits, num_splits);
  } else {
    EXPECT_EQ(plan.num_splits,
              d11::choose_num_splits(pr.table.batch(), pr.shape.num_kv_heads, kv.max_len(),
                                     course::device_facts().sm_count));
  }
  if (plan.num_splits > 1) {
    plan.workspace.partial_lse.poison();
    plan.workspace.partial_o.poison();
  }
  d11::DecodeArgs<T> args;
  args.q = dq.data();
  args.k_cache = dk.data();
  args.v_cache = dv.data();
  args.o = o.data();
  args.lse = lse.data();
  args.num_qo_heads = pr.num_qo_heads;
  args.scale = pr.scale;
  // The launch's cheap checks (given code; they throw before any launch, so the outputs keep
  // their poison): a PagedKv that was never uploaded, a plan for another head count or another
  // upload of the same table, and a head count the plan did not check.
  EXPECT_THROW(d11::decode_attention(args, d11::PagedKv{}, plan), course::InvalidArgument);
  EXPECT_THROW((void)d11::plan_decode(kv, pr.num_qo_heads + 1, num_splits),
               course::InvalidArgument);
  {
    const d11::PagedKv other = d11::upload_paged_kv(pr.shape, pr.table);
    EXPECT_THROW(d11::decode_attention(args, other, plan), course::InvalidArgument);
    d11::DecodeArgs<T> wrong_heads = args;
    wrong_heads.num_qo_heads =
        pr.shape.num_kv_heads * (pr.num_qo_heads == pr.shape.num_kv_heads ? 4 : 1);
    EXPECT_THROW(d11::decode_attention(wrong_heads, kv, plan), course::InvalidArgument);
  }
  d11::decode_attention(args, kv, plan);
  std::vector<double> ref_o, ref_lse;
  reference(pr, ref_o, ref_lse);
  course::CompareOptions o_options;
  o_options.cols = pr.shape.head_dim;
  o_options.what = "o [batch * num_qo_heads, head_dim] (" + todo + ")";
  COURSE_EXPECT_MATCH(o.read_back(), ref_o, o_options);
  course::CompareOptions lse_options;
  lse_options.tolerance = kLseTolerance;
  lse_options.what = "lse [batch * num_qo_heads] (" + todo + ")";
  COURSE_EXPECT_MATCH(lse.read_back(), ref_lse, lse_options);
  course::expect_guards_untouched(o, "o");
  course::expect_guards_untouched(lse, "lse");
}

struct Config {
  ElementType dtype;
  int head_dim;
  int ratio;  // num_qo_heads / num_kv_heads
};
void PrintTo(const Config& c, std::ostream* os) {
  *os << course::dtype_name(c.dtype) << " head_dim=" << c.head_dim << " ratio=" << c.ratio;
}
std::vector<Config> configs() {
  std::vector<Config> out;
  for (ElementType t : {ElementType::kFloat16, ElementType::kBFloat16})
    for (int d : {64, 128})
      for (int r : {1, 4, 8}) out.push_back({t, d, r});
  return out;
}
std::string config_name(const ::testing::TestParamInfo<Config>& info) {
  return course::dtype_name(info.param.dtype) + "_dim" + std::to_string(info.param.head_dim) +
         "_ratio" + std::to_string(info.param.ratio);
}

// Calls fn(T{}) with T the config's element type.
template <class Fn>
void with_dtype(ElementType t, Fn&& fn) {
  if (t == ElementType::kFloat16)
    fn(half{});
  else
    fn(bfloat16{});
}

float default_scale(int head_dim) { return 1.0f / std::sqrt(static_cast<float>(head_dim)); }

// ---------------------------------------------------------------- Exercise 2: DecodeAttention
COURSE_POINTS(DecodeAttention, 30);
const std::string kTodoAttention = "no split: TODO(d11.2) tiles, (d11.3) softmax, (d11.4) output";

class DecodeAttention : public course::GpuTest, public ::testing::WithParamInterface<Config> {};

// Lengths 1 (one token), 15 / 16 / 17 (around a page and a tile edge), 1000 (many tiles, the
// last one partial); pages of 16 tokens and of 1 (every token on its own page).
TEST_P(DecodeAttention, RaggedBatchWithShuffledPages) {
  const Config c = GetParam();
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int page_size : {16, 1}) {
      const Layout layout{{1, 15, 16, 17, 1000}, page_size, 0};
      run_and_check(
          make_problem<T>(layout, 2, c.ratio, c.head_dim, default_scale(c.head_dim), 1.0, 10), 1,
          kTodoAttention);
    }
  });
}

TEST_P(DecodeAttention, SingleTokenSequence) {
  const Config c = GetParam();
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    run_and_check(
        make_problem<T>({{1}, 16, 0}, 3, c.ratio, c.head_dim, default_scale(c.head_dim), 1.0, 20),
        1, kTodoAttention);
  });
}

// Sequences 1 and 2 start with sequence 0's first two pages (32 tokens of a shared prompt).
TEST_P(DecodeAttention, SharedPrefixPages) {
  const Config c = GetParam();
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    run_and_check(make_problem<T>({{40, 50, 33}, 16, 2}, 2, c.ratio, c.head_dim,
                                  default_scale(c.head_dim), 1.0, 30),
                  1, kTodoAttention);
  });
}

// Scale 1 and q in [-2, 2]: scores of +-20 and more, so the softmax picks a few tokens, the running
// maximum changes between tiles, and a wrong rescale of the accumulator shows.
TEST_P(DecodeAttention, PeakedScores) {
  const Config c = GetParam();
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    run_and_check(make_problem<T>({{300, 77}, 16, 0}, 1, c.ratio, c.head_dim, 1.0f, 2.0, 40), 1,
                  kTodoAttention);
  });
}

INSTANTIATE_TEST_SUITE_P(Configs, DecodeAttention, ::testing::ValuesIn(configs()), config_name);

// ---------------------------------------------------------------- Exercise 3: SplitKv
const std::string kTodoSplit = "split-KV: TODO(d11.5) ranges, (d11.6) merge";

class SplitKv : public course::GpuTest, public ::testing::WithParamInterface<Config> {};

// 64 splits of a batch whose longest sequence has 1000 tokens: most splits of the short sequences
// are empty (lse = -inf), and must weigh nothing in the merge.
TEST_P(SplitKv, ForcedSplitsMatchReference) {
  const Config c = GetParam();
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto pr = make_problem<T>({{1, 15, 16, 17, 1000}, 16, 0}, 2, c.ratio, c.head_dim,
                                    default_scale(c.head_dim), 1.0, 50);
    for (int splits : {2, 3, 7, 64}) run_and_check(pr, splits, kTodoSplit);
    run_and_check(make_problem<T>({{1, 17, 300}, 1, 0}, 2, c.ratio, c.head_dim,
                                  default_scale(c.head_dim), 1.0, 60),
                  3, kTodoSplit);
  });
}

TEST_P(SplitKv, SharedPrefixAndPeakedScoresWithSplits) {
  const Config c = GetParam();
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    run_and_check(make_problem<T>({{40, 50, 33}, 16, 2}, 2, c.ratio, c.head_dim,
                                  default_scale(c.head_dim), 1.0, 70),
                  5, kTodoSplit);
    run_and_check(make_problem<T>({{300, 77}, 16, 0}, 1, c.ratio, c.head_dim, 1.0f, 2.0, 80), 4,
                  kTodoSplit);
  });
}

// One sequence of 5000 tokens and 2 KV heads: 2 blocks without splits, so the launcher's
// choice (kAutoSplits) splits it.
TEST_P(SplitKv, AutoSplitsOnALongSequence) {
  const Config c = GetParam();
  ASSERT_GT(d11::choose_num_splits(1, 2, 5000, course::device_facts().sm_count), 1);
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    run_and_check(make_problem<T>({{5000}, 16, 0}, 2, c.ratio, c.head_dim,
                                  default_scale(c.head_dim), 1.0, 90),
                  d11::kAutoSplits, kTodoSplit);
  });
}

INSTANTIATE_TEST_SUITE_P(Configs, SplitKv, ::testing::ValuesIn(configs()), config_name);

// The lengths of the issue in one batch, 32768 among them (once: 35 MB of cache), without splits
// and with the launcher's choice.
class SplitKvLongContext : public course::GpuTest {};

TEST_F(SplitKvLongContext, RaggedBatchUpTo32768Tokens) {
  const auto pr = make_problem<bfloat16>({{1, 15, 16, 17, 1000, 32768}, 16, 0}, 2, 4, 128,
                                         default_scale(128), 1.0, 100);
  run_and_check(pr, 1, kTodoAttention);
  run_and_check(pr, d11::kAutoSplits, kTodoSplit);
}

}  // namespace
