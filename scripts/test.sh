#!/usr/bin/env bash
# Set up, build, and pass the tests (what CI runs). GPU tests skip with a message where no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default
bash scripts/check_format.sh
ctest --preset default -j "$(nproc)"
