#!/usr/bin/env bash
# Copies the output of scripts/measure.sh (run on the 2 x H200 machine) into results/h200x2/ as the
# published records, and redraws the all-reduce plot from them. Nothing is edited: the CSVs and the
# summary are copied byte for byte.
#   bash scripts/publish_measure.sh <measure OUT folder> [results/h200x2]
set -euo pipefail
src=${1:?the OUT folder of scripts/measure.sh (holding h200x2/*.csv and summary.txt)}
dest=${2:-results/h200x2}
[ -d "$src/h200x2" ] || { echo "publish_measure.sh: no $src/h200x2 folder" >&2; exit 1; }
# Records of another machine (a 2-GPU call may land on H100s) never go beside the H200's.
python3 scripts/check_device.py "$dest" "$src"/h200x2/*.csv || exit 3
mkdir -p "$dest"
for f in "$src"/h200x2/*.csv; do cp "$f" "$dest/exec_$(basename "$f")"; done
cp "$src/summary.txt" "$dest/exec_summary.txt"
python3 scripts/plot_bidir.py "$dest/exec_allreduce_float.csv" "$dest/exec_allreduce_bidir.png" \
  --title "all-reduce on 2 x H200 (float, out of place; $(head -2 "$dest/exec_allreduce_float.csv" | tail -1 | cut -d, -f17))"
ls -1 "$dest"/exec_*
