#!/usr/bin/env bash
# Copies the output of scripts/measure.sh into results/<machine>/ as the published records (the machine folder
# measure.sh wrote: h200x2, h200x4, h100x2, ...), and redraws the all-reduce plot from them. Nothing is edited:
# the CSVs and the summary are copied byte for byte.
#   bash scripts/publish_measure.sh <measure OUT folder> [results/<machine>]
set -euo pipefail
src=${1:?the OUT folder of scripts/measure.sh (holding <machine>/*.csv and summary.txt)}
machine_dir=$(find "$src" -mindepth 1 -maxdepth 1 -type d | head -1)
[ -n "$machine_dir" ] || { echo "publish_measure.sh: no machine folder in $src" >&2; exit 1; }
machine=$(basename "$machine_dir")
dest=${2:-results/$machine}
# Records of another machine (a 2-GPU call may land on H100s) never go beside another machine's.
python3 scripts/check_device.py "$dest" "$machine_dir"/*.csv || exit 3
mkdir -p "$dest"
for f in "$machine_dir"/*.csv; do cp "$f" "$dest/exec_$(basename "$f")"; done
if [ -f "$src/summary.txt" ]; then
  cp "$src/summary.txt" "$dest/exec_summary.txt"
else  # a sweep cut at the call's limit wrote no summary: the same script makes it from the records
  python3 scripts/exec_summary.py "$dest/exec_allreduce_float.csv" $([ -f "$dest/exec_others_float.csv" ] &&
    echo "$dest/exec_others_float.csv") >"$dest/exec_summary.txt"
fi
python3 scripts/plot_bidir.py "$dest/exec_allreduce_float.csv" "$dest/exec_allreduce_bidir.png" \
  --title "all-reduce on $machine (float, out of place; $(head -2 "$dest/exec_allreduce_float.csv" | tail -1 | cut -d, -f17))"
ls -1 "$dest"/exec_*
