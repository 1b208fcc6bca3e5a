#!/usr/bin/env bash
# Grading a class through Slurm, end to end, on whatever cluster `sbatch` reaches (in CI: the
# one-node cluster of tests/slurm/start-slurm.sh):
#
#   tests/slurm/test_slurm_grading.sh <class build dir>
#
# A synthetic class of three students, d01 only (tests/grading/synthetic_class.py: correct,
# not_compiling, wrongly_named), graded by scripts/slurm/grade-class.sh with --wait: one array
# task per student, then the merge job. Checks the gradebook (the three students), each
# student's grade.json and report.md, the Slurm logs, that not_compiling's d01 is compile_failed,
# that on a machine without a GPU the GPU tests are "not run" and earn nothing, with the
# reason, and are never passed; then
# re-submits one student by name (--student) and checks that task graded that student.
# Exit status: 0 passed, 1 failed, 77 skipped (no sbatch, or the cluster does not answer).
# The work folder is made inside the build (a cluster's nodes see it where they see the
# build); it is removed when the test passes and kept, for a look, when it fails.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
BUILD=${1:-}
SKIP=77
fail() { echo "FAILED: $*" >&2; exit 1; }
skip() { echo "SKIPPED: $*"; exit $SKIP; }

[ -n "$BUILD" ] || fail "usage: $0 <class build dir>"
command -v sbatch >/dev/null || skip "sbatch is not installed (tests/slurm/start-slurm.sh starts a one-node cluster)"
states=$(timeout 20 sinfo -h -o %T 2>/dev/null) || skip "the Slurm cluster does not answer (sinfo failed; tests/slurm/start-slurm.sh starts one)"
echo "$states" | grep -qE '^(idle|mixed|allocated|completing)' ||
  skip "no Slurm node is up (sinfo: $(echo $states))"
[ -f "$BUILD/course_manifest.json" ] || fail "$BUILD is not a configured course build"
BUILD=$(cd "$BUILD" && pwd -P)

WORK=$(mktemp -d "$BUILD/test-slurm.XXXXXX") || fail "cannot make a work folder in $BUILD"
SUBS=$WORK/subs OUT=$WORK/out
python3 "$ROOT/tests/grading/synthetic_class.py" "$SUBS" --days d01 >/dev/null ||
  fail "the synthetic class could not be made"
