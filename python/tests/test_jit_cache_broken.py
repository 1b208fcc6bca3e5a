"""cuda_course.jit's on-disk cache never loads a bad entry (Day 13's rules), with the host-only
modules of test_jit_cache.py: a truncated module, a flipped byte, an unreadable or another key's
entry.json and a missing module are each found broken and rebuilt, and a failed build raises and
leaves nothing behind. A file of its own so that ctest runs these builds next to
test_jit_cache.py's instead of after them."""

import json
import os
import unittest

from jit_support import HostCacheTest, missing_for_build, selftest_spec

from cuda_course import jit

BUILD_SKIP = missing_for_build()


@unittest.skipIf(BUILD_SKIP, BUILD_SKIP or "")
class BrokenEntries(HostCacheTest):

    def test_broken_entries_are_rebuilt_not_loaded(self):
        spec = selftest_spec(7)
        self.cache().load(spec)
        (entry,) = self.entries()
        so = os.path.join(self.root, entry, "module.so")
        manifest = os.path.join(self.root, entry, "entry.json")
        with open(so, "rb") as f:
            good = f.read()

        # Each damage REPLACES the file (a new inode): this process has module.so mapped, and
        # changing a mapped library in place would crash it (SIGBUS), not test the cache.
        def replace(path, data):
            with open(path + ".new", "wb") as f:
                f.write(data)
            os.replace(path + ".new", path)

        def breaks(damage, why):
            damage()
            cache = self.cache()
            self.assertRegex(cache.check(cache.entry(spec)), why)
            self.assertEqual(cache.load(spec).add_constant(1), 8, "rebuilt and working")
            self.assertEqual((cache.stats["compiles"], cache.stats["broken"]), (1, 1))
            self.assertIsNone(cache.check(cache.entry(spec)), "whole again")

        def flip_a_byte():
            data = bytearray(good)
            data[len(data) // 2] ^= 0xFF
            replace(so, bytes(data))

        def other_key():
            with open(manifest) as f:
                m = json.load(f)
            m["key"] = "0" * 64
            replace(manifest, json.dumps(m).encode())

        breaks(lambda: replace(so, good[: len(good) // 2]), "bytes, the entry says")
        breaks(flip_a_byte, "SHA-256")
        breaks(lambda: replace(manifest, b"{not json"), "unreadable")
        breaks(other_key, "another key")
        breaks(lambda: os.remove(so), "missing")
        self.assertEqual(len(self.entries()), 1, "the broken entries are gone")

    def test_a_failed_build_raises_and_leaves_nothing(self):
        spec = jit.JitSpec("selftest_bad", "selftest.cc.jinja", {"addend": "1 +"},
                           exports=("add_constant",))
        cache = self.cache()
        with self.assertRaises(jit.CompileError) as ctx:
            cache.load(spec)
        self.assertIn("selftest_bad", str(ctx.exception))
        self.assertIn("error", str(ctx.exception))
        self.assertEqual(self.entries(), [], "no entry and no temporary folder")


if __name__ == "__main__":
    unittest.main()
