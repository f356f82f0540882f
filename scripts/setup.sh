#!/usr/bin/env bash
# Installs what cclab needs on a fresh Debian/Ubuntu machine, skipping what is already there:
# compilers and CMake, Boost (Boost.Graph headers), Eigen3, GoogleTest, Google Benchmark, ninja, clang
# (fuzzing), Open MPI (`cclab run` under mpirun), the pinned Python packages (matplotlib, Jupyter's nbclient
# for the notebooks, pandas, pytest, and scikit-build-core + nanobind to build the package), and then the Python
# package itself (`pip install .`: the CPU core and the module cclab._cclab, built in build-py/ so that a
# second run rebuilds only what changed).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pkg in cmake ninja-build g++ libboost-dev libeigen3-dev libgtest-dev libbenchmark-dev nlohmann-json3-dev clang python3-pip \
  libopenmpi-dev openmpi-bin; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
PIP_FLAGS=(-q)  # a Python that Debian manages refuses pip without this flag (PEP 668)
if $PY -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path('stdlib'), \
  'EXTERNALLY-MANAGED')))" 2>/dev/null && [ -z "${VIRTUAL_ENV:-}" ]; then
  PIP_FLAGS+=(--break-system-packages)
fi
pip_install() { $PY -m pip install "${PIP_FLAGS[@]}" "$@"; }
if ! $PY -c "import matplotlib, nbclient, nbformat, ipykernel, scikit_build_core, nanobind, pytest, pandas" \
  >/dev/null 2>&1; then
  echo "setup: installing Python packages from requirements.txt"
  pip_install -r requirements.txt
fi
# The package, from this tree (build deps from requirements.txt, so no isolated build environment: the build
# folder build-py/ stays valid between runs).
echo "setup: pip install . (the cclab Python package; the first build takes minutes, later ones seconds)"
pip_install --no-build-isolation -C build-dir=build-py .
