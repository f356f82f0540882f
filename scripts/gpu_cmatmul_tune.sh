#!/usr/bin/env bash
# Collective matmul only (issue 7), with the cuBLASLt algorithm autotune on and off: the 2 shapes x 2
# dtypes of scripts/measure_matmul_sparse.sh, `cclab run --algo all -g 2`, 10 warm-up + 50 timed, then
# the issue-7 summary of both; then allgather_matmul.ring alone with its shards in 2 and 4 row chunks
# (--tune ring_chunks=N, autotune off; each run times its own matmul.cublas_* references). Made for
# nvidia-h200-x2; 16 runs of a few seconds each; runs not started after 130 s are skipped (< 150 s).
# In chunks/, each (shape, dtype) has the ring_chunks=2 run first, then ring_chunks=4 (notes.txt names them).
#
#   BIN=/tmp/bin OUT=/tmp/w bash scripts/gpu_cmatmul_tune.sh
#
# Writes $OUT/cmatmul_tune/{on,off,chunks}/mmsp_cmatmul.csv, mmsp_summary.txt, and notes.txt (which
# cuBLASLt algorithm each record's products ran, from the note column).
set -uo pipefail
export NCCL_NVLS_ENABLE=0  # NVLink multicast must stay off on the lent machines (KINDS.md)
cd "$(dirname "$0")/.." || exit 2
CCLAB=${BIN:+$BIN/cclab}
CCLAB=${CCLAB:-build-mm/cli/cclab}
OUT=${OUT:-/tmp/w}/cmatmul_tune
export CCLAB_COMMIT=${CCLAB_COMMIT:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)}
mkdir -p "$OUT/on" "$OUT/off" "$OUT/chunks"
T0=$SECONDS
status=0
for mode in on off chunks; do
  csvs=()
  for s in 1024,4096,4096 4096,8192,8192; do
    for d in half bfloat16; do
      case $mode in
        on) runs=("--algo all --tune matmul_autotune=1") ;;
        off) runs=("--algo all --tune matmul_autotune=0") ;;
        chunks) runs=("--algo allgather_matmul.ring --tune ring_chunks=2" "--algo allgather_matmul.ring --tune ring_chunks=4") ;;
      esac
      for a in "${runs[@]}"; do
        f="$OUT/$mode/mm_${s//,/x}_${d}_${#csvs[@]}.csv"
        if [ $((SECONDS - T0)) -gt 130 ]; then echo "== skipped (time): $a $s $d"; status=1; continue; fi
        echo "== [$((SECONDS - T0)) s] $mode: cclab run $a -g 2 --shape $s -d $d"
        # shellcheck disable=SC2086 # $a holds several arguments
        timeout 30 "$CCLAB" run $a -g 2 --shape "$s" -d "$d" -w 10 -n 50 --csv "$f" || { echo "== exit $? ($mode $a $s $d)"; status=1; }
        [ -f "$f" ] && csvs+=("$f")
      done
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
for mode in on off chunks; do
  echo "==== $mode"
  python3 scripts/mmsp_summary.py "$OUT/$mode" | tee "$OUT/$mode/mmsp_summary.txt"
done
python3 - "$OUT/on/mmsp_cmatmul.csv" "$OUT/chunks/mmsp_cmatmul.csv" <<'PY' | tee "$OUT/notes.txt"
import csv, os, sys
for p in sys.argv[1:]:
    if os.path.exists(p):
        with open(p) as f:
            for r in csv.DictReader(f):
                print(f"{r['algo']:34} {r['shape']:15} {r['dtype']:9} {r.get('note', '')}")
PY
echo "== [$((SECONDS - T0)) s] done"
exit $status
