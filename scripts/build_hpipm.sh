#!/usr/bin/env bash
# Builds BLASFEO and HPIPM (static, Release) from sources the user provides, for
# tools/bench/compare_hpipm.cpp. Downloads nothing; never run it inside the repository.
#   scripts/build_hpipm.sh SRC_DIR PREFIX
# SRC_DIR holds blasfeo/ and hpipm/ (e.g. git archives of github.com/giaf/blasfeo and
# github.com/giaf/hpipm); both are installed under PREFIX (include/, lib/). Then configure
# Knot with -DKNOT_BUILD_BENCHMARKS=ON -DKNOT_HPIPM_DIR=PREFIX.
# BLASFEO_TARGET overrides the kernel set; by default X64_INTEL_HASWELL when the CPU has
# AVX2 and FMA, X64_INTEL_SANDY_BRIDGE with AVX only, else GENERIC. JOBS defaults to 2.
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 SRC_DIR PREFIX  (SRC_DIR contains blasfeo/ and hpipm/)" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
prefix=$(mkdir -p "$2" && cd "$2" && pwd)
jobs=${JOBS:-2}
for d in blasfeo hpipm; do
  [[ -f "$src/$d/CMakeLists.txt" ]] || { echo "$0: $src/$d/CMakeLists.txt not found" >&2; exit 1; }
done

if [[ -z "${BLASFEO_TARGET:-}" ]]; then
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
  if [[ " $flags " == *" avx2 "* && " $flags " == *" fma "* ]]; then
    BLASFEO_TARGET=X64_INTEL_HASWELL
  elif [[ " $flags " == *" avx "* ]]; then
    BLASFEO_TARGET=X64_INTEL_SANDY_BRIDGE
  else
    BLASFEO_TARGET=GENERIC
  fi
fi
# HPIPM's own kernels know only AVX and GENERIC.
if [[ "$BLASFEO_TARGET" == GENERIC ]]; then hpipm_target=GENERIC; else hpipm_target=AVX; fi
echo "BLASFEO TARGET=$BLASFEO_TARGET LA=HIGH_PERFORMANCE, HPIPM TARGET=$hpipm_target -> $prefix"

build=$prefix/build
cmake -S "$src/blasfeo" -B "$build/blasfeo" -DCMAKE_BUILD_TYPE=Release \
  -DTARGET="$BLASFEO_TARGET" -DLA=HIGH_PERFORMANCE -DBUILD_SHARED_LIBS=OFF \
  -DBLASFEO_EXAMPLES=OFF -DBLASFEO_TESTING=OFF -DBLASFEO_BENCHMARKS=OFF \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_INSTALL_PREFIX="$prefix/blasfeo"
cmake --build "$build/blasfeo" -j"$jobs"
cmake --install "$build/blasfeo"

cmake -S "$src/hpipm" -B "$build/hpipm" -DCMAKE_BUILD_TYPE=Release \
  -DTARGET="$hpipm_target" -DBUILD_SHARED_LIBS=OFF -DHPIPM_TESTING=OFF \
  -DBLASFEO_PATH="$prefix/blasfeo" -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DCMAKE_INSTALL_PREFIX="$prefix/hpipm"
cmake --build "$build/hpipm" -j"$jobs"
cmake --install "$build/hpipm"
echo "installed: $prefix/blasfeo and $prefix/hpipm"
