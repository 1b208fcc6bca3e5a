"""cuda_course.jit's decode attention on the GPU (Day 11's, over a paged KV cache, specialised
per dtype, head dimension and group size), against float64 references computed by PyTorch from
the same inputs, with the course's tolerances (jit_support.assert_close: common/course/dtype.h's
bounds): every pair of dtype, head dimension and group size, split-KV with empty splits, a page
size of 1, and a bad page table refused with a message. Skipped, saying why, without PyTorch, a
GPU, nvcc or the JIT's packages. The modules are compiled into a fresh cache folder, side by side
before the tests (jit.compile_all). RMSNorm is test_jit_gpu_rmsnorm.py: a file of its own, so
that ctest compiles the two sets of modules at the same time."""

import math
import unittest

from jit_support import FreshCacheTest, assert_close, gpu_missing, torch_dtypes

from cuda_course import jit

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

SKIP = gpu_missing()
DT = torch_dtypes()

LSE_TOLERANCE = (1e-5, 1e-5)  # Day 11's kLseTolerance


def paged_cache(batch_lengths, page_size, kv_heads, dim, dtype, seed=0):
    """K and V caches with each sequence's pages in shuffled places, and the CSR table."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    pages_per_seq = [max(1, math.ceil(n / page_size)) for n in batch_lengths]
    total = sum(pages_per_seq) + 3  # a few pages no sequence uses
    perm = torch.randperm(total, generator=torch.Generator().manual_seed(seed)).tolist()
    k = (torch.rand(total, page_size, kv_heads, dim, device="cuda", generator=g) * 2 - 1)
    v = (torch.rand(total, page_size, kv_heads, dim, device="cuda", generator=g) * 2 - 1)
    indptr, indices, last = [0], [], []
    for n, p in zip(batch_lengths, pages_per_seq):
        indices += perm[:p]
        perm = perm[p:]
        indptr.append(indptr[-1] + p)
        last.append(n - (p - 1) * page_size)
    as_i32 = lambda values: torch.tensor(values, dtype=torch.int32, device="cuda")  # noqa: E731
    return k.to(DT[dtype]), v.to(DT[dtype]), as_i32(indptr), as_i32(indices), as_i32(last)


def decode_ref(q, k, v, indptr, indices, last, scale):
    """float64 o [B, Hq, D] and lse [B, Hq] (natural log)."""
    batch, heads, dim = q.shape
    page_size, kv_heads = k.shape[1], k.shape[2]
    group = heads // kv_heads
    o = torch.empty(batch, heads, dim, dtype=torch.float64, device=q.device)
    lse = torch.empty(batch, heads, dtype=torch.float64, device=q.device)
    indptr, indices, last = indptr.tolist(), indices.tolist(), last.tolist()
    for b in range(batch):
        pages = indices[indptr[b]:indptr[b + 1]]
        n = (len(pages) - 1) * page_size + last[b]
        kb = k[pages].reshape(-1, kv_heads, dim)[:n].double()  # [n, Hkv, D]
        vb = v[pages].reshape(-1, kv_heads, dim)[:n].double()
        kb = kb.repeat_interleave(group, dim=1)  # [n, Hq, D]
        vb = vb.repeat_interleave(group, dim=1)
        s = scale * torch.einsum("hd,nhd->hn", q[b].double(), kb)
        lse[b] = torch.logsumexp(s, -1)
        o[b] = torch.einsum("hn,nhd->hd", torch.softmax(s, -1), vb)
    return o, lse


@unittest.skipIf(SKIP, SKIP or "")
class GpuDecodeAttention(FreshCacheTest):
    CACHE_PREFIX = "cuda_course_jit_gpu_"
    # Every pair of (dtype, head dim), (dtype, group size) and (head dim, group size) in six
    # modules, not all twelve of the product: the three are template parameters that touch
    # different code (the loads' type, the tiles over D, the query heads a warp serves), and a
    # module costs the suite ~12 s of a core to compile.
    COMBINATIONS = (("bfloat16", 64, 1), ("bfloat16", 128, 4), ("bfloat16", 128, 8),
                    ("float16", 128, 1), ("float16", 64, 4), ("float16", 64, 8))

    @classmethod
    def setUpClass(cls):
        super().setUpClass()  # as test_jit_gpu_rmsnorm.py's: the specialisations below first
        specs = [jit.decode_spec(*c) for c in cls.COMBINATIONS]
        specs += [jit.decode_spec("bfloat16", 128, g) for g in (2, 3, 5)]
        jit.compile_all(cache=cls.cache, specs=specs)

    def check(self, dtype, dim, group, lengths, page_size=16, kv_heads=2, splits=1, seed=0):
        k, v, indptr, indices, last = paged_cache(lengths, page_size, kv_heads, dim, dtype, seed)
        g = torch.Generator(device="cuda").manual_seed(seed + 1)
        q = (torch.rand(len(lengths), kv_heads * group, dim, device="cuda", generator=g) * 2 - 1)
        q = q.to(DT[dtype])
        scale = 1.0 / math.sqrt(dim)
        o, lse = jit.decode_attention(q, k, v, indptr, indices, last, num_splits=splits,
                                      cache=self.cache)
        want_o, want_lse = decode_ref(q, k, v, indptr, indices, last, scale)
        what = f"decode {dtype} d{dim} g{group} splits {splits} lengths {lengths}"
        assert_close(self, o, want_o, dtype, what + " (o)")
        assert_close(self, lse, want_lse, "float32", what + " (lse)", LSE_TOLERANCE)

    def test_every_dtype_head_dim_and_group_size(self):
        for dtype, dim, group in self.COMBINATIONS:
            with self.subTest(dtype=dtype, dim=dim, group=group):
                self.check(dtype, dim, group, [1, 37, 300])

    def test_group_sizes_day_11_does_not_compile(self):
        for group in (2, 3, 5):
            with self.subTest(group=group):
                self.check("bfloat16", 128, group, [17, 129])

    def test_split_kv_with_empty_splits_and_page_size_1(self):
        self.check("bfloat16", 128, 4, [1, 40, 1000], splits=7)
        self.check("float16", 64, 8, [3, 250], page_size=1, splits=4)
        self.check("float16", 128, 1, [5000], kv_heads=8, splits=32)

    def test_a_bad_page_table_is_a_message(self):
        k, v, indptr, indices, last = paged_cache([20, 5], 16, 2, 128, "bfloat16")
        q = torch.zeros(2, 8, 128, dtype=torch.bfloat16, device="cuda")
        bad = indices.clone()
        bad[0] = k.shape[0]
        with self.assertRaisesRegex(ValueError, r"page_indices\[0\] = \d+ is out of range"):
            jit.decode_attention(q, k, v, indptr, bad, last, cache=self.cache)
        with self.assertRaisesRegex(ValueError, r"last_page_len\[1\] = 17 does not fit"):
            jit.decode_attention(q, k, v, indptr, indices,
                                 torch.tensor([4, 17], dtype=torch.int32, device="cuda"),
                                 cache=self.cache)


if __name__ == "__main__":
    unittest.main()
