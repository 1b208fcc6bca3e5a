"""cuda_course.jit's RMSNorm on the GPU (Day 6's, specialised per dtype, hidden size and vector
width), against float64 references computed by PyTorch from the same inputs, with the course's
tolerances (jit_support.assert_close: common/course/dtype.h's bounds). Also: the caller's stream
is honoured, a second call compiles nothing, an unaligned tensor gets (and passes with) the
1-element specialisation. Skipped, saying why, without PyTorch, a GPU, nvcc or the JIT's
packages. The modules are compiled into a fresh cache folder, side by side before the tests
(jit.compile_all). Decode attention is test_jit_gpu_decode.py: a file of its own, so that ctest
compiles the two sets of modules at the same time."""

import unittest

from jit_support import FreshCacheTest, assert_close, gpu_missing, torch_dtypes

from cuda_course import jit

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

SKIP = gpu_missing()
DT = torch_dtypes()


@unittest.skipIf(SKIP, SKIP or "")
class GpuRmsNorm(FreshCacheTest):
    CACHE_PREFIX = "cuda_course_jit_gpu_"
    SIZES = ((37, 4096), (5, 1000), (9, 128), (3, 16384), (64, 5120), (2, 1))
    # Every size class in bfloat16 (8-element vectors); float16 moves the same vectors, so two
    # classes; float32 (4-element vectors, twice the registers a row) the four whose vector
    # count, threads or registers differ. A module costs the suite ~9 s of a core to compile.
    SIZES_OF = {"bfloat16": SIZES, "float16": ((37, 4096), (2, 1)),
                "float32": ((5, 1000), (9, 128), (3, 16384), (2, 1))}

    @classmethod
    def setUpClass(cls):
        # The specialisations the tests below call, compiled side by side first (each call then
        # loads its entry from disk; one the list misses is compiled at its call, as usual).
        super().setUpClass()
        specs = [jit.rmsnorm_spec(d, h) for d in DT for _, h in cls.SIZES_OF[d]]
        specs += [jit.rmsnorm_spec(d, 2048, fused_add=True) for d in DT]
        specs += [jit.rmsnorm_spec("bfloat16", 4096, 1), jit.rmsnorm_spec("bfloat16", 3072)]
        jit.compile_all(cache=cls.cache, specs=specs)

    def inputs(self, dtype, rows, hidden, offset=0):
        g = torch.Generator(device="cuda").manual_seed(rows * 7 + hidden)
        buf = (torch.rand(rows * hidden + offset, device="cuda", generator=g) * 4 - 2)
        x = buf.to(DT[dtype])[offset:].view(rows, hidden)
        w = (torch.rand(hidden, device="cuda", generator=g) + 0.5).to(DT[dtype])
        return x, w

    @staticmethod
    def ref(x64, w64, eps):
        return x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w64

    def test_rmsnorm_every_dtype_and_size_class(self):
        for dtype in ("bfloat16", "float16", "float32"):
            for rows, hidden in self.SIZES_OF[dtype]:
                with self.subTest(dtype=dtype, rows=rows, hidden=hidden):
                    x, w = self.inputs(dtype, rows, hidden)
                    y = jit.rmsnorm(x, w, 1e-5, cache=self.cache)
                    self.assertEqual((y.dtype, y.shape), (x.dtype, x.shape))
                    assert_close(self, y, self.ref(x.double(), w.double(), 1e-5),
                                 dtype, f"rmsnorm {dtype} {rows}x{hidden}")

    def test_an_unaligned_tensor_gets_the_one_element_variant(self):
        x, w = self.inputs("bfloat16", 7, 4096, offset=1)  # 2 bytes past a 16-byte boundary
        before = self.cache.stats["compiles"]
        y = jit.rmsnorm(x, w, cache=self.cache)
        assert_close(self, y, self.ref(x.double(), w.double(), 1e-5), "bfloat16",
                     "rmsnorm, unaligned x")
        names = [p.name for p in self.cache.root.iterdir() if p.is_dir()]
        self.assertTrue(any(n.startswith("rmsnorm_bf16_h4096_v1_") for n in names), names)
        self.assertGreaterEqual(self.cache.stats["compiles"], before)

    def test_fused_add_rmsnorm_and_out_aliasing_x(self):
        for dtype in ("bfloat16", "float16", "float32"):
            x, w = self.inputs(dtype, 33, 2048)
            r, _ = self.inputs(dtype, 33, 2048, offset=8)
            r = r.clone()
            s64 = x.double() + r.double()
            want = self.ref(s64, w.double(), 1e-6)
            want_r = (x.float() + r.float()).to(DT[dtype])  # the kernel's float32 sum, rounded
            y = jit.fused_add_rmsnorm(x, r, w, 1e-6, cache=self.cache)
            assert_close(self, y, want, dtype, f"fused_add_rmsnorm {dtype}")
            self.assertTrue(torch.equal(r, want_r), "residual = x + residual, rounded once")
            r2 = (r.double() - x.double()).to(DT[dtype])  # a fresh residual
            x2 = x.clone()
            want = self.ref(x2.double() + r2.double(), w.double(), 1e-6)
            out = jit.fused_add_rmsnorm(x2, r2, w, 1e-6, out=x2, cache=self.cache)
            self.assertEqual(out.data_ptr(), x2.data_ptr())
            assert_close(self, x2, want, dtype, f"fused_add_rmsnorm {dtype}, out=x")

    def test_a_second_call_compiles_nothing(self):
        x, w = self.inputs("bfloat16", 4, 3072)
        jit.rmsnorm(x, w, cache=self.cache)
        compiles = self.cache.stats["compiles"]
        for _ in range(3):
            jit.rmsnorm(x, w, cache=self.cache)
        self.assertEqual(self.cache.stats["compiles"], compiles)
        warm = jit.JitCache(self.cache.root)  # another process, same folder
        jit.rmsnorm(x, w, cache=warm)
        self.assertEqual((warm.stats["compiles"], warm.stats["disk_hits"]), (0, 1))

    def test_the_current_stream_is_used(self):
        x, w = self.inputs("bfloat16", 4096, 4096)
        jit.rmsnorm(x, w, cache=self.cache)  # compiled and warm
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        src = x.clone()
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            x2 = torch.empty_like(x)
            torch.cuda._sleep(50_000_000)  # the side stream is busy for a while ...
            x2.copy_(src)  # ... then writes the input: a kernel on another stream would read junk
            y = jit.rmsnorm(x2, w, cache=self.cache)
        torch.cuda.current_stream().wait_stream(side)
        assert_close(self, y, self.ref(src.double(), w.double(), 1e-5), "bfloat16",
                     "rmsnorm on a side stream")


if __name__ == "__main__":
    unittest.main()
