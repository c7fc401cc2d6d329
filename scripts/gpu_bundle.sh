#!/usr/bin/env bash
# Packs the GPU check's binaries, built here for sm_90 (no GPU needed), with the shared libraries
# they need that a bare CUDA image lacks, into one archive for a lent GPU machine; there
#   tar -xJf BUNDLE && export LD_LIBRARY_PATH=$PWD/build/gpu/lib:... && GPU_CHECK_PREBUILT=1 scripts/gpu_check.sh
# Building on the lent machine costs its minutes (the batched SQP kernels take ptxas minutes);
# building here costs none.
#
#   scripts/gpu_bundle.sh [BUILD] [ARCHIVE]      # defaults: build/gpu, .gpu/bundle.tar.xz
#                                                # (and ARCHIVE-python.tar.xz with knot._cuda)
#
# BUILD must have been configured as gpu_check.sh does (Release, KNOT_CUDA=ON, sm_90, tests and
# benchmarks on; tools on for phase 7) and its GPU targets built.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/gpu}
ARCHIVE=${2:-.gpu/bundle.tar.xz}
bins=()
for b in tests/cuda/test_gpu_linalg tests/cuda/test_gpu_factor tests/cuda/test_gpu_riccati \
         tests/cuda/test_gpu_batch_sqp tests/cuda/test_gpu_expression \
         tools/bench/gpu/knot_bench_gpu_linalg tools/bench/gpu/knot_bench_gpu_factor \
         tools/bench/gpu/knot_bench_gpu_sqp tools/knot/knot; do
  if [ -x "$BUILD/$b" ]; then bins+=("$BUILD/$b"); else echo "gpu_bundle: $BUILD/$b not built; left out"; fi
done
(( ${#bins[@]} )) || { echo "gpu_bundle: nothing built in $BUILD" >&2; exit 1; }
# The Python package with knot._cuda (gpu_check.sh's phase 8), where this build made one: its own
# archive beside ARCHIVE (about 20 MB), so that a run can leave it out of the 64 MiB it carries.
py=()
compgen -G "$BUILD/python/knot/_cuda*.so" >/dev/null && py=("$BUILD/python/knot")
PY_ARCHIVE=${ARCHIVE%.tar.xz}-python.tar.xz
# The libraries outside glibc, libstdc++ and CUDA's own (those come with the CUDA image).
rm -rf "$BUILD/lib"
mkdir -p "$BUILD/lib" "$(dirname "$ARCHIVE")"
ldd "${bins[@]}" ${py:+"$BUILD"/python/knot/_*.so} 2>/dev/null | awk '/=> \// {print $1, $3}' | sort -u |
  { grep -v -E '^(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux|libcu[A-Za-z]*|libnvJitLink)[.]' || true; } |
  while read -r name path; do cp -L "$path" "$BUILD/lib/$name"; done
cp -L "$(ldd "${bins[0]}" | awk '/libcudart/ {print $3}')" "$BUILD/lib/" 2>/dev/null || true
tar -cJf "$ARCHIVE" "${bins[@]}" "$BUILD/lib"
if (( ${#py[@]} )); then
  tar -cJf "$PY_ARCHIVE" "${py[@]}"
  echo "gpu_bundle: $PY_ARCHIVE ($(du -h "$PY_ARCHIVE" | cut -f1)): the Python package, for gpu_check.sh's phase 8"
fi
echo "gpu_bundle: $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1)): ${#bins[@]} binaries, $(ls "$BUILD/lib" | wc -l) libraries"
