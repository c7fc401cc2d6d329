#!/usr/bin/env bash
# Fuzz the problem-file loader and the URDF reader with libFuzzer for a bounded time.
#   scripts/fuzz.sh [SECONDS]        (default 60, split between the two harnesses)
#   scripts/fuzz.sh SECONDS solve    the solver instead: fuzz/fuzz_solve solves what the loader
#                                    accepts (its build adds knot_solver, minutes; CI replays its
#                                    corpora as tests instead: tests/fuzz)
# Builds fuzz/fuzz_loader and fuzz/fuzz_urdf with clang++ (-fsanitize=fuzzer,address,undefined) in
# their own build directory, build/fuzz, then runs each from its seeds: fuzz/corpus for the loader
# (whose relative paths resolve in fuzz/files: a URDF, reference tables, a parent file), and
# fuzz/corpus_urdf for the URDF reader. New inputs go to build/fuzz/corpus_<harness> (the committed
# seeds stay as they are); a crash, sanitizer report, leak, escaped exception, slow unit (-timeout)
# or memory blow-up (-rss_limit_mb) is written to build/fuzz/artifacts/ and makes the script exit
# non-zero, after both harnesses have run.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
mode=${2:-}
usage() { echo "usage: scripts/fuzz.sh [SECONDS] [solve]" >&2; exit 2; }
case "$seconds" in ''|*[!0-9]*) usage ;; esac
case "$mode" in ''|solve) ;; *) usage ;; esac
jobs=$(nproc 2>/dev/null || echo 2)
build=build/fuzz

# -O1 and line tables only (RelWithDebInfo is -O2 -g): a shorter build for the same bounded fuzzing time.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
  -DKNOT_BUILD_FUZZERS=ON -DKNOT_SANITIZE=address,undefined -DKNOT_CUDA=OFF \
  -DKNOT_BUILD_TESTS=OFF -DKNOT_BUILD_TOOLS=OFF -DKNOT_BUILD_BENCHMARKS=OFF >/dev/null
if [ "$mode" = solve ]; then
  cmake --build "$build" -j "$jobs" --target fuzz_solve
else
  cmake --build "$build" -j "$jobs" --target fuzz_loader fuzz_urdf
fi

# fuzz/lsan.supp: a leak inside urdfdom when it rejects a rootless joint cycle (see there).
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# The loader reaches the URDF reader too, so it gets the larger share.
loader_seconds=$(( seconds - seconds / 3 ))
urdf_seconds=$(( seconds / 3 ))
mkdir -p "$build/corpus_loader" "$build/corpus_urdf" "$build/corpus_solve" "$build/artifacts"
status=0
# Per-input limits: a valid document of the maximum size loads in well under a second.
run() {
  local harness=$1 secs=$2 seeds=$3 dict=$4
  [ "$secs" -gt 0 ] || return 0
  echo "== $harness for ${secs} s"
  "$build/fuzz/$harness" "$build/corpus_${harness#fuzz_}" $seeds \
    -dict="$dict" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -artifact_prefix="$build/artifacts/${harness}-" -print_final_stats=1 || status=1
}
if [ "$mode" = solve ]; then
  # fuzz/corpus_solve: inputs that were findings, kept as regression seeds (and replayed as tests);
  # the configs add every model and term (those whose files do not resolve in fuzz/files are refused).
  run fuzz_solve "$seconds" "fuzz/corpus fuzz/corpus_solve configs" fuzz/loader.dict
else
  run fuzz_loader "$loader_seconds" fuzz/corpus fuzz/loader.dict
  run fuzz_urdf "$urdf_seconds" fuzz/corpus_urdf fuzz/urdf.dict
fi
exit "$status"
