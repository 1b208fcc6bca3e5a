#!/usr/bin/env bash
# The GPU suite, on a machine with a GPU: build everything with all cores, run the tests of
# every solution and every starter, run the solutions' benchmarks, optionally run the graded
# race and memory checkers over the solutions, and print last a compact table:
#   lab | starter tests (expected: all fail, none crash) | solution tests | key benchmark | % of ceiling
#
# Usage: scripts/gpu-check.sh [--steps "build tests tools check bench grade sanitize attacks"]
#                             [--days "d01 d02"]
#                             [--out DIR]
#   --steps          which steps to run (default: build tests check bench; "all" adds tools,
#                    grade, sanitize and mutants). tools: the tools' own tests (host; CI runs
#                    them); mutants: the planted bugs graded and scored (MUTANTS below)
#                    check: `course check dNN` timed on every day with the solutions in place
#                    grade: a synthetic class graded with `course grade`, and its leaderboard
#                    attacks: the submissions that attack the grader (tests/grading/attacks.py),
#                    graded with and without the object check; every one must be caught
#   --days           only these days (default: every lab in the build)
#   --out            where logs, JUnit XML and benchmark JSON go (default: build/gpu-check)
#   --publish DIR    after the summary, copy what the lessons cite into DIR (results/h100 for
#                    an H100): each day's bench-dNN-solution.{json,log} and sanitizer logs into
#                    DIR/dNN/, the table, gpu.txt and the sanitizers' summary into DIR/suite/
# The table is printed from whatever the out folder holds, so steps can run in separate calls.
# Environment: BENCH_FILTER_dNN (a Google Benchmark filter for that day's rows; default all),
#              BENCH_ROWS=grade (each day's graded rows, lab.json's, where no filter is given),
#              MUTANTS (the mutants step's bugs: correctness (default), performance, all, or ids),
#              MUTANT_TEST_SECONDS, MUTANT_SANITIZE_SECONDS (the mutants step's time limits
#              per test, default 20, and per sanitizer run, default 300: a planted hang costs
#              that much wherever it hangs), MUTANT_JOBS (students graded at once; default 4),
#              SANITIZE_SECONDS (the time limit of each checker run; default 300),
#              SANITIZE_JOBS (checker runs at once; default 1), GRADE_OVERHEAD (grade: grade the
#              class a second time without the sandbox, the object check and the replay, and time
#              both), GRADE_DAYS (grade: only these days of the class, e.g. d02),
#              CHECK_NO_REBUILD (check: leave
#              the starters unbuilt after), ATTACK_JOBS (attacks: students graded at once).
# Exit status: 0 when the table's verdict is OK, 1 otherwise.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
steps="build tests check bench"; days=""; out=build/gpu-check; publish=""
preset=${COURSE_PRESET:-default}
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="$2"; shift ;;
    --days) days="$2"; shift ;;
    --out) out="$2"; shift ;;
    --publish) publish="$2"; shift ;;
    --sanitize) steps="$steps sanitize" ;;  # the old spelling
    *) echo "usage: $0 [--steps \"build tests bench sanitize\"] [--days \"d01 d02\"] [--out DIR] [--publish DIR]" >&2
       exit 2 ;;
  esac
  shift
done
[ "$steps" = all ] && steps="build tests tools check bench grade sanitize mutants attacks"
want() { [[ " $steps " == *" $1 "* ]]; }
mkdir -p "$out"; out=$(cd "$out" && pwd); rm -f "$out/timings.txt" "$out/timings-object-check.txt"
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
  echo "build ($jobs jobs): $(( $(date +%s) - start )) s" | tee -a "$out/timings.txt"
  grep -E "warning" "$out/build.log" | sort -u | head -20
fi
[ -f "$bin/course_manifest.json" ] || { echo "no build in $bin: run with --steps build first"; exit 1; }
manifest_field() {  # manifest_field <python expression over lab> [day]: one line per lab
  python3 -c 'import json, sys
for lab in json.load(open(sys.argv[1]))["labs"]:
    if len(sys.argv) < 4 or lab["day"] == sys.argv[3]:
        print(eval(sys.argv[2]))' "$bin/course_manifest.json" "$@"
}
only_days=""; [ -n "$days" ] && only_days=1
[ -n "$days" ] || days=$(manifest_field 'lab["day"]' | tr '\n' ' ')
day_regex="^($(echo $days | sed 's/ /|/g'))"

