#!/usr/bin/env bash
# Installs the Debian packages Knot builds with, then the Python packages its Python package builds
# and tests with, only those that are missing. Idempotent.
set -euo pipefail
pkgs=(cmake g++ make pkg-config ccache
      libeigen3-dev libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      liblapacke-dev libopenblas-dev
      liburdfdom-dev coinor-libipopt-dev
      clang libclang-rt-14-dev
      python3-matplotlib python3-dev python3-pip)
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

# The Python package (python/, docs/python.md) is built for the python3 on PATH (a pyenv or venv
# interpreter where there is one), tested with pytest, and its examples draw with matplotlib.
py_missing=()
for pair in nanobind:"nanobind>=2" scikit_build_core:"scikit-build-core>=0.10" pytest:pytest numpy:numpy \
            matplotlib:matplotlib; do
  python3 -c "import ${pair%%:*}" 2>/dev/null || py_missing+=("${pair#*:}")
done
if ((${#py_missing[@]})); then
  echo "setup: pip installing ${py_missing[*]} for $(python3 -c 'import sys; print(sys.executable)')"
  pip_flags=(--quiet --disable-pip-version-check)
  # Debian's own interpreter refuses pip outside a venv (PEP 668): install for the user there.
  if python3 -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
    pip_flags+=(--user --break-system-packages)
  fi
  # Without PyPI the rest still builds and tests: CMake skips the Python package with one line.
  python3 -m pip install "${pip_flags[@]}" "${py_missing[@]}" ||
    echo "setup: pip could not install ${py_missing[*]}; the Python package will be skipped" >&2
else
  echo "setup: all Python packages present"
fi
