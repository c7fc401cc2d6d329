#!/usr/bin/env bash
# Installs the Debian packages Knot builds with, only those that are missing. Idempotent.
set -euo pipefail
pkgs=(cmake g++ make pkg-config ccache
      libeigen3-dev libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      liblapacke-dev libopenblas-dev
      liburdfdom-dev coinor-libipopt-dev
      clang libclang-rt-14-dev
      python3-matplotlib)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
