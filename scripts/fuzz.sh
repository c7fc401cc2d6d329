#!/usr/bin/env bash
# Fuzz the problem-file loader with libFuzzer for a bounded time.
#   scripts/fuzz.sh [SECONDS]      (default 60)
# Builds fuzz/fuzz_loader with clang++ (-fsanitize=fuzzer,address,undefined) in its own build
# directory, build/fuzz, then runs it from the seeds in fuzz/corpus. New inputs go to
# build/fuzz/corpus (the committed seeds stay as they are); a crash, sanitizer report, leak,
# escaped exception, slow unit (-timeout) or memory blow-up (-rss_limit_mb) is written to
# build/fuzz/artifacts/ and makes the script exit non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
case "$seconds" in
  ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS]" >&2; exit 2 ;;
esac
jobs=$(nproc 2>/dev/null || echo 2)
build=build/fuzz

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DKNOT_BUILD_FUZZERS=ON -DKNOT_SANITIZE=address,undefined -DKNOT_CUDA=OFF \
  -DKNOT_BUILD_TESTS=OFF -DKNOT_BUILD_TOOLS=OFF -DKNOT_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target fuzz_loader

mkdir -p "$build/corpus" "$build/artifacts"
# Per-input limits: a valid document of the maximum size loads in well under a second.
exec "$build/fuzz/fuzz_loader" "$build/corpus" fuzz/corpus \
  -dict=fuzz/loader.dict -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
  -artifact_prefix="$build/artifacts/" -print_final_stats=1
