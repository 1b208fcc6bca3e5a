#!/usr/bin/env bash
# Set up and build everything, then show where you stand:
#   1. install what is missing (CMake >= 3.25, Ninja, GoogleTest, Google Benchmark, bubblewrap
#      for grading; and, when the CUDA toolkit lacks them, cuobjdump + nvdisasm for the SASS
#      checks),
#   2. configure and build every lab (starters and solutions), the harness and the tools,
#   3. run `course status`, and print the line that puts `course` on your PATH.
# Usage: scripts/setup.sh [preset]   (default: "default"; see CMakePresets.json)
# Nothing is installed that is already there, so it also works offline once set up.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset=${1:-${COURSE_PRESET:-default}}

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }

# --- 1. build tools and libraries -----------------------------------------------------------
need_apt=()
cmake_at_least_3_25() {  # "cmake version 3.25.1" -> 3 25
  local v; v=$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  [ -n "$v" ] && { set -- $v; [ "$1" -gt 3 ] || { [ "$1" -eq 3 ] && [ "$2" -ge 25 ]; }; }
}
cmake_at_least_3_25 || need_apt+=(cmake)
have ninja || need_apt+=(ninja-build)
[ -e /usr/include/gtest/gtest.h ] || [ -e /usr/local/include/gtest/gtest.h ] || need_apt+=(libgtest-dev)
[ -e /usr/include/benchmark/benchmark.h ] || [ -e /usr/local/include/benchmark/benchmark.h ] || need_apt+=(libbenchmark-dev)
have python3 || need_apt+=(python3)
have c++filt || need_apt+=(binutils)
# bubblewrap: the sandbox an instructor's `course grade` runs students' programs in.
have bwrap || need_apt+=(bubblewrap)
if [ ${#need_apt[@]} -gt 0 ]; then
  say "installing ${need_apt[*]}"
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_=sudo
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
have nvcc || { echo "nvcc not found: install the CUDA toolkit (12.x or 13.x) and put its bin/ on PATH" >&2; exit 1; }

# cuobjdump/nvdisasm read the compiled device code for the SASS checks. Some toolkit installs
# (pip wheels) lack them; NVIDIA publishes them as wheels too. Optional: without them the SASS
# checks report as skipped.
nvcc_dir=$(dirname "$(command -v nvcc)")
if ! { [ -x "$nvcc_dir/cuobjdump" ] && [ -x "$nvcc_dir/nvdisasm" ]; } && ! have cuobjdump \
   && [ ! -x .tools/cuda/nvidia/cu13/bin/cuobjdump ]; then
  say "installing cuobjdump + nvdisasm into .tools/cuda (for the SASS checks)"
  if python3 -m pip install -q --disable-pip-version-check --no-deps --target .tools/cuda \
       "nvidia-cuda-cuobjdump==13.2.*" "nvidia-cuda-nvdisasm==13.2.*" 2>/dev/null; then
    say "cuobjdump: .tools/cuda/nvidia/cu13/bin/cuobjdump"
  else
    say "could not install cuobjdump (offline?): the SASS checks will be reported as skipped"
  fi
fi

# --- 2. configure and build -----------------------------------------------------------------
say "configuring (preset: $preset)"
cmake --preset "$preset" >/dev/null
jobs=$(nproc 2>/dev/null || echo 2)
say "building everything with $jobs jobs (first build: a few minutes)"
start=$(date +%s)
cmake --build --preset "$preset" -j "$jobs"
say "built in $(( $(date +%s) - start )) s"

# --- 3. where you stand ---------------------------------------------------------------------
"build/$preset/course" status || true
tools_bin="$PWD/tools/bin"
echo
case ":$PATH:" in
  *":$tools_bin:"*) say "\`course\` is on your PATH: try \`course list\`, then \`course check d01\`" ;;
  *)
    say "to type \`course\` from anywhere (\`course check d01\`, \`course watch\`), run this line,"
    say "and add it to your ~/.bashrc or ~/.zshrc to keep it:"
    echo
    echo "    export PATH=\"$tools_bin:\$PATH\""
    echo
    say "(until then the same tool is build/$preset/course)" ;;
esac
