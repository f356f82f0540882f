#!/usr/bin/env bash
# Unpacks records.txt of scripts/gpu_mmsp.sh (files after "### <name>" lines) into a folder:
#   bash scripts/mmsp_unpack.sh <records.txt> [results/h200x2]
set -euo pipefail
in=${1:?records.txt of scripts/gpu_mmsp.sh}
dest=${2:-results/h200x2}
mkdir -p "$dest"
awk -v d="$dest" '/^### /{f=d "/" $2; printf "" > f; next} f{print > f}' "$in"
grep '^### ' "$in" | sed "s|^### |unpacked $dest/|"
