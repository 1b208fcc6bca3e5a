#!/usr/bin/env python3
"""Check that every tracked C++/CUDA file is formatted by clang-format (.clang-format).

Lists the tracked *.h, *.cuh, *.cpp and *.cu files (git ls-files, from the repository root this
script sits in), runs `clang-format --dry-run --Werror` on them in parallel batches and prints,
for each file that is not formatted, its first line that formatting would change; then
  N of M files are not formatted: run `python3 tools/check_format.py --fix`
--fix formats those files in place (clang-format -i).

clang-format's output changes from one major version to the next, so the project pins one:
PINNED_MAJOR, the version Debian 12 ships and CI runs. With another version, or none, the check
is skipped (exit 77, which ctest reports as skipped) instead of failing on a difference no one
can fix. The same goes for a copy of the tree that is not a git checkout.

Usage: python3 tools/check_format.py [--clang-format PATH] [--fix] [--jobs N]
Exit 0: every file is formatted (or --fix formatted them); 1: some are not, or clang-format
failed; 2: usage error; 77: skipped.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

PINNED_MAJOR = 14
PATTERNS = ("*.h", "*.cuh", "*.cpp", "*.cu")
BATCH = 16  # files per clang-format process
SKIP = 77  # ctest's SKIP_RETURN_CODE for this test
REPO_ROOT = Path(__file__).resolve().parent.parent
FIX_COMMAND = "python3 tools/check_format.py --fix"
INSTALL_HINT = (f"install it with `apt-get install clang-format-{PINNED_MAJOR}` (Debian, Ubuntu) "
                f"or `pip install 'clang-format=={PINNED_MAJOR}.*'`, or pass --clang-format PATH")
# What --dry-run prints for each change it would make:
#   path:line:col: error: code should be clang-formatted [-Wclang-format-violations]
VIOLATION = "[-Wclang-format-violations]"


class Skip(Exception):
    """The check cannot run here; the message says why."""


def find_clang_format(explicit: Optional[str]) -> Tuple[str, str]:
    """(the clang-format to run, its version string); raises Skip when it is missing or not
    the pinned major version."""
    if explicit:
        path = shutil.which(explicit)
        if path is None:
            raise Skip(f"{explicit} is not an executable clang-format; {INSTALL_HINT}")
    else:
        path = shutil.which(f"clang-format-{PINNED_MAJOR}") or shutil.which("clang-format")
        if path is None:
            raise Skip(f"clang-format is not installed (this project pins clang-format "
                       f"{PINNED_MAJOR}); {INSTALL_HINT}")
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise Skip(f"{path} does not run ({e}); {INSTALL_HINT}") from e
    found = re.search(r"version (\d+)\.(\d+)\.(\d+)", out.stdout)
    if found is None:
        raise Skip(f"cannot tell which version {path} is (it printed {out.stdout.strip()!r}); "
                   f"this project pins clang-format {PINNED_MAJOR}: {INSTALL_HINT}")
    version = ".".join(found.groups())
    if int(found.group(1)) != PINNED_MAJOR:
        raise Skip(f"{path} is clang-format {version}, but this project's formatting is pinned "
                   f"to clang-format {PINNED_MAJOR} (each major version formats differently); "
                   f"{INSTALL_HINT}")
    return path, version


def tracked_files(root: Path) -> List[str]:
    """The tracked C++/CUDA files, relative to root; raises Skip outside a git checkout."""
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=root,
                             capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise Skip(f"git is not available ({e}): the check lists the files git tracks") from e
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != root.resolve():
        raise Skip(f"{root} is not a git checkout: the check lists the files git tracks, so it "
                   "needs one (clone the repository instead of copying it)")
    listed = subprocess.run(["git", "ls-files", "-z", "--", *PATTERNS], cwd=root,
                            capture_output=True, text=True, timeout=60, check=True)
    return sorted(f for f in listed.stdout.split("\0") if f and (root / f).is_file())


def batches(files: Sequence[str]) -> List[List[str]]:
    return [list(files[i:i + BATCH]) for i in range(0, len(files), BATCH)]


def run_batch(clang_format: str, root: Path, files: List[str], args: Sequence[str]
              ) -> subprocess.CompletedProcess:
    return subprocess.run([clang_format, *args, "--", *files], cwd=root, capture_output=True,
                          text=True, errors="replace")


def unformatted(clang_format: str, root: Path, files: Sequence[str], jobs: int
                ) -> Tuple[List[str], List[str]]:
    """(the files clang-format would change, error messages) from --dry-run --Werror."""
    found: Dict[str, None] = {}
    errors: List[str] = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = pool.map(lambda b: (b, run_batch(clang_format, root, b,
                                                   ["--dry-run", "--Werror"])), batches(files))
        for batch, done in results:
            named = {f for line in done.stderr.splitlines() if VIOLATION in line
                     for f in batch if line.startswith(f + ":")}
            for f in batch:  # in the order of the listing
                if f in named:
                    found[f] = None
            if done.returncode != 0 and not named:
                errors.append(f"clang-format failed on {' '.join(batch)}:\n{done.stderr.strip()}")
    return list(found), errors


def first_difference(clang_format: str, root: Path, path: str) -> Tuple[int, str, str]:
    """(line number, the line as it is, the line as clang-format writes it) of the first line
    that formatting changes; line 0 when it cannot be told."""
    formatted = subprocess.run([clang_format, "--", path], cwd=root, capture_output=True,
                               text=True, errors="replace")
    if formatted.returncode != 0:
        return 0, "", ""
    have = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()
    want = formatted.stdout.splitlines()
    for n, (a, b) in enumerate(zip(have, want), start=1):
        if a != b:
            return n, a, b
    if len(have) != len(want):
        n = min(len(have), len(want)) + 1
        return n, have[n - 1] if n <= len(have) else "", want[n - 1] if n <= len(want) else ""
    return 0, "", ""  # only the line endings or the final newline differ


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Check (or, with --fix, apply) the clang-format formatting of every "
        "tracked C++/CUDA file.")
    parser.add_argument("--clang-format", metavar="PATH",
                        help=f"the clang-format to run (default: clang-format-{PINNED_MAJOR}, "
                        "else clang-format, from PATH); it must be version "
                        f"{PINNED_MAJOR}.x")
    parser.add_argument("--fix", action="store_true", help="format the files in place")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="clang-format processes at once (default: one per CPU)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")

    root = REPO_ROOT
    try:
        files = tracked_files(root)
        clang_format, version = find_clang_format(args.clang_format)
    except Skip as why:
        print(f"SKIPPED: {why}")
        return SKIP

    bad, errors = unformatted(clang_format, root, files, args.jobs)
    for error in errors:
        print(error, file=sys.stderr)

    if args.fix:
        failed = [done.stderr.strip() for done in
                  (run_batch(clang_format, root, b, ["-i"]) for b in batches(bad))
                  if done.returncode != 0]
        for message in failed:
            print(message, file=sys.stderr)
        print(f"formatted {len(bad)} of {len(files)} files with clang-format {version}")
        return 1 if failed or errors else 0

    for path in bad:  # the first line that differs: as it is (-), as clang-format writes it (+)
        line, have, want = first_difference(clang_format, root, path)
        print(f"{path}:{line}: not formatted" if line else f"{path}: not formatted")
        if line:
            print(f"  - {have}".rstrip())
            print(f"  + {want}".rstrip())
    if bad:
        print(f"{len(bad)} of {len(files)} files are not formatted: run `{FIX_COMMAND}`")
        return 1
    if errors:
        return 1
    print(f"all {len(files)} files are formatted (clang-format {version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
