#!/usr/bin/env bash
# The main job: set up, build, simulate every algorithm on the embedded default topology (dgx-h100),
# print the table, and write a plot of busbw against size.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset default >/dev/null
cmake --build --preset default --target cclab
mkdir -p results/sim
./build/cli/cclab sim --topo dgx-h100 --algo all -b 8 -e 1G -f 4 --csv results/sim/dgx-h100.csv
python3 scripts/plot_busbw.py results/sim/dgx-h100.csv results/sim/dgx-h100.png \
  --title "cclab sim: every algorithm on dgx-h100 (8 GPUs)"
echo "table: above; records: results/sim/dgx-h100.csv; plot: results/sim/dgx-h100.png"
