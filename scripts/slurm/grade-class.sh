#!/usr/bin/env bash
# Grade a class on a Slurm cluster: one array task per student, then one job that merges the
# gradebook (docs/slurm.md).
#
#   scripts/slurm/grade-class.sh <submissions-dir> <out-dir> [options]
#
# What it submits:
#   1. a job array, task i grading the i-th student folder of <submissions-dir> (the grader's
#      own rule: non-hidden subfolders, sorted by name, 0-based), each task one
#        course --build-dir DIR grade SUBS --out OUT --only-index i --no-merge --jobs 1 ...
#      (scripts/slurm/grade-one.sbatch), with a GPU per task unless --gres "";
#   2. the merge, `course --build-dir DIR grade --merge OUT` (scripts/slurm/merge-class.sbatch),
#      which starts when every task has ended, whatever its end (--dependency=afterany): a task
#      that failed on one student never holds back the class's gradebook.
# Logs: <out>/slurm/<array job id>_<task>.log and <out>/slurm/<merge job id>_merge.log;
# <out>/slurm/<array job id>.students says which student each task graded.
#
# SHARED FILESYSTEM: the course checkout (tools/), the class build (--build-dir), the
# submissions and <out-dir> must be on a filesystem that every compute node sees at the same
# path (home, project or scratch space; never /tmp or a node's local disk). The tasks write
# into <out-dir>/students/<id>/ and the merge reads them all back.
#
# Options:
#   --build-dir DIR       the class build (default: what `course` picks: COURSE_BUILD_DIR, else
#                         build/default of this checkout)
#   --days d01,d02        grade only these days            --no-bench   no benchmarks
#   --regrade             grade students already graded with the same files again
#   --partition P         the partition of the tasks (and of the merge, unless --merge-partition)
#   --merge-partition P   the merge's partition (it needs no GPU)
#   --gres SPEC           each task's generic resources (default gpu:1; --gres "" asks none)
#   --time T              each task's time limit (default 01:00:00; the merge gets 00:15:00)
#   --cpus-per-task N     CPUs per task (also ctest -j inside the task); default: the cluster's
#   --max-parallel K      at most K tasks at once (--array=...%K)
#   --student NAME        grade only this student (repeatable): re-run one student's task
#   --sbatch-opt OPT      one more sbatch option for every job, e.g. --sbatch-opt=--account=cuda
#                         (repeatable)
#   --wait                wait for the merge; exit with its status
#   --wait-timeout S      with --wait, give up waiting after S seconds (exit 124; jobs go on)
#   --dry-run             print the sbatch commands, submit nothing
# Exit status: 0 submitted (with --wait: merged), 2 usage or a refusal (no sbatch, a missing
# folder, no students, an unbuilt class build), else the merge job's exit status (--wait).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/../.." && pwd -P)
COURSE=$REPO/tools/bin/course
PROG=grade-class.sh

die() { echo "$PROG: $1" >&2; exit "${2:-2}"; }
usage() { awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "${BASH_SOURCE[0]}"; }

# ---------------------------------------------------------------------------- options
subs="" out="" build="" days="" no_bench=0 regrade=0 partition="" merge_partition=""
gres="gpu:1" time_limit="01:00:00" cpus="" max_parallel="" wait=0 wait_timeout=0 dry_run=0
students=() extra=()
need() { [ $# -ge 2 ] || die "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --*=*) opt=${1%%=*}; val=${1#*=}; shift; set -- "$opt" "$val" "$@"; continue ;;
  esac
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --build-dir) need "$@"; build=$2; shift 2 ;;
    --days) need "$@"; days=$2; shift 2 ;;
    --no-bench) no_bench=1; shift ;;
    --regrade) regrade=1; shift ;;
    --partition) need "$@"; partition=$2; shift 2 ;;
    --merge-partition) need "$@"; merge_partition=$2; shift 2 ;;
    --gres) need "$@"; gres=$2; shift 2 ;;
    --time) need "$@"; time_limit=$2; shift 2 ;;
    --cpus-per-task) need "$@"; cpus=$2; shift 2 ;;
    --max-parallel) need "$@"; max_parallel=$2; shift 2 ;;
    --student) need "$@"; students+=("$2"); shift 2 ;;
    --sbatch-opt) need "$@"; extra+=("$2"); shift 2 ;;
    --wait) wait=1; shift ;;
    --wait-timeout) need "$@"; wait_timeout=$2; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -*) die "unknown option $1 (see --help)" ;;
    *)
      if [ -z "$subs" ]; then subs=$1
      elif [ -z "$out" ]; then out=$1
      else die "one submissions folder and one output folder, not '$1' too (see --help)"; fi
      shift ;;
  esac
