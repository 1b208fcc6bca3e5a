#!/usr/bin/env bash
# How long the grader takes to build ONE student, on a given number of cores: a submission that
# holds every solution of the chosen days (solution-sized files, nothing in the object cache),
# graded without benchmarks under `taskset`, so that a 16-core GPU machine measures what a
# 2-core grading machine would. The figure is the build time the grader itself records
# (grade.json: seconds.build: compiling the student's kernel.cu files and linking the day's
# test and benchmark programs); the class build (tests, benchmarks, harness) is not counted, it
# is built once per class.
#
# Usage: scripts/student-build-time.sh [--cores N] [--days "d01 d02 ..."] [--build-dir DIR]
#   --cores      cores to allow (default 2: the issue's target machine)
#   --days       the days handed in (default: Days 1-6)
#   --build-dir  a built class build (default: build/default)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cores=2; days="d01 d02 d03 d04 d05 d06"; bdir=build/default
while [ $# -gt 0 ]; do
  case "$1" in
    --cores) cores="$2"; shift ;;
    --days) days="$2"; shift ;;
    --build-dir) bdir="$2"; shift ;;
    *) echo "usage: $0 [--cores N] [--days \"d01 d02\"] [--build-dir DIR]" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$bdir/course" ] || { echo "$bdir/course not found: build the class build first" >&2; exit 2; }
command -v taskset >/dev/null || { echo "taskset not found (util-linux)" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for d in $days; do
  sol=$(ls -d solutions/${d}_* 2>/dev/null | head -n 1)
  [ -n "$sol" ] || { echo "no solution folder for $d" >&2; exit 2; }
  mkdir -p "$work/subs/solved/$(basename "$sol")"
  cp "$sol/kernel.cu" "$work/subs/solved/$(basename "$sol")/kernel.cu"
done
last=$(( cores - 1 ))
arch=$(grep -E "^CMAKE_CUDA_ARCHITECTURES:" "$bdir/CMakeCache.txt" | cut -d= -f2)
taskset -c "0-$last" "$bdir/course" grade "$work/subs" --out "$work/grades" --jobs 1 --no-bench \
  --days "$(echo $days | tr ' ' ',')" >"$work/grade.log" 2>&1 || true
python3 - "$work/grades/students/solved/grade.json" "$cores" "$arch" "$days" <<'PY'
import json, sys
path, cores, arch, days = sys.argv[1:]
try:
    g = json.load(open(path))
except (OSError, ValueError) as e:
    sys.exit(f"student-build-time: the grader wrote no grade.json ({e})")
print(f"per-student build, {len(days.split())} solution-sized days ({days}), {cores} cores, "
      f"architectures {arch}: {g['seconds']['build']:.1f} s "
      f"(tests {g['seconds']['tests']:.1f} s, not counted)")
PY
