#!/usr/bin/env bash
# The GPU suite, on a machine with a GPU: build everything with all cores, run the tests of
# every solution and every starter, run the solutions' benchmarks, optionally run the race and
# memory checkers over the Day 4-6 solutions, and print last a compact table:
#   lab | starter tests (expected: all fail, none crash) | solution tests | key benchmark | % of ceiling
#
# Usage: scripts/gpu-check.sh [--steps "build tests bench sanitize"] [--days "d01 d02"]
#                             [--out DIR]
#   --steps          which steps to run (default: build tests bench; "all" adds sanitize)
#   --days           only these days (default: every lab in the build)
#   --out            where logs, JUnit XML and benchmark JSON go (default: build/gpu-check)
# The table is printed from whatever the out folder holds, so steps can run in separate calls.
# Environment: TEST_VARIANTS (which tests the tests step runs: default "solution lab"),
#              BENCH_FILTER_dNN (a Google Benchmark filter for that day's rows; default all),
#              SANITIZE_SECONDS (the time limit of each checker run; default 300).
# Exit status: 0 when the table's verdict is OK, 1 otherwise.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
steps="build tests bench"; days=""; out=build/gpu-check
preset=${COURSE_PRESET:-default}
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="$2"; shift ;;
    --days) days="$2"; shift ;;
    --out) out="$2"; shift ;;
    --sanitize) steps="$steps sanitize" ;;  # the old spelling
    *) echo "usage: $0 [--steps \"build tests bench sanitize\"] [--days \"d01 d02\"] [--out DIR]" >&2
       exit 2 ;;
  esac
  shift
done
[ "$steps" = all ] && steps="build tests bench sanitize"
want() { [[ " $steps " == *" $1 "* ]]; }
mkdir -p "$out"; out=$(cd "$out" && pwd)
bin=build/$preset
jobs=$(nproc)
log() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

log "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem \
  --format=csv 2>&1 | tee "$out/gpu.txt" || true
{ nvcc --version | tail -n 2; cmake --version | head -n 1; } 2>&1 | tee -a "$out/gpu.txt"

if want build; then
  scripts/third-party.sh || exit 1  # GoogleTest/Benchmark from .deps/ if the machine lacks them
  log "configure + build ($jobs jobs)"
  cmake --preset "$preset" >"$out/configure.log" 2>&1 \
    || { tail -n 40 "$out/configure.log"; echo "CONFIGURE FAILED"; exit 1; }
  grep -E "^-- course:" "$out/configure.log"
  start=$(date +%s)
  if ! cmake --build --preset "$preset" -j "$jobs" >"$out/build.log" 2>&1; then
    grep -E "error|FAILED" "$out/build.log" | head -40; echo "BUILD FAILED"; exit 1
  fi
  echo "built in $(( $(date +%s) - start )) s"
  grep -E "warning" "$out/build.log" | sort -u | head -20
fi
[ -f "$bin/course_manifest.tsv" ] || { echo "no build in $bin: run with --steps build first"; exit 1; }
[ -n "$days" ] || days=$(sed -n 's/^\(d[0-9][0-9]\)\t.*/\1/p' "$bin/course_manifest.tsv" | tr '\n' ' ')
day_regex="^($(echo $days | sed 's/ /|/g'))"

if want tests; then
  for variant in ${TEST_VARIANTS:-solution lab}; do
    log "tests: $variant ($days)"
    ctest --test-dir "$bin" -R "$day_regex\.$variant\." -j "$jobs" --timeout 120 \
      --output-junit "$out/tests-$variant.xml" >"$out/tests-$variant.log" 2>&1
    grep -E "tests passed|Total Test time" "$out/tests-$variant.log"
  done
  log "tests: the harness on the GPU (the benchmark timer; each test alone)"
  ctest --test-dir "$bin" -R '^harness\.gpu\.' --timeout 120 \
    --output-junit "$out/tests-harness-gpu.xml" >"$out/tests-harness-gpu.log" 2>&1
  grep -E "tests passed|Total Test time" "$out/tests-harness-gpu.log"
  # Figures the tests measured ("[ measured ] ..." lines), for the lessons' tables.
  python3 - "$out/tests-solution.xml" "$out/tests-harness-gpu.xml" >"$out/measured-lines.txt" <<'PY'
import html, re, sys
lines = set()
for path in sys.argv[1:]:
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError as e:
        print(f"(no measured lines from {path}: {e})", file=sys.stderr)
        continue
    lines.update(html.unescape(m) for m in re.findall(r"\[ measured \][^\n<]*", text))
print("\n".join(sorted(lines)))
PY
  echo "$(wc -l <"$out/measured-lines.txt") measured lines in measured-lines.txt"
  log "host tests (harness, tools, SASS checks)"
  ctest --test-dir "$bin" -L host -LE '^lab$' -j "$jobs" --output-junit "$out/tests-host.xml" \
    >"$out/tests-host.log" 2>&1
  grep -E "tests passed|Total Test time" "$out/tests-host.log"
  grep -E "\(Failed\)|\(Timeout\)" "$out/tests-host.log" | head -20
fi

if want bench; then
  for day in $days; do
    exe=$(find "$bin/labs" -name "${day}_solution_bench" -type f | head -n 1)
    [ -n "$exe" ] || continue
    log "benchmark: $day solution"
    filter_var="BENCH_FILTER_$day"  # e.g. BENCH_FILTER_d04='<float>' runs only those rows
    timeout 300 "$exe" --benchmark_filter="${!filter_var:-.}" --benchmark_format=console \
      --benchmark_out_format=json --benchmark_out="$out/bench-$day-solution.json" \
      >"$out/bench-$day-solution.log" 2>&1
    echo "exit $?"
    grep -E "^BM_|^device|ceiling|ERROR" "$out/bench-$day-solution.log" | cut -c1-180
  done
fi

if want sanitize; then
  # racecheck (shared-memory races) and memcheck (out-of-bounds and misaligned accesses) over
  # the solutions of the days that use shared memory; the tests' shapes are small enough for
  # the checkers' ~100x slowdown. Exit 124: the time limit ended the run (not clean, not dirty).
  rm -f "$out/sanitize-summary.txt"
  for day in $days; do
    case "$day" in d0[4-6]) ;; *) continue ;; esac
    exe=$(find "$bin/labs" -name "${day}_solution_tests" -type f | head -n 1)
    [ -n "$exe" ] || continue
    for tool in racecheck memcheck; do
      log "compute-sanitizer --tool $tool $day"
      timeout "${SANITIZE_SECONDS:-300}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
        "$exe" --gtest_brief=1 >"$out/sanitize-$day-$tool.log" 2>&1
      rc=$?
      echo "exit $rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize-$day-$tool.log" \
        | tail -n 1) $(grep -E '^\[  (PASSED|FAILED)' "$out/sanitize-$day-$tool.log" | tr '\n' ' ')"
      echo "$tool $day exit $rc" >>"$out/sanitize-summary.txt"
    done
  done
fi

log "summary"
python3 tools/gpu_report.py --dir "$out" --days $days