if want tests; then
  # The whole suite in one ctest call, as an instructor or CI would run it: every case of every
  # day's solution and starter (one process per day and variant, through the course's test
  # runner), the SASS checks, the harness's own tests. Timed: the suite must stay fast.
  log "tests: everything ctest holds except the tools' own tests ($days)"
  rm -rf "$bin/test-results" "$out/test-results"
  start=$(date +%s.%N)
  select=(-LE '^tools$'); [ -n "$only_days" ] && select+=(-R "$day_regex\\.|^harness\\.")
  ctest --test-dir "$bin" "${select[@]}" -j "$jobs" --timeout 1500 \
    --output-junit "$out/tests.xml" >"$out/tests.log" 2>&1
  end=$(date +%s.%N)
  suite_s=$(python3 -c "print(f'{$end - $start:.1f}')")
  echo "GPU suite (ctest -LE tools, -j $jobs): $suite_s s" | tee -a "$out/timings.txt"
  tail -n 3 "$out/tests.log"
  cp -r "$bin/test-results" "$out/test-results"
  # Figures the tests measured ("[ measured ] ..." lines), for the lessons' tables.
  python3 - "$out" >"$out/measured-lines.txt" <<'PY'
import glob, html, json, re, sys
lines = set()
for path in glob.glob(sys.argv[1] + "/test-results/*.solution.*.json"):
    for case in json.load(open(path)).get("cases", []):
        lines.update(re.findall(r"\[ measured \][^\n]*", case.get("output", "")))
text = open(sys.argv[1] + "/tests.xml", encoding="utf-8", errors="replace").read()
lines.update(html.unescape(m) for m in re.findall(r"\[ measured \][^\n<]*", text))
print("\n".join(sorted(lines)))
PY
  echo "$(wc -l <"$out/measured-lines.txt") measured lines in measured-lines.txt"
fi

if want tools; then
  # The tools' own tests (host only: CI runs them too; here they also see a GPU).
  log "tests: the tools' own tests"
  ctest --test-dir "$bin" -L '^tools$' -j "$jobs" --output-junit "$out/tests-tools.xml" \
    >"$out/tests-tools.log" 2>&1
  tail -n 2 "$out/tests-tools.log"
fi

