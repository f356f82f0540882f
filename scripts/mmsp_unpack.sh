#!/usr/bin/env bash
# Unpacks records.txt of scripts/gpu_mmsp.sh (files after "### <name>" lines) into a folder:
#   bash scripts/mmsp_unpack.sh <records.txt> [results/h200x2]
set -euo pipefail
in=${1:?records.txt of scripts/gpu_mmsp.sh}
dest=${2:-results/h200x2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk -v d="$tmp" '/^### /{f=d "/" $2; printf "" > f; next} f{print > f}' "$in"
# Records of another machine (a 2-GPU call may land on H100s) never go beside the H200's.
python3 scripts/check_device.py "$dest" "$tmp"/*.csv || exit 3
mkdir -p "$dest"
cp "$tmp"/* "$dest"/
grep '^### ' "$in" | sed "s|^### |unpacked $dest/|"
