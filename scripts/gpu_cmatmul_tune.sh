#!/usr/bin/env bash
# Collective matmul only (issue 7), with the cuBLASLt algorithm autotune on and off: the 2 shapes x 2
# dtypes of scripts/measure_matmul_sparse.sh, `cclab run --algo all -g 2`, 10 warm-up + 50 timed, then
# the issue-7 summary of both. Made for nvidia-h200-x2; ~8 runs of a few seconds each (< 150 s).
#
#   BIN=/tmp/bin OUT=/tmp/w bash scripts/gpu_cmatmul_tune.sh
#
# Writes $OUT/cmatmul_tune/{on,off}/mmsp_cmatmul.csv, mmsp_summary.txt, and notes.txt (which cuBLASLt
# algorithm each record's products ran, from the note column).
set -uo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast must stay off on the lent machines (KINDS.md)
cd "$(dirname "$0")/.."
CCLAB=${BIN:+$BIN/cclab}
CCLAB=${CCLAB:-build-mm/cli/cclab}
OUT=${OUT:-/tmp/w}/cmatmul_tune
export CCLAB_COMMIT=${CCLAB_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
mkdir -p "$OUT/on" "$OUT/off"
T0=$SECONDS
status=0
for mode in on off; do
  flag=1
  [ $mode = off ] && flag=0
  csvs=()
  for s in 1024,4096,4096 4096,8192,8192; do
    for d in half bfloat16; do
      f="$OUT/$mode/mm_${s//,/x}_$d.csv"
      echo "== [$((SECONDS - T0)) s] autotune $mode: cclab run --algo all -g 2 --shape $s -d $d"
      timeout 30 "$CCLAB" run --algo all -g 2 --shape "$s" -d "$d" -w 10 -n 50 --tune "matmul_autotune=$flag" \
        --csv "$f" || { echo "== exit $? ($mode $s $d)"; status=1; }
      [ -f "$f" ] && csvs+=("$f")
    done
  done
  python3 - "$OUT/$mode/mmsp_cmatmul.csv" "${csvs[@]}" <<'PY'
import csv, sys
out, rows, cols = sys.argv[1], [], []
for p in sys.argv[2:]:
    with open(p) as f:
        for r in csv.DictReader(f):
            rows.append(r)
            cols += [c for c in r if c not in cols]
if rows:
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
PY
done
for mode in on off; do
  echo "==== autotune $mode"
  python3 scripts/mmsp_summary.py "$OUT/$mode" | tee "$OUT/$mode/mmsp_summary.txt"
done
python3 - "$OUT/on/mmsp_cmatmul.csv" <<'PY' | tee "$OUT/notes.txt"
import csv, os, sys
if os.path.exists(sys.argv[1]):
    with open(sys.argv[1]) as f:
        for r in csv.DictReader(f):
            print(f"{r['algo']:34} {r['shape']:15} {r['dtype']:9} {r.get('note', '')}")
PY
echo "== [$((SECONDS - T0)) s] done"
exit $status
