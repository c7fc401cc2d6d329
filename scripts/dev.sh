#!/usr/bin/env bash
# The project's two entry points (see README):
#   scripts/dev.sh run    install what is missing, build, run the main job
#   scripts/dev.sh test   install what is missing, build, run every test
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

mode=${1:-}
case "$mode" in
  run|test) ;;
  *) echo "usage: scripts/dev.sh run|test" >&2; exit 2 ;;
esac

scripts/setup.sh
cmake --preset release >/dev/null
if [ "$mode" = run ]; then
  cmake --build --preset release -j "$jobs" --target knot
  build/release/tools/knot/knot solve configs/cartpole_swingup.yaml
else
  cmake --build --preset release -j "$jobs"
  ctest --preset release
fi
