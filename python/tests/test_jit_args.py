"""cuda_course.jit's Python-side checks, which run before any module is built or loaded: a wrong
dtype is a TypeError, a wrong shape, layout or device a ValueError, each naming the argument.
numpy arrays stand for tensors (they have __dlpack__, on the CPU). Also the pure functions the
JIT decides with: Day 6's row split, Day 11's page-table validation."""

import unittest

from jit_support import selftest_spec  # noqa: F401  (puts python/ on sys.path)

from cuda_course import jit

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None


class NotATensor:
    pass


class RowSplit(unittest.TestCase):
    def test_day6_thresholds(self):
        # One warp up to 128 vectors, 256 threads up to 1024, else 1024 threads.
        self.assertEqual(jit.rmsnorm_plan(128 * 8, 8), (32, 4))
        self.assertEqual(jit.rmsnorm_plan(129 * 8, 8), (256, 1))
        self.assertEqual(jit.rmsnorm_plan(4096, 8), (256, 2))
        self.assertEqual(jit.rmsnorm_plan(1024 * 8, 8), (256, 4))
        self.assertEqual(jit.rmsnorm_plan(8192 + 8, 8), (1024, 2))
        self.assertEqual(jit.rmsnorm_plan(16384, 1), (1024, 16))
        self.assertEqual(jit.rmsnorm_plan(1, 1), (32, 1))
        self.assertEqual(jit.rmsnorm_plan(1000, 1), (256, 4))

    def test_the_default_vector_is_16_bytes_where_it_divides_the_row(self):
        # What a call on 16-byte aligned tensors gets (rmsnorm_spec without `vec`).
        for dtype, hidden, vec in (("bfloat16", 4096, 8), ("float16", 1000, 8),
                                   ("float32", 1000, 4), ("float32", 1001, 1), ("bfloat16", 1, 1)):
            with self.subTest(dtype=dtype, hidden=hidden):
                self.assertEqual(jit.rmsnorm_spec(dtype, hidden).name,
                                 jit.rmsnorm_spec(dtype, hidden, vec).name)

    def test_the_vectors_always_cover_the_row(self):
        for hidden in list(range(1, 300)) + [4095, 4096, 5120, 8191, 16383, 16384]:
            for vec in (1, 4, 8):  # 16 bytes of float32, of 16-bit types; or one element
                if hidden % vec:
                    continue
                threads, items = jit.rmsnorm_plan(hidden, vec)
                vecs = hidden // vec
                self.assertGreaterEqual(threads * items, vecs)
                self.assertLess(threads * (items - 1), vecs, "no thread is left without work")
                # Day 6's bound: at most 4 vectors a thread, or 16 single elements in blocks
                # of 1024 (64 registers of row at most either way).
                self.assertLessEqual(items, 16 if (vec, threads) == (1, 1024) else 4)


class PageTable(unittest.TestCase):
    def ok(self, **kw):
        args = dict(indptr=[0, 2, 3], page_indices=[4, 0, 1], last_page_len=[3, 16],
                    num_pages=5, page_size=16)
        args.update(kw)
        return jit.validate_page_table(**args)

    def test_a_valid_table_gives_the_lengths(self):
        self.assertEqual(self.ok(), [16 + 3, 16])

    def test_every_rule_of_day_11(self):
        cases = [
            (dict(page_size=0), "page_size = 0 must be at least 1"),
            (dict(num_pages=0), "num_pages = 0"),
            (dict(num_pages=2**30, page_size=8),
             "num_pages \\* page_size = 8589934592 token slots"),
            (dict(last_page_len=[]), "the batch is empty"),
            (dict(indptr=[0, 2]), "indptr has 2 entries, expected batch \\+ 1 = 3"),
            (dict(indptr=[1, 2, 3]), "indptr\\[0\\] = 1, expected 0"),
            (dict(indptr=[0, 2, 1]), "indptr decreases at sequence 1"),
            (dict(indptr=[0, 0, 3]), "sequence 0 has no page"),
            (dict(indptr=[0, 2, 4]), "indptr\\[batch\\] = 4 but page_indices has 3 entries"),
            (dict(page_indices=[4, 5, 1]), "page_indices\\[1\\] = 5 is out of range"),
            (dict(page_indices=[4, -1, 1]), "page_indices\\[1\\] = -1 is out of range"),
            (dict(last_page_len=[0, 16]), "last_page_len\\[0\\] = 0 does not fit a page"),
            (dict(last_page_len=[3, 17]), "last_page_len\\[1\\] = 17 does not fit a page"),
        ]
        for change, message in cases:
            with self.assertRaisesRegex(ValueError, "^decode_attention: " + message):
                self.ok(**change)
        with self.assertRaisesRegex(ValueError, "not a positive multiple of num_kv_heads"):
            self.ok(num_qo_heads=12, num_kv_heads=8)


