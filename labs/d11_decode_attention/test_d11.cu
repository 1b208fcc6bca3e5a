// Day 11 tests. Each suite is one exercise of README.md (a suite named ExerciseSomething counts
// toward Exercise). PagedKvValidation and SplitKvRanges run on the host, without a GPU. The GPU
// suites build a paged cache whose pages are shuffled, some shared by two sequences, and whose
// unused rows (pages no sequence owns, slots past a sequence's last token) hold NaN: a kernel
// that reads a row it should not gets NaN in its output. Outputs are poisoned and guarded, and
// compared with the float64 reference of course/reference/attention.h. What the student's code
// returns on the host (a split range, a plan's split count, an exception) reaches the assertions
// through course::observed / observed_throw, so that the grader can replay it.
//
// What a kernel of this day can get wrong, and the test that sees it:
//   - validate_decode off by one at a limit of lab.h (page_size, num_pages, num_kv_heads,
//     head_dim, the head ratio, the batch, indptr, page indices, last_page_len, the length
//     2^31 - 1): PagedKvValidation (host), every limit just inside (accepted) and just outside
//     (rejected with course::InvalidArgument, by the upload too).
//   - a page index or a slot computed wrongly (page_size 16 and 1, shuffled and shared pages):
//     DecodeAttention.RaggedBatchWithShuffledPages, .SharedPrefixPages.
//   - a read of a row no token owns (past the last token, a page no sequence owns): those rows
//     hold NaN, so every GPU test sees it; memcheck sees reads outside the cache.
//   - a tile edge (lengths 1, 15, 16, 17, 1000; tiles of 32 and 64 tokens): RaggedBatch...,
//     SingleTokenSequence.
//   - the query heads of a group mapped to the wrong KV head (ratios 1, 4, 8): every GPU suite.
//   - a rescale of the running state missing or wrong: PeakedScores.
//   - a softmax or a merge that does not subtract the running maximum (exp overflows to inf, or
//     underflows to 0, once |scores| pass ~88): DecodeAttention.LargeLogits,
//     SplitKv.LargeLogitsWithSplits (scores of +-128 and lse of about +-110 .. 150).
//   - cache offsets computed in 32 bits (a cache of more than 2^31 elements):
//     DecodeAttentionLargeCache (pages placed past element 2^31 of an 8 GiB cache).
//   - split ranges (a dropped tail, overlaps): SplitKvRanges (host), ForcedSplitsMatchReference;
//     empty splits (lse = -inf) weighed in the merge: ForcedSplits (64 and 128 splits of short
//     sequences); the launcher's choice of splits: AutoSplitsOnALongSequence.
//   - lse in the wrong base or scaled wrongly: lse is compared in every GPU test.
//   - a cp.async wait one group short, a missing barrier (races on the K/V stages):
//     racecheck, and wrong results in the tests of many tiles.
//   - writes past o or lse: the guards of every GPU test.
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
#include "course/large.h"
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
  const course::Thrown t = course::observed_throw<course::InvalidArgument>(
      [&] { d11::validate_decode(shape, table, qo_heads); }, "validate_decode");
  if (t.threw_other) {
    ADD_FAILURE() << what << ": validate_decode threw something other than course::InvalidArgument"
                  << " (use course::require): " << t.what;
    return;
  }
  if (!t.threw) {
    ADD_FAILURE() << "validate_decode accepted " << what
                  << " (TODO(d11.1)): the kernel would read outside the cache or the page table";
    return;
  }
  EXPECT_FALSE(t.what.empty()) << what << ": the message should say what is wrong";
  if (check == Check::kTableOnly) return;
  const course::Thrown upload = course::observed_throw<course::InvalidArgument>(
      [&] { (void)d11::upload_paged_kv(shape, table); }, "upload_paged_kv");
  if (upload.threw_other)
    ADD_FAILURE() << what << ": upload_paged_kv threw something other than "
                  << "course::InvalidArgument (does it validate before allocating?): "
                  << upload.what;
  else if (!upload.threw)
    ADD_FAILURE() << "upload_paged_kv accepted " << what
                  << ": it must call validate_decode before anything else";
}

