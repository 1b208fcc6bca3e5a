// float64 CPU reference for attention (Day 11 decode over a paged KV cache, Day 12 prefill).
//
// One query row q (head_dim values) against a list of key rows k_j and value rows v_j,
// j = 0 .. num_keys - 1, of which the first `visible` take part (a causal limit; all of them
// when there is none):
//
//   s_j   = scale * sum_d q[d] * k_j[d]                 (scale is usually 1 / sqrt(head_dim))
//   m     = max_j s_j
//   lse   = m + log(sum_j exp(s_j - m))                 (natural log of sum_j exp(s_j))
//   o[d]  = sum_j exp(s_j - lse) * v_j[d]               (a convex combination of the v rows)
//
// The caller says where the rows live through accessors: `q(d)`, `k(j, d)` and `v(j, d)` return
// the element as a double (the value the GPU saw, already rounded to its dtype). A paged KV cache
// answers k(j, d) through its page table; packed ragged tensors answer it with a pointer and a
// row stride (attention_row_strided below does that for you). Nothing is copied to float64 whole.
//
// A row with no visible key (visible == 0, which a causal mask can give) has no softmax: this
// reference returns o = 0 and lse = -inf, the convention FlashInfer and FlashAttention use for
// it (a merge of partial results then gives such a part zero weight; see merge_states).
// Non-finite inputs follow IEEE arithmetic: a NaN anywhere in q or a visible k or v row makes o
// and lse NaN.
//
// merge_states combines two partial results over disjoint key sets (split-KV, flash-decoding):
//   lse = log(exp(lse_a) + exp(lse_b)),  o = exp(lse_a - lse) * o_a + exp(lse_b - lse) * o_b
// which is exactly the attention over the union of the two key sets.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace course::reference {

// visible == kAllKeys: no causal limit.
inline constexpr std::size_t kAllKeys = std::numeric_limits<std::size_t>::max();

// How many keys query `query_index` of `num_queries` sees under a causal mask whose last query
// is aligned with the last key ("bottom-right" alignment, FlashInfer's and FlashAttention 2's):
// query i sits at position num_keys - num_queries + i and sees keys 0 .. that position. Decoding
// (num_queries = 1) sees every key. A query before the first key (possible only when
// num_queries > num_keys) sees none.
inline std::size_t causal_visible_keys(std::size_t query_index, std::size_t num_queries,
                                       std::size_t num_keys) {
  const std::size_t behind = num_queries - 1 - query_index;  // queries after this one
  return num_keys > behind ? num_keys - behind : 0;
}

struct AttentionRow {
  std::vector<double> o;  // [head_dim]
  double lse = 0.0;       // natural log of sum_j exp(s_j); -inf when no key is visible
};

// The general form: accessors q(d), k(j, d), v(j, d) -> double.
template <class QueryAt, class KeyAt, class ValueAt>
AttentionRow attention_row(QueryAt&& q, KeyAt&& k, ValueAt&& v, std::size_t num_keys,
                           std::size_t head_dim, double scale, std::size_t visible = kAllKeys) {
  const std::size_t n = std::min(num_keys, visible);
  AttentionRow row;
  row.o.assign(head_dim, 0.0);
  if (n == 0) {
    row.lse = -std::numeric_limits<double>::infinity();
    return row;
  }
  std::vector<double> qd(head_dim), s(n);
  for (std::size_t d = 0; d < head_dim; ++d) qd[d] = q(d);
  double m = -std::numeric_limits<double>::infinity();
  bool nan = false;
  for (std::size_t j = 0; j < n; ++j) {
    double dot = 0.0;
    for (std::size_t d = 0; d < head_dim; ++d) dot += qd[d] * k(j, d);
    s[j] = scale * dot;
    if (std::isnan(s[j])) nan = true;
    m = std::max(m, s[j]);
  }
  if (nan || !std::isfinite(m)) {  // NaN, or an infinite score: no meaningful softmax
    row.o.assign(head_dim, std::numeric_limits<double>::quiet_NaN());
    row.lse = std::numeric_limits<double>::quiet_NaN();
    return row;
  }
  double sum = 0.0;
  for (std::size_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - m);  // in (0, 1], exactly 1 for the maximum: sum >= 1
    sum += s[j];
  }
  for (std::size_t j = 0; j < n; ++j) {
    const double p = s[j] / sum;
    for (std::size_t d = 0; d < head_dim; ++d) row.o[d] += p * v(j, d);
  }
  row.lse = m + std::log(sum);
  return row;
}

// Pointers and strides: q points at head_dim elements; key row j is k + j * k_row_stride (in
// elements), value row j is v + j * v_row_stride. `to_double` converts one element.
template <class T, class ToDouble>
AttentionRow attention_row_strided(const T* q, const T* k, std::ptrdiff_t k_row_stride, const T* v,
                                   std::ptrdiff_t v_row_stride, std::size_t num_keys,
                                   std::size_t head_dim, double scale, ToDouble to_double,
                                   std::size_t visible = kAllKeys) {
  return attention_row(
      [&](std::size_t d) { return to_double(q[d]); },
      [&](std::size_t j, std::size_t d) {
        return to_double(
            k[static_cast<std::ptrdiff_t>(j) * k_row_stride + static_cast<std::ptrdiff_t>(d)]);
      },
      [&](std::size_t j, std::size_t d) {
        return to_double(
            v[static_cast<std::ptrdiff_t>(j) * v_row_stride + static_cast<std::ptrdiff_t>(d)]);
      },
      num_keys, head_dim, scale, visible);
}

// Two partial results over disjoint key sets -> the result over their union (see the top).
// A part with lse = -inf (no key) has weight zero; both -inf gives o = 0, lse = -inf.
inline AttentionRow merge_states(const AttentionRow& a, const AttentionRow& b) {
  const double ninf = -std::numeric_limits<double>::infinity();
  if (a.lse == ninf) return b;
  if (b.lse == ninf) return a;
  const double m = std::max(a.lse, b.lse);
  const double wa = std::exp(a.lse - m), wb = std::exp(b.lse - m);
  AttentionRow row;
  row.lse = m + std::log(wa + wb);
  row.o.resize(a.o.size());
  for (std::size_t d = 0; d < a.o.size(); ++d) row.o[d] = (wa * a.o[d] + wb * b.o[d]) / (wa + wb);
  return row;
}

}  // namespace course::reference
