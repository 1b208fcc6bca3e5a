"""The CUDA templates compiled for real: nvcc through ninja for sm_90a (and sm_80, which both
kernels allow), each module loaded through TVM-FFI on this machine (no GPU needed to load one),
its `spec` function asked what it was built for, and its C++ argument checks called with CPU
tensors (numpy arrays through DLPack): every one must raise a Python TypeError or ValueError
naming the argument, before anything touches a GPU. One cache folder for the whole class, so
each module is compiled once (cold), then loaded warm."""

import json
import os
import shutil
import subprocess
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

from jit_support import FreshCacheTest, missing_for_build

from cuda_course import jit

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None

SKIP = missing_for_build(nvcc=True)

# (spec, architecture): every template, both dtypes of 16 bits, both head dims, the group sizes
# and vector widths at their extremes, fused and not; sm_90a (the H100) and sm_80.
BUILDS = [
    (lambda: jit.rmsnorm_spec("bfloat16", 4096, 8), "sm_90a"),
    (lambda: jit.rmsnorm_spec("float16", 1000, 1, fused_add=True), "sm_80"),
    (lambda: jit.rmsnorm_spec("float32", 16384, 1), "sm_90a"),
    (lambda: jit.decode_spec("bfloat16", 128, 4), "sm_90a"),
    (lambda: jit.decode_spec("float16", 64, 8), "sm_80"),
    (lambda: jit.decode_spec("bfloat16", 128, 1), "sm_80"),
]


