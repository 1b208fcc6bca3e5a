#!/usr/bin/env python3
"""Runs a folder of Python unittest tests as ONE ctest test that never hides a skip.

    python3 tools/unittest_run.py <start folder> [<file pattern, default test*.py>]

unittest's own exit status is 0 when every test passed or skipped, so ctest would count a run
whose GPU tests all skipped as passed. Here the status is 0 only when every test ran and passed,
1 when one failed or erred, and 77 (ctest's SKIP_RETURN_CODE) when none failed but some were
skipped: the last line says how many, and why.
"""

import sys
import unittest


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    pattern = argv[2] if len(argv) == 3 else "test*.py"
    suite = unittest.defaultTestLoader.discover(argv[1], pattern=pattern, top_level_dir=argv[1])
    if suite.countTestCases() == 0:
        print(f"no tests match {pattern} in {argv[1]}", file=sys.stderr)
        return 1
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    if result.failures or result.errors:
        return 1
    if result.skipped:
        reasons = {}
        for _, why in result.skipped:
            reasons[why] = reasons.get(why, 0) + 1
        said = "; ".join(f"{n} because {why}" for why, n in sorted(reasons.items(),
                                                                     key=lambda x: -x[1]))
        print(f"{result.testsRun - len(result.skipped)} passed, {len(result.skipped)} skipped "
              f"(not passed): {said}")
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