class NonTensors(unittest.TestCase):
    def test_a_non_tensor_is_a_type_error_naming_the_argument(self):
        with self.assertRaisesRegex(TypeError, r"^x: expected a tensor that supports DLPack"):
            jit.rmsnorm(NotATensor(), NotATensor())
        with self.assertRaisesRegex(TypeError, r"^q: expected a tensor .*got list"):
            jit.decode_attention([1.0], None, None, None, None, None)


@unittest.skipIf(np is None or not hasattr(getattr(np, "ndarray", object), "__dlpack__"),
                 "numpy with __dlpack__ (1.22 or later) is not installed")
class CpuTensors(unittest.TestCase):
    def test_rmsnorm(self):
        x = np.ones((4, 64), np.float16)
        w = np.ones(64, np.float16)
        cases = [
            ((x.astype(np.int32), w), TypeError,
             r"^x: expected dtype float32 or float16 or bfloat16, got int32"),
            ((x, w.astype(np.float32)), TypeError, r"^weight: expected dtype float16, got float32"),
            ((x[0], w), ValueError, r"^x: expected 2 dimensions, got 1"),
            ((x, np.ones(63, np.float16)), ValueError,
             r"^weight: expected shape \(64,\), got \(63,\)"),
            ((np.ones((4, 128), np.float16)[:, ::2], w), ValueError, r"^x: must be contiguous"),
            ((x, w), ValueError, r"^x: must be on a CUDA device .*kDLCPU"),
        ]
        for args, kind, message in cases:
            with self.assertRaisesRegex(kind, message):
                jit.rmsnorm(*args)
        with self.assertRaisesRegex(ValueError, r"^out: expected shape \(4, 64\), got \(4, 32\)"):
            jit.rmsnorm(x, w, out=np.ones((4, 32), np.float16))
        with self.assertRaisesRegex(ValueError, r"^eps: must be a finite number >= 0"):
            jit.rmsnorm(x, w, eps=float("inf"), out=x.copy())
        with self.assertRaisesRegex(ValueError, r"^residual: expected shape \(4, 64\)"):
            jit.fused_add_rmsnorm(x, x[:2].copy(), w)
        with self.assertRaisesRegex(ValueError, r"^x: must be on a CUDA device"):
            jit.fused_add_rmsnorm(x, x.copy(), w, out=x)

    def test_decode_attention(self):
        q = np.zeros((2, 8, 128), np.float16)
        k = np.zeros((4, 16, 2, 128), np.float16)
        i32 = np.int32
        table = (np.array([0, 1, 2], i32), np.array([0, 3], i32), np.array([5, 16], i32))

        def call(q=q, k=k, v=k, table=table, **kw):
            return jit.decode_attention(q, k, v, *table, **kw)

        cases = [
            (dict(q=q.astype(np.float32)), TypeError,
             r"^q: expected dtype float16 or bfloat16, got float32"),
            (dict(k=k.astype(np.float32)), TypeError, r"^k_cache: expected dtype float16"),
            (dict(k=np.zeros((4, 16, 2, 64), np.float16)), ValueError,
             r"^k_cache: expected shape \(any, any, any, 128\)"),
            (dict(v=k[:, :8].copy()), ValueError, r"^v_cache: expected shape \(4, 16, 2, 128\)"),
            (dict(table=(table[0].astype(np.int64),) + table[1:]), TypeError,
             r"^kv_indptr: expected dtype int32, got int64"),
            (dict(table=(table[0][:2],) + table[1:]), ValueError,
             r"^kv_indptr: expected shape \(3,\), got \(2,\)"),
            (dict(table=table[:2] + (table[2][:1],)), ValueError, r"^kv_last_page_len: expected"),
            (dict(q=np.zeros((2, 8, 96), np.float16),
                  k=np.zeros((4, 16, 2, 96), np.float16),
                  v=np.zeros((4, 16, 2, 96), np.float16)), ValueError,
             r"^q: head_dim must be 64 or 128"),
            (dict(k=np.zeros((4, 16, 3, 128), np.float16),
                  v=np.zeros((4, 16, 3, 128), np.float16)), ValueError,
             r"^q: num_qo_heads = 8 must be a multiple of k_cache's num_kv_heads = 3"),
            (dict(q=np.zeros((2, 18, 128), np.float16)), ValueError,
             r"^q: 9 query heads per KV head; the kernel holds 1 \.\. 8"),
            (dict(num_splits=0), ValueError, r"^num_splits: must be an int in 1 \.\. 128"),
            (dict(num_splits=2.0), ValueError, r"^num_splits"),
            (dict(scale=float("inf")), ValueError, r"^scale: must be finite"),
            ({}, ValueError, r"^q: must be on a CUDA device"),
        ]
        for change, kind, message in cases:
            with self.assertRaisesRegex(kind, message):
                call(**change)


if __name__ == "__main__":
    unittest.main()