done
[ -n "$subs" ] && [ -n "$out" ] ||
  die "usage: $PROG <submissions-dir> <out-dir> [--build-dir DIR] [--days d01,...] [--no-bench] [--partition P] [--gres gpu:1] [--time 01:00:00] [--wait] (--help for more)"
[ -z "$merge_partition" ] && merge_partition=$partition
[ "$max_parallel" != 0 ] || die "--max-parallel must be at least 1"
for n in "$cpus" "$max_parallel" "$wait_timeout"; do
  [ -z "$n" ] || [[ "$n" =~ ^[0-9]+$ ]] || die "'$n' is not a number"
done

# ---------------------------------------------------------------------------- refusals
if [ "$dry_run" -eq 0 ]; then
  command -v sbatch >/dev/null ||
    die "sbatch is not on PATH: run this on a Slurm cluster's login node (or --dry-run to see the commands)"
fi
[ -d "$subs" ] || die "the submissions folder '$subs' does not exist (one subfolder per student)"
subs=$(cd "$subs" && pwd -P)
[ -x "$COURSE" ] || die "the course tool $COURSE is missing"
case "$(realpath -m "$out")/" in
  "$subs"/*) die "the output folder '$out' is inside the submissions folder: it would be taken for a student" ;;
esac
mkdir -p "$out/slurm" || die "cannot create the output folder '$out'"
out=$(cd "$out" && pwd -P)
if [ -n "$build" ]; then
  [ -d "$build" ] || die "the class build '$build' does not exist (--build-dir)"
  build=$(cd "$build" && pwd -P)
fi

# The grader's own functions say which students there are (and in which order: the task
# index), which build it would use, and whether the days exist and the class build is built.
list=$(python3 - "$REPO/tools" "$subs" "$build" "$days" <<'EOF'
import os, sys
sys.path.insert(0, sys.argv[1])
from course import classbuild, manifest
from course.cli import find_build
from course.grade import students_in
subs, build, days = sys.argv[2], sys.argv[3], sys.argv[4]
build = os.path.abspath(find_build(build or None))
try:
    m = manifest.load(build)
except manifest.ManifestError as e:
    sys.exit(f"the class build {build} cannot be used: {e}")
missing = classbuild.programs_missing(m)
if missing:
    sys.exit(f"the class build {build} is not built (missing {missing[0]}): "
             f"cmake --build {build}")
wanted = []
for d in filter(None, days.split(",")):
    lab = m.find(d)
    if lab is None:
        sys.exit(f"'{d}' is not a day of this course ({', '.join(l.day for l in m.labs)})")
    wanted.append(lab.day)
print(build)
print(",".join(wanted))
for path in students_in(subs):
    name = os.path.basename(path)
    if "\n" in name:
        sys.exit(f"a student folder's name has a line break: {name!r}")
    print(name)
EOF
) || die "cannot grade with this class build (above)"
mapfile -t lines <<<"$list"
build=${lines[0]}
days=${lines[1]:-}
names=("${lines[@]:2}")
[ "${#names[@]}" -gt 0 ] ||
  die "no student folders in $subs (one non-hidden subfolder per student)"
n=${#names[@]}

# Paths that are usually one node's own.
for p in "$REPO" "$build" "$subs" "$out"; do
  case "$p/" in
    /tmp/*|/var/tmp/*|/dev/shm/*|/run/*)
      echo "$PROG: warning: $p is usually on this node only; every compute node must see it" >&2 ;;
  esac
done

# Which indices: every student, or the ones named with --student.
indices=()
if [ "${#students[@]}" -eq 0 ]; then
  mapfile -t indices < <(seq 0 $((n - 1)))
else
  for s in "${students[@]}"; do
    found=""
    for i in "${!names[@]}"; do [ "${names[$i]}" = "$s" ] && found=$i; done
    [ -n "$found" ] || die "no student '$s' in $subs (the students: ${names[*]:0:20})"
    indices+=("$found")
  done
  mapfile -t indices < <(printf '%s\n' "${indices[@]}" | sort -n -u)
fi

# An array's task ids must be below the cluster's MaxArraySize (1001 by default): a larger
# class is several arrays, each task adding its array's offset (COURSE_INDEX_OFFSET).
max_array=1001
if command -v scontrol >/dev/null; then
  v=$(scontrol show config 2>/dev/null | awk -F= '/^MaxArraySize/ {gsub(/ /, "", $2); print $2}')
  [[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -gt 1 ] && max_array=$v
fi

ranges() {  # 0 1 2 5 7 8 -> 0-2,5,7-8
  local out="" start="" prev=""
  for i in "$@"; do
    if [ -n "$prev" ] && [ "$i" -eq $((prev + 1)) ]; then prev=$i; continue; fi
    [ -n "$start" ] && out+="${out:+,}$start$([ "$prev" != "$start" ] && echo "-$prev")"
    start=$i prev=$i
  done
  [ -n "$start" ] && out+="${out:+,}$start$([ "$prev" != "$start" ] && echo "-$prev")"
  echo "$out"
}

# ---------------------------------------------------------------------------- submission
grade_opts=()
[ -n "$days" ] && grade_opts+=(--days "$days")
[ "$no_bench" -eq 1 ] && grade_opts+=(--no-bench)
[ "$regrade" -eq 1 ] && grade_opts+=(--regrade)
common=()
[ -n "$cpus" ] && common+=(--cpus-per-task="$cpus")
common+=("${extra[@]}")
task_opts=(--time="$time_limit")
[ -n "$partition" ] && task_opts+=(--partition="$partition")
[ -n "$gres" ] && task_opts+=(--gres="$gres")
merge_opts=(--time=00:15:00)
[ -n "$merge_partition" ] && merge_opts+=(--partition="$merge_partition")

submit() {  # submit ENV... -- SBATCH ARGS...: prints the job id
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  if [ "$dry_run" -eq 1 ]; then
    printf '%q ' env "${envs[@]}" sbatch "$@" >&2
    echo >&2
    echo "DRYRUN$RANDOM"
    return 0
  fi
  local got
  if ! got=$(env "${envs[@]}" sbatch --parsable "$@" 2>&1); then
    echo "$PROG: sbatch refused the job: $got" >&2
    case "$got" in
      *"node configuration is not available"*|*[Gg]res*|*[Gg][Pp][Uu]*)
        echo "$PROG: (no node offers --gres=$gres in this partition? pick one with --partition, or --gres \"\" for none)" >&2 ;;
    esac
    return 1
  fi
  got=$(printf '%s\n' "$got" | tail -n 1)
  echo "${got%%;*}"
}

array_jobs=() chunk_lines=()
chunk=-1 chunk_ids=()
flush_chunk() {
  [ "${#chunk_ids[@]}" -gt 0 ] || return 0
  local offset=$((chunk * max_array)) rel=() i spec id
  for i in "${chunk_ids[@]}"; do rel+=($((i - offset))); done
  spec=$(ranges "${rel[@]}")
  [ -n "$max_parallel" ] && spec+="%$max_parallel"
  id=$(submit COURSE_TOOL="$COURSE" COURSE_INDEX_OFFSET="$offset" -- \
         --job-name=course-grade --array="$spec" --output="$out/slurm/%A_%a.log" \
         "${task_opts[@]}" "${common[@]}" \
         "$HERE/grade-one.sbatch" "$build" "$subs" "$out" "${grade_opts[@]}") ||
    die "$([ "${#array_jobs[@]}" -eq 0 ] && echo "no job was submitted" ||
           echo "students ${chunk_ids[0]}.. were not submitted; submitted before them: ${array_jobs[*]}")" 1
  array_jobs+=("$id")
  chunk_lines+=("$id $offset $spec")
  if [ "$dry_run" -eq 0 ]; then
    for i in "${chunk_ids[@]}"; do
      printf '%s\t%s\t%s\n' "$((i - offset))" "$i" "${names[$i]}"
    done > "$out/slurm/$id.students"
  fi
  chunk_ids=()
}
for i in "${indices[@]}"; do
  c=$((i / max_array))
  if [ "$c" -ne "$chunk" ]; then flush_chunk; chunk=$c; fi
  chunk_ids+=("$i")
done
flush_chunk

dependency="afterany:$(IFS=:; echo "${array_jobs[*]}")"
if ! merge_job=$(submit COURSE_TOOL="$COURSE" -- \
       --job-name=course-merge --dependency="$dependency" --output="$out/slurm/%j_merge.log" \
       "${merge_opts[@]}" "${common[@]}" \
       "$HERE/merge-class.sbatch" "$build" "$out"); then
  echo "$PROG: the grading tasks (${array_jobs[*]}) go on; merge by hand when they end:" >&2
  echo "  $COURSE --build-dir $build grade --merge $out" >&2
  exit 1
fi

# ---------------------------------------------------------------------------- what was done
echo "grading ${#indices[@]} of $n students of $subs into $out"
echo "  class build: $build${days:+; days $days}$([ "$no_bench" -eq 1 ] && echo "; no benchmarks")"
for line in "${chunk_lines[@]}"; do
  read -r id offset spec <<<"$line"
  echo "  grading job array $id: tasks $spec$([ "$offset" -gt 0 ] && echo " (student index = task + $offset)")," \
       "${gres:+gres $gres, }time $time_limit each"
  echo "    logs: $out/slurm/${id}_<task>.log; which student each task grades: $out/slurm/$id.students"
done
echo "  merge job $merge_job (after every task ends, $dependency): $out/gradebook.csv, gradebook.json, junit.xml"
echo "    log: $out/slurm/${merge_job}_merge.log"
echo "  follow: squeue -j $(IFS=,; echo "${array_jobs[*]},$merge_job")    stop: scancel ${array_jobs[*]} $merge_job"
[ "$dry_run" -eq 1 ] && exit 0
[ "$wait" -eq 1 ] || exit 0

# ---------------------------------------------------------------------------- --wait
job_state() {  # job_state ID -> "STATE EXIT SIGNAL" (or nothing when Slurm forgot the job)
  local line
  line=$(scontrol show job -o "$1" 2>/dev/null | head -n 1 || true)
  if [[ "$line" =~ JobState=([A-Z_]+).*ExitCode=([0-9]+):([0-9]+) ]]; then
    echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
    return 0
  fi
  line=$(sacct -n -X -P -j "$1" -o State,ExitCode 2>/dev/null | head -n 1 || true)
  if [[ "$line" =~ ^([A-Z_]+)[^|]*\|([0-9]+):([0-9]+) ]]; then
    echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
  fi
}
trap 'echo; echo "$PROG: stopped waiting; the jobs go on (squeue -j $merge_job; scancel ${array_jobs[*]} $merge_job)"; exit 130' INT TERM
poll=${COURSE_SLURM_POLL:-5}
started=$SECONDS last=""
while :; do
  read -r state code sig <<<"$(job_state "$merge_job")" || true
  case "${state:-}" in
    COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|BOOT_FAIL|DEADLINE) break ;;
    "") echo "$PROG: Slurm no longer knows the merge job $merge_job (see its log)" >&2; exit 1 ;;
  esac
  queued=$( (IFS=,; squeue -h -r -j "${array_jobs[*]}" -o %T 2>/dev/null) | sort | uniq -c |
            awk '{printf "%s%d %s", (NR > 1 ? ", " : ""), $1, tolower($2)}')
  left=$( (IFS=,; squeue -h -r -j "${array_jobs[*]}" -o %i 2>/dev/null) | wc -l)
  now="$((${#indices[@]} - left)) of ${#indices[@]} tasks ended${queued:+ ($queued)}; merge job ${state,,}"
  if [ "$now" != "$last" ]; then
    echo "[$(date +%H:%M:%S)] $now"
    last=$now
  fi
  if [ "$state" = PENDING ] &&
     scontrol show job -o "$merge_job" 2>/dev/null | grep -q "Reason=DependencyNeverSatisfied"; then
    echo "$PROG: the merge job $merge_job can never start (DependencyNeverSatisfied)" >&2
    exit 1
  fi
  if [ "$wait_timeout" -gt 0 ] && [ $((SECONDS - started)) -ge "$wait_timeout" ]; then
    echo "$PROG: still not merged after ${wait_timeout}s; the jobs go on:" >&2
    squeue -j "$(IFS=,; echo "${array_jobs[*]},$merge_job")" >&2 || true
    exit 124
  fi
  sleep "$poll"
done

# The tasks that did not end well (the merge went on without those students).
for id in "${array_jobs[@]}"; do
  scontrol show job -o "$id" 2>/dev/null | while read -r line; do
    [[ "$line" =~ ArrayTaskId=([^ ]+) ]] || continue
    task=${BASH_REMATCH[1]}
    [[ "$line" =~ JobState=([A-Z_]+).*ExitCode=([0-9]+):([0-9]+) ]] || continue
    tstate=${BASH_REMATCH[1]} texit=${BASH_REMATCH[2]}:${BASH_REMATCH[3]}
    [ "$tstate" != COMPLETED ] || continue
    if [[ "$task" =~ ^[0-9]+$ ]]; then
      student=$(awk -F'\t' -v t="$task" '$1 == t {print $3}' "$out/slurm/$id.students")
      echo "$PROG: task $task ($student) ended $tstate, exit $texit: $out/slurm/${id}_$task.log" >&2
    else  # tasks that never started are one record
      echo "$PROG: tasks $task of job $id ended $tstate without starting" >&2
    fi
  done
done
echo "merge job $merge_job ended: $state (exit $code${sig:+:$sig}) after $((SECONDS - started)) s; its log:"
cat "$out/slurm/${merge_job}_merge.log" 2>/dev/null || echo "(no log at $out/slurm/${merge_job}_merge.log)"
if [ "$state" = COMPLETED ]; then exit "$code"; fi
[ "${sig:-0}" -gt 0 ] && exit $((128 + sig))
[ "${code:-0}" -gt 0 ] && exit "$code"
exit 1
