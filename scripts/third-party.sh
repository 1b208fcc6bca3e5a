#!/usr/bin/env bash
# GoogleTest and Google Benchmark for a machine that has neither package and no network (the
# lent GPU machine, an air-gapped lab PC): builds them from source tarballs in .deps/ and
# installs them into .deps/install, where the course's CMakeLists.txt looks for them.
#   .deps/googletest-*.tar.gz   (Debian ships the sources in /usr/src/googletest)
#   .deps/benchmark-*.tar.gz    (github.com/google/benchmark release, or `apt-get source benchmark`)
# Does nothing when the system already has both. Run it before configuring.
# Usage: scripts/third-party.sh [--force]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
deps=$PWD/.deps; prefix=$deps/install
force=0; [ "${1:-}" = "--force" ] && force=1

have_header() { [ -e "/usr/include/$1" ] || [ -e "/usr/local/include/$1" ] || [ -e "$prefix/include/$1" ]; }

jobs=$(nproc 2>/dev/null || echo 2)
build_one() {  # <tarball glob> <header that proves it is installed> <cmake args...>
  local glob=$1 header=$2; shift 2
  if have_header "$header" && [ $force -eq 0 ]; then return 0; fi
  local tarball
  tarball=$(ls $deps/$glob 2>/dev/null | head -n 1) || true
  if [ -z "$tarball" ]; then
    echo "third-party: $header is missing and there is no $deps/$glob to build it from" >&2
    return 1
  fi
  local src=$deps/src/$(basename "$tarball" .tar.gz)
  rm -rf "$src" && mkdir -p "$src"
  tar xzf "$tarball" -C "$src" --strip-components=1
  cmake -S "$src" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_POSITION_INDEPENDENT_CODE=ON "$@" >"$src.log" 2>&1 \
    && cmake --build "$src/build" -j "$jobs" >>"$src.log" 2>&1 \
    && cmake --install "$src/build" >>"$src.log" 2>&1 \
    || { echo "third-party: building $(basename "$tarball") failed; see $src.log" >&2; return 1; }
  echo "third-party: built and installed $(basename "$tarball") into $prefix" >&2
}
build_one 'googletest-*.tar.gz' gtest/gtest.h -DBUILD_GMOCK=ON
build_one 'benchmark-*.tar.gz' benchmark/benchmark.h -DBENCHMARK_ENABLE_TESTING=OFF \
  -DBENCHMARK_ENABLE_GTEST_TESTS=OFF -DBENCHMARK_ENABLE_WERROR=OFF
