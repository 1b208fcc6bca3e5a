#!/usr/bin/env bash
# The GPU suite, on a machine with a GPU: build everything with all cores, run the tests of
# every solution and every starter, run the solutions' benchmarks briefly, optionally run the
# race and memory checkers over the solutions, and print last a compact table:
#   lab | starter tests (expected: all fail, none crash) | solution tests | key benchmark | % of ceiling
# Usage: scripts/gpu-check.sh [--sanitize] [--days "d01 d02"] [--out DIR]
#   --sanitize   also run compute-sanitizer racecheck + memcheck over the Day 4-6 solution tests
#   --days       only these days (default: all)
#   --out        where logs, JUnit XML and benchmark JSON go (default: build/gpu-check)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
sanitize=0; days=""; out=build/gpu-check; preset=${COURSE_PRESET:-default}
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize=1 ;;
    --days) days="$2"; shift ;;
    --out) out="$2"; shift ;;
    *) echo "usage: $0 [--sanitize] [--days \"d01 d02\"] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$out"
bin=build/$preset
jobs=$(nproc)
log() { printf '\n=== %s\n' "$*"; }

log "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv || true
log "configure + build ($jobs jobs)"
cmake --preset "$preset" >"$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
start=$(date +%s)
if ! cmake --build --preset "$preset" -j "$jobs" >"$out/build.log" 2>&1; then
  grep -E "error|FAILED" "$out/build.log" | head -40; echo "BUILD FAILED"; exit 1
fi
echo "built in $(( $(date +%s) - start )) s"
[ -n "$days" ] || days=$(sed -n 's/^\(d[0-9][0-9]\)\t.*/\1/p' "$bin/course_manifest.tsv" | tr '\n' ' ')

for variant in solution lab; do
  log "tests: $variant ($days)"
  regex="^($(echo $days | sed 's/ /|/g'))\.$variant\."
  ctest --test-dir "$bin" -R "$regex" -j 8 --timeout 120 --output-junit "$PWD/$out/tests-$variant.xml" \
    >"$out/tests-$variant.log" 2>&1
  tail -n 3 "$out/tests-$variant.log"
done
log "host tests (harness, tools, SASS checks)"
ctest --test-dir "$bin" -L host -j 8 --output-junit "$PWD/$out/tests-host.xml" >"$out/tests-host.log" 2>&1
tail -n 3 "$out/tests-host.log"

if [ $sanitize -eq 1 ]; then
  for day in $days; do
    case "$day" in d0[4-6]) ;; *) continue ;; esac
    exe=$(find "$bin/labs" -name "${day}_solution_tests" -type f | head -n 1)
    [ -n "$exe" ] || continue
    for tool in racecheck memcheck; do
      log "compute-sanitizer --tool $tool $day"
      compute-sanitizer --tool "$tool" --error-exitcode 99 "$exe" --gtest_brief=1 \
        >"$out/sanitize-$day-$tool.log" 2>&1
      echo "exit $? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize-$day-$tool.log" | tail -n 1))"
    done
  done
fi

for day in $days; do
  exe=$(find "$bin/labs" -name "${day}_solution_bench" -type f | head -n 1)
  [ -n "$exe" ] || continue
  log "benchmark: $day solution"
  "$exe" --benchmark_format=console --benchmark_out_format=json \
    --benchmark_out="$out/bench-$day-solution.json" >"$out/bench-$day-solution.log" 2>&1
  grep -E "^BM_|device|ceiling" "$out/bench-$day-solution.log" | cut -c1-200
done

log "summary"
python3 tools/gpu_report.py --dir "$out" --days $days