// validate_decode must accept the table: a limit of lab.h, just inside.
void expect_accepted(const d11::CacheShape& shape, const d11::PageTable& table, int qo_heads,
                     const std::string& what) {
  const course::Thrown t = course::observed_throw<course::InvalidArgument>(
      [&] { d11::validate_decode(shape, table, qo_heads); }, "validate_decode");
  EXPECT_FALSE(t.threw || t.threw_other)
      << "validate_decode rejected " << what
      << ", which lab.h allows (is a limit checked one step too early?): " << t.what;
}

TEST(PagedKvValidation, AcceptsAValidTableAndRejectsPageIndicesOutOfRange) {
  expect_accepted(valid_shape(), valid_table(), kValidQoHeads, "the valid table");
  // Page indices 0 .. num_pages - 1 = 7: the first and the last page of the cache.
  for (std::int32_t good : {0, 7}) {
    auto table = valid_table();
    table.page_indices[2] = good;
    expect_accepted(valid_shape(), table, kValidQoHeads,
                    "page index " + std::to_string(good) + " in a cache of 8 pages");
  }
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
  table.indptr = {0, 2, 3};
  expect_rejected(valid_shape(), table, kValidQoHeads, "an indptr of batch entries");
  table.indptr = {1, 2, 3, 4};
  expect_rejected(valid_shape(), table, kValidQoHeads, "an indptr that does not start at 0");
  table.indptr = {-1, 2, 3, 4};
  expect_rejected(valid_shape(), table, kValidQoHeads, "an indptr that starts at -1");
  table.indptr = {0, 3, 2, 4};
  expect_rejected(valid_shape(), table, kValidQoHeads, "a decreasing indptr");
  table.indptr = {0, 2, 3, 5};
  expect_rejected(valid_shape(), table, kValidQoHeads,
                  "an indptr ending past page_indices (5 of 4 entries)");
  table.indptr = {0, 1, 2, 3};
  expect_rejected(valid_shape(), table, kValidQoHeads,
                  "an indptr ending before page_indices (3 of 4 entries)");
  // Just inside: a sequence of exactly one page.
  table = {{0, 1, 2, 4}, {5, 0, 7, 3}, {4, 16, 1}};
  expect_accepted(valid_shape(), table, kValidQoHeads, "sequences of one, one and two pages");
}