if want check; then
  # `course check dNN` on a SOLVED day, as a student who has finished it runs it: the solutions
  # are copied over the starters (kept aside and put back after), built, then each day is
  # checked and timed (the build inside check is then a no-op: the time is the check's own).
  log "course check on solved days ($days)"
  mkdir -p "$out/starters"
  for day in $days; do
    lab=$(manifest_field 'lab["name"]' "$day")
    cp "labs/$lab/kernel.cu" "$out/starters/$lab.cu" && cp "solutions/$lab/kernel.cu" "labs/$lab/kernel.cu"
  done
  cmake --build --preset "$preset" -j "$jobs" >"$out/build-solved.log" 2>&1 || tail -n 20 "$out/build-solved.log"
  for day in $days; do
    start=$(date +%s.%N)
    "$bin/course" check "$day" >"$out/check-$day.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    secs=$(python3 -c "print(f'{$end - $start:.1f}')")
    echo "course check $day (solved): exit $rc, $secs s" | tee -a "$out/timings.txt"
    tail -n 4 "$out/check-$day.log" | head -n 2
    # Again without the early object check, then with it (its baseline now read from the file
    # the first check wrote): what that defence costs a student's every later check.
    line="course check $day (solved, again):"
    for flag in --no-object-check ""; do
      start=$(date +%s.%N)
      "$bin/course" check "$day" $flag >/dev/null 2>&1
      end=$(date +%s.%N)
      line="$line ${flag:-with the object check} $(python3 -c "print(f'{$end - $start:.1f}')") s;"
    done
    echo "$line" >>"$out/timings-object-check.txt"
  done
  cat "$out/timings-object-check.txt"
  for f in "$out"/starters/*.cu; do cp "$f" "labs/$(basename "$f" .cu)/kernel.cu"; done
  rm -rf "$out/starters"
  # CHECK_NO_REBUILD=1: the starters are back in the tree but not rebuilt (the last step of a
  # run on a machine that is given back after it).
  [ -n "${CHECK_NO_REBUILD:-}" ] ||
    cmake --build --preset "$preset" -j "$jobs" >"$out/build-restored.log" 2>&1 ||
    tail -n 20 "$out/build-restored.log"
fi

if want bench; then
  for day in $days; do
    exe=$(find "$bin/labs" -name "${day}_solution_bench" -type f | head -n 1)
    [ -n "$exe" ] || continue
    log "benchmark: $day solution"
    filter_var="BENCH_FILTER_$day"  # e.g. BENCH_FILTER_d04='<float>' runs only those rows
    filter=${!filter_var:-.}
    # BENCH_ROWS=grade: the rows a grader times (lab.json's; the headline is among them)
    [ "${BENCH_ROWS:-}" = grade ] && [ -z "${!filter_var:-}" ] &&
      filter=$(manifest_field 'lab["grade_benchmarks"] or "."' "$day")
    timeout 300 "$exe" --benchmark_filter="$filter" --benchmark_format=console \
      --benchmark_out_format=json --benchmark_out="$out/bench-$day-solution.json" \
      >"$out/bench-$day-solution.log" 2>&1
    echo "exit $?"
    grep -E "^BM_|^device|ceiling|ERROR" "$out/bench-$day-solution.log" | cut -c1-180
  done
fi

if want grade; then
  # A synthetic class (tests/grading/synthetic_class.py: correct, partly wrong, not compiling,
  # not linking, crashing, hanging, slow but correct, wrongly named) graded as an instructor
  # would, then its leaderboard.
  log "grading a synthetic class"
  rm -rf "$out/class" "$out/grades"
  python3 tests/grading/synthetic_class.py "$out/class"
  nstudents=$(ls "$out/class" | wc -l)
  start=$(date +%s.%N)
  "$bin/course" grade "$out/class" --out "$out/grades" --jobs 4 --test-timeout 20 \
    ${GRADE_DAYS:+--days "$GRADE_DAYS"} >"$out/grade.log" 2>&1
  echo "course grade exit $?"
  end=$(date +%s.%N)
  echo "grading the synthetic class ($nstudents students): $(python3 -c "print(f'{$end - $start:.0f}')") s" \
    | tee -a "$out/timings.txt"
  grep -E "^[a-z_]+ +\|" "$out/grade.log" | cut -c1-220
  if [ -n "${GRADE_OVERHEAD:-}" ]; then
    # What the defences cost a class's grading: the same class again without the sandbox, the
    # object check and the replay in the reference program (the three that can be switched off
    # to measure them), on the same machine, right after.
    start=$(date +%s.%N)
    "$bin/course" grade "$out/class" --out "$out/grades-undefended" --jobs 4 --test-timeout 20 \
      --no-sandbox --no-object-check --no-replay ${GRADE_DAYS:+--days "$GRADE_DAYS"} \
      >"$out/grade-undefended.log" 2>&1
    echo "course grade --no-sandbox --no-object-check --no-replay exit $?"
    end=$(date +%s.%N)
    echo "grading the synthetic class without the sandbox, the object check and the replay: $(python3 -c "print(f'{$end - $start:.0f}')") s" \
      | tee -a "$out/timings.txt"
  fi
  if "$bin/course" leaderboard --help >/dev/null 2>&1; then
    "$bin/course" leaderboard "$out/grades/students" --out "$out/grades/site" \
      >"$out/leaderboard.log" 2>&1
    echo "course leaderboard exit $?"; head -n 30 "$out/leaderboard.log"
  fi
fi

if want mutants; then
  # The planted bugs of tests/mutants/*.json graded as a class of their own, with the
  # unchanged solution of each day as `reference-dNN`, then scored (tools/mutants.py). MUTANTS selects them:
  # "correctness" (the default: graded without benchmarks, which they do not need), "performance"
  # or "all" (with benchmarks), or a list of ids. Planted bugs are honest code, and the question
  # is only whether a test (or a checker) fails: a day's tests stop at their first failure, the
  # sanitizers run only where every test passed, and the passing cases are not replayed in the
  # reference program (the replay defends against forged verdicts, which a planted bug does not
  # forge). A bug caught this way is caught by a full grading, which runs the same tests.
  log "grading the planted bugs (${MUTANTS:-correctness})"
  rm -rf "$out/mutants" "$out/mutant-grades"
  sel=${MUTANTS:-correctness}
  # With --days, only those days' mutants (and the reference's grading of those days alone).
  ids=$(python3 - "$sel" "${only_days:+$days}" <<'PY'
import json, sys
sel = sys.argv[1].split()
import glob
ms = [m for f in sorted(glob.glob("tests/mutants/*.json")) for m in json.load(open(f))]
if sys.argv[2].split():
    ms = [m for m in ms if m["day"] in sys.argv[2].split()]
if sel in (["correctness"], ["performance"]):
    ms = [m for m in ms if m["kind"] == sel[0]]
elif sel != ["all"]:
    ms = [m for m in ms if m["id"] in sel]
print(" ".join(m["id"] for m in ms))
PY
)
  # Benchmarks only where a performance bug is graded (correctness bugs do not need them).
  nobench=--no-bench
  python3 -c 'import json, sys
sys.exit(0 if any(m["kind"] == "performance" and m["id"] in sys.argv[1:]
                  for f in __import__("glob").glob("tests/mutants/*.json")
                  for m in json.load(open(f))) else 1)' $ids \
    && nobench=""
  python3 tools/mutants.py make-class "$out/mutants" --only $ids
  start=$(date +%s)
  grade_days=(); [ -n "$only_days" ] && grade_days=(--days "$(echo $days | tr " " ",")")
  "$bin/course" grade "$out/mutants" --out "$out/mutant-grades" --jobs "${MUTANT_JOBS:-4}" \
    --test-timeout "${MUTANT_TEST_SECONDS:-20}" --sanitize-timeout "${MUTANT_SANITIZE_SECONDS:-300}" \
    --sanitize-only-if-passed --stop-at-first-failure --no-replay \
    $nobench "${grade_days[@]}" >"$out/mutant-grade.log" 2>&1
  echo "course grade exit $? ($(( $(date +%s) - start )) s)" | tee -a "$out/timings.txt"
  python3 tools/mutants.py score "$out/mutant-grades/gradebook.json" --only $ids \
    >"$out/mutants-score.txt" 2>&1
  echo "mutants score exit $?"; grep -vE "^caught" "$out/mutants-score.txt"
fi

if want attacks; then
  # One submission per class of attack on the grader, next to the honest solution of each day
  # attacked, graded as an instructor would (benchmarks included), with the object check and
  # without it (the sandbox, the replay and the grader's judgement of timings alone).
  for mode in check nocheck; do
    log "attacks on the grader ($mode)"
    flag=""; [ "$mode" = nocheck ] && flag=--no-object-check
    start=$(date +%s)
    python3 tests/grading/attacks.py run --build-dir "$bin" --out "$out/attacks-$mode" --gpu \
      --jobs "${ATTACK_JOBS:-6}" $flag >"$out/attacks-$mode.log" 2>&1
    echo "attacks ($mode): exit $? ($(( $(date +%s) - start )) s)" | tee -a "$out/timings.txt"
    cat "$out/attacks-$mode.log" | cut -c1-220
  done
fi

if want sanitize; then
  # The graded compute-sanitizer runs (`course _sanitize`, the same as ctest's dNN.lab.memcheck
  # and the grader's): the day's tools (lab.json's sanitizers) over every GPU case of the
  # SOLUTION, which must be clean for a student's run to mean anything. The
  # large-index suites stay out (2^31 elements under a ~100x slowdown).
  rm -f "$out/sanitize-summary.txt"
  # SANITIZE_JOBS runs that many (day, tool) checks at once: the checkers' cost is mostly the
  # CPU's (instrumented code, a shadow of every access), and the GPU has room for several.
  sanitize_one() {
    local day=$1 tool=$2 start rc
    start=$(date +%s)
    "$bin/course" _sanitize --manifest "$bin/course_manifest.json" --day "$day" \
      --variant solution --tool "$tool" --seconds "${SANITIZE_SECONDS:-300}" \
      >"$out/sanitize-$day-$tool.log" 2>&1
    rc=$?
    echo "$tool $day: exit $rc ($(( $(date +%s) - start )) s): $(head -n 1 "$out/sanitize-$day-$tool.log")"
    echo "$tool $day exit $rc" >>"$out/sanitize-summary.txt"
  }
  log "compute-sanitizer over the solutions ($days; ${SANITIZE_JOBS:-1} at a time)"
  for day in $days; do
    for tool in $(manifest_field '" ".join(lab["sanitizers"])' "$day"); do
      while [ "$(jobs -rp | wc -l)" -ge "${SANITIZE_JOBS:-1}" ]; do wait -n; done
      sanitize_one "$day" "$tool" &
    done
  done
  wait
fi

log "summary"
python3 tools/gpu_report.py --dir "$out" --days $days | tee "$out/summary.txt"
verdict=${PIPESTATUS[0]}
if [ -n "$publish" ]; then
  # The current measurement folder: one per card, replaced file by file (git keeps the old).
  log "publishing into $publish"
  mkdir -p "$publish/suite"
  for f in summary.txt gpu.txt sanitize-summary.txt; do
    [ -f "$out/$f" ] && cp "$out/$f" "$publish/suite/$f"
  done
  for day in $days; do
    for f in "$out/bench-$day-solution.json" "$out/bench-$day-solution.log" \
             "$out"/sanitize-"$day"-*.log; do
      [ -f "$f" ] && mkdir -p "$publish/$day" && cp "$f" "$publish/$day/"
    done
  done
fi
exit "$verdict"
