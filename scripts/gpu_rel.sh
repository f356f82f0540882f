#!/usr/bin/env bash
# An interrupted `cclab run` sweep on the GPUs (issue 9), from prebuilt binaries:
#   BIN=<folder with cclab> OUT=<folder> bash scripts/gpu_rel.sh
# For SIGTERM (a batch system's stop) and SIGINT (Ctrl-C): start a checked sweep of three algorithms,
# 8 B..1 GiB on 2 GPUs, send the signal once the CSV holds the first size's 2 rows, and check that the run stops after
# the row in progress with exit 128 + signal (143, 130), prints "# interrupted by SIG...: stopped before
# <algo> at <bytes> B; N rows kept in <csv>", and that the CSV holds exactly N whole rows.
# Writes $OUT/rel/log.txt and $OUT/rel/interrupted.csv (the SIGTERM run's rows); prints a table last.
set -u
: "${BIN:?set BIN to the folder of the prebuilt binaries}"
: "${OUT:?set OUT to the output folder}"
DIR="$OUT/rel"
mkdir -p "$DIR"
LOG="$DIR/log.txt"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
: >"$LOG"
START=$SECONDS
echo "# gpu_rel.sh at $(date -u +%FT%TZ), commit ${CCLAB_COMMIT:-unknown}" | tee -a "$LOG"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$LOG" 2>&1

rows_in() { [ -f "$1" ] && echo $(($(wc -l <"$1") - 1)) || echo 0; }

RESULTS=()
interrupt() {  # signal name, expected exit code
  local sig=$1 want=$2 csv="$TMP/$1.csv" out="$TMP/$1.out"
  # Job control on: a script's background job would otherwise start with SIGINT ignored.
  set -m
  "$BIN/cclab" run --algo allreduce.ring,allgather.ring,allreduce.nccl -g 2 -b 8 -e 1G -f 2 -w 2 -n 10 \
    --timeout 10 --csv "$csv" >"$out" 2>&1 &
  local pid=$! t0=$SECONDS sent=no
  set +m
  # Call 2 (f1edc53) saw its 4th row only after 30 s: allow 35 s for the first size, and log when.
  while kill -0 "$pid" 2>/dev/null && [ $((SECONDS - t0)) -lt 35 ]; do
    if [ "$(rows_in "$csv")" -ge 2 ]; then
      echo "# $sig: $(rows_in "$csv") rows after $((SECONDS - t0)) s: signal sent" >>"$LOG"
      kill -s "$sig" "$pid"
      sent=yes
      break
    fi
    sleep 0.05
  done
  local waited=$SECONDS
  # At most 25 s for the row in progress to finish, then a hard kill (counted as a failure).
  while kill -0 "$pid" 2>/dev/null && [ $((SECONDS - waited)) -lt 25 ]; do sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -s KILL "$pid"
  wait "$pid"
  local rc=$? stop_s=$((SECONDS - waited))
  { echo "# --- $sig (sent: $sent, exit $rc, ${stop_s} s to stop, $(rows_in "$csv") rows in the CSV)"; cat "$out"; } >>"$LOG"
  local line kept have ok=FAIL
  line=$(grep -E "^# interrupted by SIG$sig" "$out" | tail -1)
  kept=$(echo "$line" | sed -nE 's/.*; ([0-9]+) rows kept.*/\1/p')
  have=$(rows_in "$csv")
  [ "$sent" = yes ] && [ "$rc" = "$want" ] && [ -n "$kept" ] && [ "$kept" = "$have" ] &&
    echo "$line" | grep -qE "stopped before [a-z_.]+( at [0-9]+ B)?;" && ok=ok
  RESULTS+=("$(printf '%-8s %5s %5s %9s %8s %6s  %s' "$sig" "$rc" "$want" "${kept:--}" "$have" "$ok" "${line:-no stop line}")")
  [ "$sig" = TERM ] && [ -f "$csv" ] && cp "$csv" "$DIR/interrupted.csv"
}
interrupt TERM 143
interrupt INT 130

echo "# done in $((SECONDS - START)) s" | tee -a "$LOG"
printf '%-8s %5s %5s %9s %8s %6s  %s\n' signal exit want "rows said" "csv rows" result "stop line" | tee -a "$LOG"
for r in "${RESULTS[@]}"; do echo "$r" | tee -a "$LOG"; done
