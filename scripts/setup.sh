#!/usr/bin/env bash
# Installs what cclab needs on a fresh Debian/Ubuntu machine, skipping what is already there:
# compilers and CMake, Boost (Boost.Graph headers), Eigen3, GoogleTest, Google Benchmark, ninja, clang
# (fuzzing), Open MPI (`cclab run` under mpirun), and the pinned Python packages (matplotlib,
# Jupyter's nbclient for the notebooks).
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
if ! $PY -c "import matplotlib, nbclient, nbformat, ipykernel" >/dev/null 2>&1; then
  echo "setup: installing Python packages from requirements.txt"
  $PY -m pip install -q -r requirements.txt 2>/dev/null || $PY -m pip install -q --break-system-packages -r requirements.txt
fi
