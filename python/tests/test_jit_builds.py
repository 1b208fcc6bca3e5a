"""cuda_course.jit's cache under builds side by side (JitCache.build_all) and first uses from
several processes at once (Day 13's rules: one compile, the others wait on the entry's lock), with
the host-only modules of test_jit_cache.py. A file of its own so that ctest runs these builds
next to test_jit_cache.py's instead of after them."""

import json
import os
import subprocess
import sys
import textwrap
import time
import unittest

from jit_support import HostCacheTest, missing_for_build, selftest_spec

from cuda_course import jit

BUILD_SKIP = missing_for_build()
PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


@unittest.skipIf(BUILD_SKIP, BUILD_SKIP or "")
class Builds(HostCacheTest):
    def test_build_all_compiles_each_missing_entry_once_side_by_side(self):
        cache = self.cache()
        specs = [selftest_spec(21), selftest_spec(22), selftest_spec(21)]  # a repeat: one entry
        self.assertEqual(cache.build_all(specs, jobs=2), 2)
        self.assertEqual(len(self.entries()), 2)
        self.assertEqual(cache.build_all(specs), 0, "whole entries are not built again")
        self.assertEqual(cache.load(selftest_spec(22)).add_constant(1), 23)
        self.assertEqual((cache.stats["compiles"], cache.stats["disk_hits"]), (2, 1))

    def test_build_all_builds_the_others_then_raises_the_failure(self):
        bad = jit.JitSpec("selftest_bad", "selftest.cc.jinja", {"addend": "1 +"},
                          exports=("add_constant",))
        cache = self.cache()
        with self.assertRaises(jit.CompileError) as ctx:
            cache.build_all([bad, selftest_spec(23)], jobs=2)
        self.assertIn("selftest_bad", str(ctx.exception))
        (entry,) = self.entries()
        self.assertTrue(entry.startswith("selftest_a23-"), entry)

    def test_concurrent_first_use_compiles_once(self):
        processes = 4
        start = os.path.join(self.root, "go")
        script = textwrap.dedent(f"""
            import json, os, sys, time
            sys.path.insert(0, {PYTHON_DIR!r})
            sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
            from cuda_course import jit
            from jit_support import selftest_spec
            cache = jit.JitCache({self.root!r}, arch="sm_90a", toolchain=jit.HostCxxToolchain())
            spec = selftest_spec(11)
            cache.entry(spec)  # render and ask the compiler's version before the start
            open(os.path.join({self.root!r}, f"ready-{{os.getpid()}}"), "w").close()
            while not os.path.exists({start!r}):
                time.sleep(0.005)
            value = cache.load(spec).add_constant(31)
            print(json.dumps(dict(cache.stats, value=value)))
        """)
        # Host modules only: TVM-FFI need not import PyTorch for its optional DLPack addon
        # (seconds per process, more on a busy machine).
        env = dict(os.environ, TVM_FFI_DISABLE_TORCH_C_DLPACK="1")
        procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
                 for _ in range(processes)]
        # The start line: once every process has imported and is waiting at it (or one ended,
        # which the checks below report), they all start together.
        deadline = time.monotonic() + 120
        while (sum(n.startswith("ready-") for n in os.listdir(self.root)) < processes
               and time.monotonic() < deadline and all(p.poll() is None for p in procs)):
            time.sleep(0.01)
        open(start, "w").close()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, err)
            results.append(json.loads(out.strip().splitlines()[-1]))
        self.assertEqual([r["value"] for r in results], [42] * processes)
        self.assertEqual(sum(r["compiles"] for r in results), 1,
                         f"exactly one process compiles: {results}")
        self.assertEqual(sum(r["disk_hits"] for r in results), processes - 1)
        self.assertGreaterEqual(sum(r["waited"] for r in results), 1,
                                f"the others waited on the lock while it built: {results}")
        self.assertEqual(len(self.entries()), 1)


if __name__ == "__main__":
    unittest.main()