TEST(PagedKvValidation, RejectsLengthsThatDoNotFitTheirPages) {
  // Just inside: a last page of 1 token and one of page_size = 16 tokens.
  auto table = valid_table();
  table.last_page_len = {1, 16, 16};
  expect_accepted(valid_shape(), table, kValidQoHeads, "last pages of 1, 16 and 16 tokens");
  table = valid_table();
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

// The head ratio: any positive multiple of num_kv_heads passes validate_decode (plan_decode then
// takes only the compiled ratios 1, 4 and 8).
TEST(PagedKvValidation, RejectsWrongHeadRatios) {
  // (The head count is not the upload's business: plan_decode checks it, see run_and_check.)
  for (int qo_heads : {2, 4, 8, 16})
    expect_accepted(valid_shape(), valid_table(), qo_heads,
                    std::to_string(qo_heads) + " query heads for 2 KV heads");
  for (int qo_heads : {1, 3, 7, 9, 0, -2})
    expect_rejected(valid_shape(), valid_table(), qo_heads,
                    std::to_string(qo_heads) + " query heads for 2 KV heads", Check::kTableOnly);
}

// Every limit of the cache's shape, just inside and just outside (lab.h: page_size >= 1,
// num_pages >= 1, num_kv_heads >= 1, head_dim 64 or 128).
TEST(PagedKvValidation, RejectsShapesOutsideTheirLimits) {
  auto shape = valid_shape();
  shape.page_size = 1;  // every token on its own page: the lengths are 2, 1 and 1 tokens
  const d11::PageTable one_token_pages{{0, 2, 3, 4}, {5, 0, 7, 3}, {1, 1, 1}};
  expect_accepted(shape, one_token_pages, kValidQoHeads, "page_size 1");
  for (int bad : {0, -1}) {
    shape.page_size = bad;
    expect_rejected(shape, one_token_pages, kValidQoHeads, "page_size " + std::to_string(bad));
  }
  shape = valid_shape();
  shape.num_pages = 1;  // a cache of one page, shared by both sequences
  const d11::PageTable page_zero{{0, 1, 2}, {0, 0}, {16, 3}};
  expect_accepted(shape, page_zero, kValidQoHeads, "a cache of 1 page");
  for (std::int64_t bad : {0, -1}) {
    shape.num_pages = bad;
    expect_rejected(shape, page_zero, kValidQoHeads,
                    "a cache of " + std::to_string(bad) + " pages");
  }
  shape = valid_shape();
  shape.num_kv_heads = 1;
  expect_accepted(shape, valid_table(), 1, "1 KV head and 1 query head");
  expect_accepted(shape, valid_table(), 8, "1 KV head and 8 query heads");
  for (int bad : {0, -1}) {
    shape.num_kv_heads = bad;
    expect_rejected(shape, valid_table(), kValidQoHeads, std::to_string(bad) + " KV heads");
  }
  shape = valid_shape();
  for (int good : {64, 128}) {
    shape.head_dim = good;
    expect_accepted(shape, valid_table(), kValidQoHeads, "head_dim " + std::to_string(good));
  }
  for (int bad : {0, 63, 65, 96, 127, 129, 256}) {
    shape.head_dim = bad;
    expect_rejected(shape, valid_table(), kValidQoHeads, "head_dim " + std::to_string(bad));
  }
  expect_accepted(valid_shape(), d11::PageTable{{0, 1}, {3}, {5}}, kValidQoHeads,
                  "a batch of one sequence");
  expect_rejected(valid_shape(), d11::PageTable{{0}, {}, {}}, kValidQoHeads, "an empty batch");
}

// A sequence's length must fit an int32 (lab.h): 2^31 - 1 tokens pass, 2^31 do not. Pages of
// 2^30 tokens make such lengths from two or three page indices (nothing is allocated here).
TEST(PagedKvValidation, RejectsASequenceOf2To31Tokens) {
  constexpr std::int32_t kPage = std::int32_t{1} << 30;
  const d11::CacheShape shape{3, kPage, 1, 64};
  expect_accepted(shape, d11::PageTable{{0, 2}, {0, 1}, {kPage - 1}}, 1,
                  "a sequence of 2^31 - 1 tokens");
  expect_rejected(shape, d11::PageTable{{0, 2}, {0, 1}, {kPage}}, 1, "a sequence of 2^31 tokens");
  expect_rejected(shape, d11::PageTable{{0, 3}, {0, 1, 2}, {1}}, 1,
                  "a sequence of 2^31 + 1 tokens");
}

// ---------------------------------------------------------------- Exercise 3 (host): SplitKvRanges

::testing::AssertionResult splits_cover(std::int64_t len, int num_splits) {
  const std::int64_t chunk = (len + num_splits - 1) / num_splits;
  std::int64_t covered = 0;
  for (int s = 0; s < num_splits; ++s) {
    const d11::SplitRange r = course::observed(d11::split_range(len, num_splits, s), "split_range");
    const std::string where = "len " + std::to_string(len) + ", " + std::to_string(num_splits) +
                              " splits, split " + std::to_string(s) + " = [" +
                              std::to_string(r.begin) + ", " + std::to_string(r.end) + "): ";
    if (r.begin != covered)
      return ::testing::AssertionFailure() << where << "should start at " << covered
                                           << ", where the previous split ended (TODO(d11.3a))";
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
           << " tokens, not all of them (TODO(d11.3a))";
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

// The same with scores far beyond float32's exp range (lesson §4.2, §6.2): K in [0, 1] (|k|),
// scale 1, and every element of a query head of one sign, alternating from head to head:
// +-(0.75 .. 1.25) * 256 / head_dim. A head's scores are then +-128 on average, spread by 7-10
// (a softmax over a handful of tokens), and its lse about +130 .. +150 or -105 .. -130. exp() of
// such a value overflows float32 (above 88.7) or underflows to 0 (below -103): only a softmax and
// a merge of splits that subtract the running maximum get them right.
template <class T>
Problem<T> make_large_logit_problem(const Layout& layout, int num_kv_heads, int ratio, int head_dim,
                                    std::uint64_t salt) {
  Problem<T> pr = make_problem<T>(layout, num_kv_heads, ratio, head_dim, 1.0f, 1.0, salt);
  for (auto& x : pr.k) x = course::from_double<T>(std::fabs(course::to_double(x)));  // NaN stays
  const double magnitude = 256.0 / head_dim;
  pr.q = course::random_uniform<T>(pr.q.size(), course::seed_for(salt + 4), 0.75 * magnitude,
                                   1.25 * magnitude);
  const std::size_t D = static_cast<std::size_t>(head_dim);
  for (std::size_t i = 0; i < pr.q.size(); ++i)
    if (i / D % 2 == 1) pr.q[i] = course::from_double<T>(-course::to_double(pr.q[i]));
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
// page_base > 0 moves the problem's pages to pages page_base .. of a cache page_base pages
// larger (the pages below are never written and never read): the kernel's element offsets into
// K and V then reach page_base * page_size * num_kv_heads * head_dim and beyond.
template <class T>
void run_and_check(const Problem<T>& pr, int num_splits, const std::string& todo,
                   std::int64_t page_base = 0) {
  SCOPED_TRACE("num_splits = " + std::to_string(num_splits) +
               ", page_size = " + std::to_string(pr.shape.page_size) +
               (page_base ? ", pages from " + std::to_string(page_base) : std::string()));
  d11::CacheShape shape = pr.shape;
  d11::PageTable table = pr.table;
  shape.num_pages += page_base;
  for (auto& page : table.page_indices) page += static_cast<std::int32_t>(page_base);
  const d11::PagedKv kv = d11::upload_paged_kv(shape, table);
  const std::size_t page_elems = static_cast<std::size_t>(shape.page_size) * shape.num_kv_heads *
                                 static_cast<std::size_t>(shape.head_dim);
  const std::size_t base_elems = static_cast<std::size_t>(page_base) * page_elems;
  DeviceBuffer<T> dq(pr.q), dk(base_elems + pr.k.size()), dv(base_elems + pr.v.size());
  dk.upload(pr.k, base_elems);
  dv.upload(pr.v, base_elems);
  const std::size_t rows = static_cast<std::size_t>(pr.table.batch()) * pr.num_qo_heads;
  course::Guarded<T> o(rows * pr.shape.head_dim, 0);
  course::Guarded<float> lse(rows, 0);
  // The plan (once per table, lab.h); its split workspace poisoned: a merge that reads a partial
  // result the attention kernel did not write sees NaN, not a stale value.
  d11::DecodePlan plan = d11::plan_decode(kv, pr.num_qo_heads, num_splits);
  // (Observed: the grader's replay compares the student's split count with its own choice.)
  const int planned_splits = course::observed(plan.num_splits, "plan.num_splits");
  if (num_splits != d11::kAutoSplits) {
    EXPECT_EQ(planned_splits, num_splits);
  } else {
    EXPECT_EQ(planned_splits,
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
  COURSE_EXPECT_THROW(d11::decode_attention(args, d11::PagedKv{}, plan), course::InvalidArgument);
  COURSE_EXPECT_THROW((void)d11::plan_decode(kv, pr.num_qo_heads + 1, num_splits),
                      course::InvalidArgument);
  COURSE_EXPECT_THROW((void)d11::plan_decode(kv, pr.num_qo_heads, d11::kMaxSplits + 1),
                      course::InvalidArgument);
  {
    const d11::PagedKv other = d11::upload_paged_kv(shape, table);
    COURSE_EXPECT_THROW(d11::decode_attention(args, other, plan), course::InvalidArgument);
    d11::DecodeArgs<T> wrong_heads = args;
    wrong_heads.num_qo_heads =
        pr.shape.num_kv_heads * (pr.num_qo_heads == pr.shape.num_kv_heads ? 4 : 1);
    COURSE_EXPECT_THROW(d11::decode_attention(wrong_heads, kv, plan), course::InvalidArgument);
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
const std::string kTodoAttention =
    "no split: TODO(d11.2a) tiles, (d11.2b) softmax, (d11.2c) output";

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

// Scores of +-128 and more (make_large_logit_problem): exp2 of a score that no running maximum
// was subtracted from overflows to inf or underflows to 0.
TEST_P(DecodeAttention, LargeLogits) {
  const Config c = GetParam();
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    run_and_check(make_large_logit_problem<T>({{1, 17, 300}, 16, 0}, 2, c.ratio, c.head_dim, 45), 1,
                  kTodoAttention);
  });
}

INSTANTIATE_TEST_SUITE_P(Configs, DecodeAttention, ::testing::ValuesIn(configs()), config_name);

// ---------------------------------------------------------------- Exercise 3: SplitKv
const std::string kTodoSplit = "split-KV: TODO(d11.3a) ranges, (d11.3b) merge";

class SplitKv : public course::GpuTest, public ::testing::WithParamInterface<Config> {};

// 64 splits of a batch whose longest sequence has 1000 tokens: most splits of the short sequences
// are empty (lse = -inf), and must weigh nothing in the merge.
TEST_P(SplitKv, ForcedSplitsMatchReference) {
  const Config c = GetParam();
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto pr = make_problem<T>({{1, 15, 16, 17, 1000}, 16, 0}, 2, c.ratio, c.head_dim,
                                    default_scale(c.head_dim), 1.0, 50);
    for (int splits : {2, 3, 7, 64, d11::kMaxSplits}) run_and_check(pr, splits, kTodoSplit);
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
  ASSERT_GT(course::observed(d11::choose_num_splits(1, 2, 5000, course::device_facts().sm_count),
                             "choose_num_splits"),
            1);
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    run_and_check(make_problem<T>({{5000}, 16, 0}, 2, c.ratio, c.head_dim,
                                  default_scale(c.head_dim), 1.0, 90),
                  d11::kAutoSplits, kTodoSplit);
  });
}

// Partial results of lse +-110 .. 150 (make_large_logit_problem), and empty splits (lse = -inf)
// among them: a merge that weighs split s by exp(lse_s) instead of exp(lse_s - max) gets inf
// (and then NaN) or 0 / 0.
TEST_P(SplitKv, LargeLogitsWithSplits) {
  const Config c = GetParam();
  with_dtype(c.dtype, [&](auto tag) {
    using T = decltype(tag);
    const auto pr = make_large_logit_problem<T>({{1, 17, 300}, 16, 0}, 2, c.ratio, c.head_dim, 85);
    for (int splits : {5, 64}) run_and_check(pr, splits, kTodoSplit);
  });
}

INSTANTIATE_TEST_SUITE_P(Configs, SplitKv, ::testing::ValuesIn(configs()), config_name);

// A cache of more than 2^31 elements (8 GiB of K and V): the problem's pages sit at pages
// 2^19 - 8 .. of a cache of 2 KV heads of 128, i.e. from element 2^31 - 8 * 4096 on, so that
// most of its rows lie past element 2^31. An element offset computed in 32 bits (int row *
// num_kv_heads * head_dim) wraps there and reads the wrong rows, or outside the cache.
// (A suite of Exercise 2, DecodeAttention, with and without splits.)
class DecodeAttentionLargeCache : public course::GpuTest {};
TEST_F(DecodeAttentionLargeCache, ReadsPagesPastElement2To31) {
  constexpr int kKvHeads = 2, kHeadDim = 128, kPageSize = 16;
  constexpr std::int64_t kPageElems = std::int64_t{kPageSize} * kKvHeads * kHeadDim;  // 2^12
  constexpr std::int64_t kPageBase = course::kTwoTo31 / kPageElems - 8;
  const auto pr = make_problem<bfloat16>({{1, 17, 300}, kPageSize, 0}, kKvHeads, 4, kHeadDim,
                                         default_scale(kHeadDim), 1.0, 110);
  const std::size_t cache_bytes =
      2 * sizeof(bfloat16) * (static_cast<std::size_t>(kPageBase * kPageElems) + pr.k.size());
  COURSE_SKIP_UNLESS_GPU_MEMORY(cache_bytes);
  run_and_check(pr, 1, kTodoAttention, kPageBase);
  run_and_check(pr, 3, kTodoSplit, kPageBase);
}

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
