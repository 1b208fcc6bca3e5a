"""cuda_course.jit's rendering and on-disk cache (Day 13's rules), on any machine with a host C++
compiler: the modules are real TVM-FFI libraries built through ninja from a host-only template
(selftest.cc.jinja) with the host compiler, so that each build takes seconds, not nvcc's tens.
test_jit_compile.py builds the CUDA templates with nvcc; test_jit_cache_broken.py, broken entries
and failed builds; test_jit_builds.py, builds side by side and from several processes at once
(files of their own: ctest runs each file in its own process, next to the others)."""

import json
import os
import unittest

from jit_support import HostCacheTest, missing_for_build, missing_for_render, selftest_spec

from cuda_course import jit
from cuda_course.jit import _cache

RENDER_SKIP = missing_for_render()
BUILD_SKIP = missing_for_build()


@unittest.skipIf(RENDER_SKIP, RENDER_SKIP or "")
class Rendering(unittest.TestCase):
    def test_the_parameters_are_in_the_source(self):
        src = jit.rmsnorm_spec("bfloat16", 4096, 8).render()
        self.assertIn("using T = __nv_bfloat16;", src)
        self.assertIn("constexpr int kHidden = 4096;", src)
        self.assertIn("constexpr int N = 8;", src)
        self.assertIn("constexpr int kThreads = 256;", src)  # 512 vectors: Day 6's 256 threads
        self.assertIn("constexpr int V = 2;", src)
        self.assertIn("TVM_FFI_DLL_EXPORT_TYPED_FUNC(rmsnorm, rmsnorm);", src)
        self.assertNotIn("fused_add_rmsnorm_kernel", src)
        src = jit.decode_spec("float16", 64, 8).render()
        self.assertIn("using T = __half;", src)
        self.assertIn("constexpr int kHeadDim = 64;", src)
        self.assertIn("constexpr int kGroupSize = 8;", src)

    def test_the_rendered_source_is_the_whole_translation_unit(self):
        src = jit.decode_spec("bfloat16", 128, 4).render()
        self.assertIn("__device__ __forceinline__ float warp_sum(float v)", src)  # pasted in
        self.assertIn("namespace course_ffi", src)
        self.assertNotIn("{{", src)
        self.assertNotIn("{%", src)
        includes = {line.split()[1] for line in src.splitlines() if line.startswith("#include")}
        self.assertTrue(all(i.startswith("<") for i in includes),
                        f"only system, CUDA and TVM-FFI headers stay includes: {includes}")

    def test_each_parameter_changes_the_source(self):
        base = jit.rmsnorm_spec("bfloat16", 4096, 8)
        others = [jit.rmsnorm_spec("float16", 4096, 8), jit.rmsnorm_spec("bfloat16", 4104, 8),
                  jit.rmsnorm_spec("bfloat16", 4096, 1),
                  jit.rmsnorm_spec("bfloat16", 4096, 8, fused_add=True)]
        sources = {base.render()} | {s.render() for s in others}
        self.assertEqual(len(sources), 5)
        self.assertEqual(len({s.name for s in [base] + others}), 5, "names differ too")
        d = [jit.decode_spec(t, h, g).render()
             for t in ("float16", "bfloat16") for h in (64, 128) for g in (1, 4, 8)]
        self.assertEqual(len(set(d)), 12)

    def test_rendering_is_deterministic(self):
        self.assertEqual(jit.decode_spec("bfloat16", 128, 4).render(),
                         jit.decode_spec("bfloat16", 128, 4).render())

    def test_the_module_reports_its_parameters(self):
        spec = jit.rmsnorm_spec("float32", 100, 1)
        self.assertIn(json.dumps(spec.spec_json()), spec.render())
        self.assertEqual(json.loads(spec.spec_json())["hidden"], 100)

    def test_bad_parameters_are_refused_before_rendering(self):
        with self.assertRaisesRegex(TypeError, "dtype"):
            jit.rmsnorm_spec("int8", 4096, 1)
        with self.assertRaisesRegex(ValueError, "hidden"):
            jit.rmsnorm_spec("float32", 16385, 1)
        with self.assertRaisesRegex(ValueError, "vec"):
            jit.rmsnorm_spec("float32", 4098, 4)
        with self.assertRaisesRegex(ValueError, "head_dim"):
            jit.decode_spec("float16", 96, 1)
        with self.assertRaisesRegex(ValueError, "group_size"):
            jit.decode_spec("float16", 128, 9)
        with self.assertRaisesRegex(TypeError, "float16 or bfloat16"):
            jit.decode_spec("float32", 128, 1)