@unittest.skipIf(SKIP, SKIP or "")
class NvccBuilds(FreshCacheTest):
    CACHE_PREFIX = "cuda_course_jit_nvcc_"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.modules = {}
        cls.seconds = {}
        # Every module compiled side by side: one build_all per architecture (it takes one),
        # the architectures at the same time.
        archs = sorted({a for _, a in BUILDS})
        with ThreadPoolExecutor(max_workers=len(archs)) as pool:
            builds = [pool.submit(cls.cache.build_all, [make() for make, a in BUILDS if a == arch],
                                  arch) for arch in archs]
        for build in builds:
            build.result()  # a CompileError, raised here
        for make, arch in BUILDS:
            spec = make()
            start = time.perf_counter()
            cls.modules[(spec.name, arch)] = cls.cache.load(spec, arch)
            with open(cls.cache.entry(spec, arch).path / "entry.json") as f:
                built = json.load(f)["build_seconds"]
            cls.seconds[(spec.name, arch)] = (built, time.perf_counter() - start)

    def module(self, spec, arch):
        return self.modules[(spec.name, arch)]

    def test_every_template_compiles_and_loads_without_a_gpu(self):
        self.assertEqual(self.cache.stats["compiles"], len(BUILDS))
        for make, arch in BUILDS:
            spec = make()
            module = self.module(spec, arch)
            self.assertEqual(json.loads(module.spec()), json.loads(spec.spec_json()))
            for name in spec.exports:
                self.assertTrue(module.implements_function(name), name)
            built, loaded = self.seconds[(spec.name, arch)]
            print(f"\n    {spec.name} for {arch}: built in {built:.1f} s (beside the others), "
                  f"loaded in {loaded * 1e3:.0f} ms", end="")
        print()

    def test_the_entry_holds_the_sass_of_its_architecture(self):
        spec, arch = jit.decode_spec("float16", 64, 8), "sm_80"
        entry = self.cache.entry(spec, arch)
        with open(entry.path / "build.ninja") as f:
            ninja = f.read()
        self.assertIn("-gencode=arch=compute_80,code=sm_80", ninja)
        self.assertIn("-ltvm_ffi", ninja)
        cuobjdump = shutil.which("cuobjdump") or os.path.join(
            os.path.dirname(jit.NvccToolchain().nvcc), "cuobjdump")
        if not os.path.exists(cuobjdump):
            return  # (the build line above is the check then; cuobjdump is optional)
        listing = subprocess.run([cuobjdump, "--list-elf", str(entry.path / "module.so")],
                                 capture_output=True, text=True).stdout
        self.assertIn("sm_80", listing)

    def test_a_warm_load_compiles_nothing(self):
        warm = jit.JitCache(self.cache.root)
        for make, arch in BUILDS:
            warm.load(make(), arch)
        self.assertEqual(warm.stats["compiles"], 0)
        self.assertEqual(warm.stats["disk_hits"], len(BUILDS))

    @unittest.skipIf(np is None, "numpy is not installed")
    def test_rmsnorm_checks_its_arguments_in_cpp(self):
        m = self.module(jit.rmsnorm_spec("float16", 1000, 1, fused_add=True), "sm_80")
        x = np.ones((4, 1000), np.float16)
        w = np.ones(1000, np.float16)
        cases = [
            ((x.astype(np.float32), x, w, x, 1e-5), TypeError,
             r"^x: expected dtype float16, got float32"),
            ((x, x, w.astype(np.float32), x, 1e-5), TypeError, r"^weight: expected dtype float16"),
            ((x[0], x, w, x, 1e-5), ValueError, r"^x: expected 2 dimensions, got 1"),
            ((np.ones((4, 999), np.float16), x, w, x, 1e-5), ValueError,
             r"^x: dimension 1 must be the hidden size this module was compiled for = 1000"),
            ((x, np.ones((3, 1000), np.float16), w, x, 1e-5), ValueError,
             r"^residual: dimension 0 must be x.shape\[0\] = 4"),
            ((x, x.copy(), np.ones(999, np.float16), x, 1e-5), ValueError, r"^weight: dimension 0"),
            ((x, x.copy(), w, x, -1.0), ValueError, r"^eps: must be finite and >= 0"),
            ((np.ones((4, 2000), np.float16)[:, ::2], x, w, x, 1e-5), ValueError,
             r"^x: must be contiguous"),
            ((x, x.copy(), w, x, 1e-5), ValueError, r"^x: must be on a CUDA device"),
        ]
        for args, kind, message in cases:
            with self.assertRaisesRegex(kind, message):
                m.fused_add_rmsnorm(*args)
        with self.assertRaisesRegex(TypeError, "Expected 5 but got 1"):
            m.fused_add_rmsnorm(x)
        plain = self.module(jit.rmsnorm_spec("bfloat16", 4096, 8), "sm_90a")
        with self.assertRaisesRegex(TypeError, r"^x: expected dtype bfloat16, got float32"):
            plain.rmsnorm(np.ones((2, 4096), np.float32), w, x, 1e-5)

    @unittest.skipIf(np is None, "numpy is not installed")
    def test_decode_attention_checks_its_arguments_in_cpp(self):
        m = self.module(jit.decode_spec("float16", 64, 8), "sm_80")
        batch, kv_heads, page_size, pages = 2, 2, 16, 4
        q = np.zeros((batch, kv_heads * 8, 64), np.float16)
        k = np.zeros((pages, page_size, kv_heads, 64), np.float16)
        indptr = np.array([0, 1, 2], np.int32)
        page_indices = np.array([0, 3], np.int32)
        last = np.array([5, 16], np.int32)
        out = np.zeros_like(q)
        lse = np.zeros((batch, kv_heads * 8), np.float32)

        def call(**change):
            args = dict(q=q, k=k, v=k, indptr=indptr, pages=page_indices, last=last, out=out,
                        lse=lse, po=None, pl=None, splits=1, scale=0.125)
            args.update(change)
            return m.decode_attention(*args.values())

        cases = [
            (dict(q=q.astype(np.float32)), TypeError, r"^q: expected dtype float16, got float32"),
            (dict(q=np.zeros((batch, 16, 128), np.float16)), ValueError,
             r"^q: dimension 2 must be the head_dim this module was compiled for = 64"),
            (dict(q=np.zeros((batch, 12, 64), np.float16)), ValueError,
             r"^q: has 12 heads; this module was compiled for 8 query heads per KV head"),
            (dict(v=k[:, :8].copy()), ValueError, r"^v_cache: dimension 1 must be k_cache's"),
            (dict(indptr=indptr.astype(np.int64)), TypeError, r"^indptr: expected dtype int32"),
            (dict(indptr=indptr[:2]), ValueError, r"^indptr: dimension 0 must be batch \+ 1 = 3"),
            (dict(lse=lse.astype(np.float16)), TypeError, r"^lse: expected dtype float32"),
            (dict(splits=0), ValueError, r"^num_splits: must be 1 \.\. 128"),
            (dict(splits=2), ValueError, r"^partial_o, partial_lse: needed when num_splits > 1"),
            (dict(scale=float("nan")), ValueError, r"^scale: must be finite"),
            ({}, ValueError, r"^q: must be on a CUDA device"),
        ]
        for change, kind, message in cases:
            with self.assertRaisesRegex(kind, message):
                call(**change)


if __name__ == "__main__":
    unittest.main()
