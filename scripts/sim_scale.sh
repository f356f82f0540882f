#!/usr/bin/env bash
# How fast `cclab sim` predicts collectives on clusters of thousands of GPUs (issue 21, "Machines we don't
# own"): 1 GiB ring all-reduce and hierarchical all-to-all on 2048 DGX H100 (16,384 GPUs; goal: under 5 s
# of CPU on one core) and the ring on 16,384 DGX H100 (131,072 GPUs; goal: finishes, sensible, no memory
# blow-up). For each command: wall and CPU time (user + system) and peak resident memory from GNU time,
# the predicted time and how the run was folded, best of $REPEAT runs by CPU time. Writes
# results/sim/scale.txt (or $OUT).
#
# From the repository root. CPU only: builds `cclab` with the cpu preset (or uses $CCLAB). Optional:
# BASE_CCLAB=<another cclab> (and BASE_LABEL, what it is) times the 2048xdgx-h100 commands with it too,
# once each (e.g. a build of an older commit; before the change of 2026-11-26 the 131,072-GPU ring stopped
# with an internal error after about a minute), and HIER_131072=1 adds the hierarchical all-to-all on 131,072 GPUs (about 12 GB of
# memory and a minute of CPU).
# CPU time is what a machine busy with other work does not inflate much; the record notes the load.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results/sim/scale.txt}
REPEAT=${REPEAT:-3}
if [ -z "${CCLAB:-}" ]; then
  cmake --preset cpu >/dev/null
  ninja -C build-cpu cclab >/dev/null
  CCLAB=build-cpu/cli/cclab
fi
[ -x /usr/bin/time ] || { echo "sim_scale.sh: needs GNU time (/usr/bin/time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cases=(
  "--topo 2048xdgx-h100 --algo allreduce.ring,alltoall.hier -b 1G -e 1G"
  "--topo 2048xdgx-h100 --algo allreduce.ring -b 1G -e 1G"
  "--topo 2048xdgx-h100 --algo alltoall.hier -b 1G -e 1G"
  "--topo 16384xdgx-h100 --algo allreduce.ring -b 1G -e 1G"
)
# (heavy: measured once)
[ "${HIER_131072:-0}" = 1 ] && cases+=("once --topo 16384xdgx-h100 --algo alltoall.hier -b 1G -e 1G")

# One command, best of $2 runs by CPU time: "wall cpu user sys rss_kb" and the records (JSON).
measure() {
  local bin=$1 repeat=$2 args=$3 best="" best_cpu=""
  for _ in $(seq "$repeat"); do
    # shellcheck disable=SC2086  # the arguments are words
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$bin" sim $args --json "$tmp/run.json" >/dev/null 2>"$tmp/err" ||
      { echo "FAILED: $bin sim $args" >&2; cat "$tmp/err" >&2; return 1; }
    read -r wall user sys rss <"$tmp/time"
    cpu=$(python3 -c "print(f'{$user + $sys:.2f}')")
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $cpu < $best_cpu else 1)"; then
      best="$wall $cpu $user $sys $rss"
      best_cpu=$cpu
      cp "$tmp/run.json" "$tmp/best.json"
    fi
  done
  echo "$best"
}

report() {
  local label=$1 bin=$2 filter=${3:-}
  echo "## $label: $bin"
  for args in "${cases[@]}"; do
    [[ -n "$filter" && "$args" != *"$filter"* ]] && continue
    local repeat=$REPEAT
    if [[ "$args" == once\ * ]]; then
      repeat=1
      args=${args#once }
    fi
    read -r wall cpu user sys rss < <(measure "$bin" "$repeat" "$args")
    echo "cclab sim $args"
    printf '  best of %s by CPU: wall %6.2f s  CPU %6.2f s (user %s s, system %s s)  peak RSS %6.0f MB\n' \
      "$repeat" "$wall" "$cpu" "$user" "$sys" "$(python3 -c "print($rss / 1024)")"
    python3 - "$tmp/best.json" <<'EOF'
import json, sys
for r in json.load(open(sys.argv[1])):
    note = r.get("note", "")
    fold = note[note.find("folded:"):] if "folded:" in note else "not folded"
    print(f"  {r['algo']:15s} {r['ranks']} ranks {r['bytes']} B: predicted {r['time_us']:.3f} us, "
          f"busbw {r['busbw_gbps']:.2f} GB/s; {fold}")
EOF
  done
}

{
  echo "# cclab sim at scale (scripts/sim_scale.sh): commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)," \
    "$(date -u +%Y-%m-%d), $(uname -m) $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  echo "# goals (issue 21): 2048xdgx-h100 ring + hier at 1 GiB under 5 s of CPU on one core; 16384xdgx-h100 ring" \
    "finishes with a sensible prediction and bounded memory"
  echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg) (other users' builds may share the machine: CPU time is the" \
    "figure to read, wall time is inflated by them)"
  report "this tree" "$CCLAB"
  if [ -n "${BASE_CCLAB:-}" ]; then
    REPEAT=1 report "baseline (${BASE_LABEL:-BASE_CCLAB}, one run each)" "$BASE_CCLAB" 2048xdgx-h100
  fi
  echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$tmp/record"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/record" "$OUT"
cat "$OUT"