class Key(unittest.TestCase):
    FIELDS = [("source", "x"), ("compiler", "nvcc 13.0"), ("options", "-O3"),
              ("arch", "sm_90a"), ("tvm_ffi", "0.1")]

    def test_every_ingredient_changes_the_key(self):
        base = jit.cache_key(self.FIELDS)
        self.assertRegex(base, r"^[0-9a-f]{64}$", "SHA-256, hex")
        for i, (name, value) in enumerate(self.FIELDS):
            changed = list(self.FIELDS)
            changed[i] = (name, value + " ")
            self.assertNotEqual(jit.cache_key(changed), base, f"{name} must be in the key")

    def test_fields_are_length_prefixed(self):
        self.assertNotEqual(jit.cache_key([("a", "bc")]), jit.cache_key([("ab", "c")]))
        self.assertNotEqual(jit.cache_key([("a", "b"), ("c", "d")]),
                            jit.cache_key([("a", "b\n1:c\n1:d")]))

    def test_the_architecture_is_normalised(self):
        for given in ("sm_90a", "90a", "compute_90a", (9, 0), "9.0"):
            self.assertEqual(jit.normalize_arch(given), "sm_90a")
        self.assertEqual(jit.normalize_arch((8, 0)), "sm_80")
        self.assertEqual(jit.normalize_arch("sm_120"), "sm_120")
        with self.assertRaises(ValueError):
            jit.normalize_arch("hopper")

    @unittest.skipIf(missing_for_build(nvcc=True), str(missing_for_build(nvcc=True)))
    def test_the_nvcc_key_names_compiler_options_architecture_and_tvm_ffi(self):
        import tvm_ffi

        fields = dict(jit.NvccToolchain().key_fields("sm_90a"))
        self.assertEqual(set(fields), {"compiler", "options", "arch", "tvm_ffi"})
        self.assertRegex(fields["compiler"], r"V\d+\.\d+\.\d+", "nvcc's exact version")
        self.assertIn("-gencode=arch=compute_90a,code=sm_90a", fields["options"])
        self.assertIn("-O3", fields["options"])
        self.assertNotIn("-I", fields["options"], "include paths say where, not what: not keyed")
        self.assertEqual(fields["arch"], "sm_90a")
        self.assertEqual(fields["tvm_ffi"], tvm_ffi.__version__)
        self.assertNotEqual(jit.NvccToolchain().key_fields("sm_80"), list(fields.items()))


@unittest.skipIf(BUILD_SKIP, BUILD_SKIP or "")
class DiskCache(HostCacheTest):

    def test_cold_then_warm_then_another_process(self):
        spec = selftest_spec(5)
        cold = self.cache()
        module = cold.load(spec)
        self.assertEqual(module.add_constant(37), 42, "the module works")
        self.assertEqual(cold.stats["compiles"], 1)
        self.assertEqual(cold.load(spec).add_constant(0), 5)
        self.assertEqual(cold.stats["compiles"], 1, "the second use compiles nothing")
        self.assertEqual(cold.stats["memory_hits"], 1)
        warm = self.cache()  # a new cache object: what a new process sees
        self.assertEqual(warm.load(spec).add_constant(1), 6)
        self.assertEqual((warm.stats["compiles"], warm.stats["disk_hits"]), (0, 1))
        (entry,) = self.entries()
        self.assertTrue(entry.startswith("selftest_a5-"))
        files = set(os.listdir(os.path.join(self.root, entry)))
        self.assertTrue({"module.cc", "build.ninja", "module.so", "entry.json"} <= files, files)
        with open(os.path.join(self.root, entry, "entry.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["size"], os.path.getsize(
            os.path.join(self.root, entry, "module.so")))
        self.assertEqual(manifest["spec"], {"template": "selftest.cc.jinja", "addend": 5})
        self.assertFalse([p for p in os.listdir(self.root) if p.startswith(".build-")],
                         "no temporary folder is left")

    def test_a_changed_template_parameter_is_a_new_entry(self):
        cache = self.cache()
        self.assertEqual(cache.load(selftest_spec(1)).add_constant(0), 1)
        self.assertEqual(cache.load(selftest_spec(2)).add_constant(0), 2)
        self.assertEqual(cache.stats["compiles"], 2)
        self.assertEqual(len(self.entries()), 2)
        a, b = cache.entry(selftest_spec(1)), cache.entry(selftest_spec(2))
        self.assertNotEqual(a.key, b.key)

    def test_a_changed_architecture_is_a_new_entry(self):
        cache = self.cache()
        cache.load(selftest_spec(3), "sm_90a")
        cache.load(selftest_spec(3), "sm_80")
        self.assertEqual(cache.stats["compiles"], 2)
        self.assertEqual(len(self.entries()), 2)

    def test_clear_removes_entries(self):
        cache = self.cache()
        cache.load(selftest_spec(4))
        cache.clear()
        self.assertEqual(self.entries(), [])
        cache.load(selftest_spec(4))
        self.assertEqual(cache.stats["compiles"], 2)


class DefaultRoot(unittest.TestCase):
    def test_environment_then_xdg_then_home(self):
        saved = {k: os.environ.get(k) for k in ("CUDA_COURSE_JIT_CACHE", "XDG_CACHE_HOME")}
        try:
            os.environ["CUDA_COURSE_JIT_CACHE"] = "/some/where"
            self.assertEqual(str(_cache.default_root()), "/some/where")
            del os.environ["CUDA_COURSE_JIT_CACHE"]
            os.environ["XDG_CACHE_HOME"] = "/xdg"
            self.assertEqual(str(_cache.default_root()), "/xdg/cuda-course/jit")
            del os.environ["XDG_CACHE_HOME"]
            self.assertTrue(str(_cache.default_root()).endswith(".cache/cuda-course/jit"))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


if __name__ == "__main__":
    unittest.main()
