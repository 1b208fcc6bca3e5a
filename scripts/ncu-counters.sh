#!/usr/bin/env bash
# Hardware counters for the lessons' Nsight Compute tables (Day 2 §12, Day 4 §8.2): runs the
# lessons' own ncu commands on the solution benchmarks and prints one line per kernel and
# metric. Needs a GPU, ncu, and a build (scripts/gpu-check.sh --steps build).
#
# Usage: scripts/ncu-counters.sh [--out DIR] [--preset NAME]
#   --out     where the raw CSV files go (default build/ncu-counters)
#   --preset  the CMake preset whose build directory holds the benchmarks (default: default)
set -uo pipefail
cd "$(dirname "$0")/.."
out=build/ncu-counters; preset=default
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --preset) preset="$2"; shift 2 ;;
    *) echo "usage: $0 [--out DIR] [--preset NAME]" >&2; exit 2 ;;
  esac
done
command -v ncu >/dev/null || { echo "ncu not found (Nsight Compute ships with the CUDA toolkit)" >&2; exit 1; }
bin="build/$preset"
mkdir -p "$out"

d02_metrics=dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
d04_metrics=smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum

# day | kernel regex | benchmark filter | metrics
runs=(
  "d02|copy_1_coalesced|BM_copy_1_coalesced<float>/n:67108864/|$d02_metrics"
  "d02|copy_2_vectorized|BM_copy_2_vectorized<float>/n:67108864/offset:0/|$d02_metrics"
  "d02|copy_1_strided|BM_copy_1_strided/n:67108864/stride:32/|$d02_metrics"
  "d02|add_bias_gelu_kernel|BM_add_bias_gelu_fused<float>/rows:8192/cols:8192/|$d02_metrics"
  "d04|transpose_2_smem|BM_transpose_2_smem<float>/rows:8192/cols:8192/|$d04_metrics"
  "d04|transpose_3_padded|BM_transpose_3_padded<float>/rows:8192/cols:8192/|$d04_metrics"
  "d04|transpose_4_swizzled|BM_transpose_4_swizzled<float>/rows:8192/cols:8192/|$d04_metrics"
  "d04|transpose_5_vectorized|BM_transpose_5_vectorized<float>/rows:8192/cols:8192/|$d04_metrics"
)
status=0
for run in "${runs[@]}"; do
  IFS='|' read -r day kernel filter metrics <<<"$run"
  exe=$(find "$bin/labs" -name "${day}_solution_bench" -type f | head -n 1)
  [ -n "$exe" ] || { echo "no ${day}_solution_bench in $bin: build first" >&2; status=1; continue; }
  # The first launch of a benchmark is its correctness check, on the same data; ncu flushes
  # the caches before the profiled launch (--cache-control all, its default).
  if ! ncu --kernel-name "regex:$kernel" --launch-count 1 --csv --metrics "$metrics" \
      "$exe" --benchmark_filter="$filter" >"$out/$day-$kernel.csv" 2>"$out/$day-$kernel.err"; then
    echo "$day $kernel: ncu failed (see $out/$day-$kernel.err)"; status=1; continue
  fi
  python3 - "$out/$day-$kernel.csv" "$day" <<'PY'
import csv, sys
path, day = sys.argv[1], sys.argv[2]
rows = [line for line in open(path, encoding="utf-8", errors="replace") if line.startswith('"')]
found = False
for r in csv.DictReader(rows):
    if "Metric Name" in r:
        found = True
        print(f'{day} | {r.get("Kernel Name", "?")[:60]} | {r["Metric Name"]} | {r["Metric Value"]} {r.get("Metric Unit", "")}')
if not found:
    print(f"{day} | {path}: no metric rows (see the .err file)")
PY
done
exit $status
