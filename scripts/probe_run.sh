# Sourced by the probe scripts (device-call steps, run from the repository root): `probe NAME ARGS...` runs
# `$CCLAB run ARGS...` within PROBE_S seconds (default 60), keeps its records in $W/probe_NAME.csv and its output
# in $W/probe_NAME.log, and prints a line and the first rows (size, time, busbw, #wrong).
probe() {
  local name=$1
  shift
  local t0=$(date +%s)
  timeout -k 10 "${PROBE_S:-60}" "$CCLAB" run "$@" --csv "$W/probe_$name.csv" >"$W/probe_$name.log" 2>&1
  echo "$name rc=$? $(($(date +%s) - t0)) s: $*"
  grep -vE '^#|^$' "$W/probe_$name.log" | awk '{printf "   %s %s %s %s\n", $1, $6, $8, $9}' | head -12
  grep -E "refused|error|Error" "$W/probe_$name.log" | head -3
}