for d in "$SUBS"/*/; do
  case "$(basename "$d")" in correct|not_compiling|wrongly_named) ;; *) rm -rf "$d" ;; esac
done
[ "$(ls "$SUBS" | tr '\n' ' ')" = "correct not_compiling wrongly_named " ] ||
  fail "the synthetic class is not the three students: $(ls "$SUBS")"

started=$SECONDS
COURSE_SLURM_POLL=2 "$ROOT/scripts/slurm/grade-class.sh" "$SUBS" "$OUT" --build-dir "$BUILD" \
  --days d01 --no-bench --gres "" --time 00:20:00 --wait --wait-timeout 900
rc=$?
echo "grade-class.sh --wait: exit $rc after $((SECONDS - started)) s"
[ "$rc" -eq 0 ] || fail "grade-class.sh exited $rc (work folder kept: $WORK)"

python3 - "$OUT" <<'EOF' || fail "the gradebook is not right (work folder kept: $WORK)"
import csv, glob, json, os, sys
out = sys.argv[1]
errors = []
book = json.load(open(os.path.join(out, "gradebook.json")))
students = {s["student"]: s for s in book["students"]}
if sorted(students) != ["correct", "not_compiling", "wrongly_named"]:
    errors.append(f"gradebook.json lists {sorted(students)}")
for name in ("correct", "not_compiling", "wrongly_named"):
    for f in ("grade.json", "report.md", "junit.xml"):
        if not os.path.isfile(os.path.join(out, "students", name, f)):
            errors.append(f"students/{name}/{f} is missing")
for f in ("gradebook.csv", "junit.xml"):
    if not os.path.isfile(os.path.join(out, f)):
        errors.append(f"{f} is missing")
# One log per array task and one for the merge: each task graded its own student.
logs = sorted(glob.glob(os.path.join(out, "slurm", "*_[0-9]*.log")))
if len(logs) != 3:
    errors.append(f"{len(logs)} task logs in {out}/slurm, not 3")
for log in logs:
    text = open(log).read()
    if "ended with exit status 0" not in text:
        errors.append(f"{os.path.basename(log)}: the task did not end well:\n{text[-1500:]}")
if len(glob.glob(os.path.join(out, "slurm", "*_merge.log"))) != 1:
    errors.append("no merge log")


def d01(name):
    days = [d for d in students.get(name, {}).get("days", []) if d["day"] == "d01"]
    return days[0] if days else {}


nc = d01("not_compiling")
if nc.get("status") != "compile_failed":
    errors.append(f"not_compiling's d01 is {nc.get('status')!r}, not compile_failed")
elif "error" not in nc.get("message", ""):
    errors.append("not_compiling's d01 has no compiler message")
if d01("wrongly_named").get("status") != "not_submitted":
    errors.append(f"wrongly_named's d01 is {d01('wrongly_named').get('status')!r} "
                  "(a flat d01.cu is not taken for labs/.../kernel.cu)")
ok = d01("correct")
if ok.get("status") != "graded":
    errors.append(f"correct's d01 is {ok.get('status')!r}, not graded")
elif not students["correct"]["gpu"]:
    # No GPU: the GPU tests did not run. They earn nothing, say why, and are never passed.
    for e in ok["exercises"]:
        if e["points"] != 0 or e["status"] != "not_run" or "no GPU" not in e.get("reason", ""):
            errors.append(f"correct d01 {e['exercise']}: {e['points']!r} points, "
                          f"{e['status']!r}, {e.get('reason')!r} (no GPU: not run, 0, why)")
    if ok["not_run_points"] != ok["max_points"] or ok["points"] != 0:
        errors.append(f"correct d01: {ok['points']} points, {ok['not_run_points']} of "
                      f"{ok['max_points']} not run (all should be not run)")
    perf = ok.get("performance", {})
    if perf.get("points") != 0:
        errors.append(f"correct d01: performance points for tests that did not run: {perf}")
    rows = [r for r in csv.reader(open(os.path.join(out, "gradebook.csv")))
            if r[:3] == ["correct", "d01", "(correctness)"]]
    if not rows or rows[0][4] != "0.0" or rows[0][6] != "60.0":
        errors.append(f"gradebook.csv's correct d01 correctness: {rows}")
else:
    # A GPU was visible to the task (task/none confines nothing): every test must pass.
    if ok["points"] != ok["max_points"]:
        errors.append(f"correct d01 on {students['correct']['gpu']}: {ok['points']} of "
                      f"{ok['max_points']}")
if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
print(f"gradebook: {len(students)} students; correct d01: {ok['points']} points, "
      f"{ok['not_run_points']} not run; not_compiling d01: {nc['status']}")
EOF

# Re-run one student by name: its task grades that student (already graded with the same
# files: skipped, not graded again) and the merge runs again.
started=$SECONDS
COURSE_SLURM_POLL=2 "$ROOT/scripts/slurm/grade-class.sh" "$SUBS" "$OUT" --build-dir "$BUILD" \
  --days d01 --no-bench --gres "" --time 00:20:00 --student not_compiling --wait \
  --wait-timeout 300 > "$WORK/rerun.txt" 2>&1
rc=$?
cat "$WORK/rerun.txt"
echo "grade-class.sh --student not_compiling --wait: exit $rc after $((SECONDS - started)) s"
[ "$rc" -eq 0 ] || fail "the re-run exited $rc (work folder kept: $WORK)"
job=$(sed -n 's/.*grading job array \([0-9]*\): tasks 1,.*/\1/p' "$WORK/rerun.txt")
[ -n "$job" ] || fail "the re-run did not submit task 1 (not_compiling's index): see above"
grep -q "not_compiling: already graded" "$OUT/slurm/${job}_1.log" ||
  fail "task 1 of job $job did not grade not_compiling: $(cat "$OUT/slurm/${job}_1.log")"
grep -q "merged 3 students" "$WORK/rerun.txt" || fail "the re-run's merge did not list 3 students"

rm -rf "$WORK"
echo "PASSED: a class of 3 graded on Slurm (array tasks and merge job), one student re-run"
exit 0
