#!/usr/bin/env bash
# The fused small-message path (issue 6) on the 2 x H200 machine, from prebuilt binaries:
#   BIN=<folder with cclab and test_exec_fused_gpu> OUT=<folder> bash scripts/gpu_fused.sh
# 1. the GPU test of the fused lowering (every general algorithm, 2 ranks and 4/8 ranks sharing the
#    GPUs, zero wrong elements), bounded in time;
# 2. every general algorithm from 16 B to 1 MiB (x4) with --tune lowering=fused and lowering=plan,
#    and the NCCL baselines, graph replay on, checked; one CSV of all rows.
# 3. compute-sanitizer memcheck and racecheck on a short fused run.
# Writes $OUT/fused/log.txt and $OUT/fused/fused.csv; prints a table of times (us) last:
# fused (forced; release flags, CTA shares 32K default), sc (fence.sc.sys before flags), c128K /
# c512K (CTA shares 128K, 512K), plan (general lowering), auto (the default
# choice), NCCL of the same collective, fused / NCCL and best fused variant / NCCL.
set -u
: "${BIN:?set BIN to the folder of the prebuilt binaries}"
: "${OUT:?set OUT to the output folder}"
DIR="$OUT/fused"
mkdir -p "$DIR"
LOG="$DIR/log.txt"
CSV="$DIR/fused.csv"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
: >"$LOG"
START=$SECONDS

ALGOS=broadcast.binomial,broadcast.pipeline,broadcast.scatter_allgather,reduce.binomial,reduce.direct
ALGOS+=,gather.binomial,gather.direct,scatter.binomial,scatter.direct,allgather.ring,reducescatter.ring
ALGOS+=,allreduce.ring,allreduce.tree,allreduce.rhd,alltoall.direct,alltoall.bruck,alltoall.hier,reducescatter.hier
NCCL=broadcast.nccl,reduce.nccl,allgather.nccl,reducescatter.nccl,allreduce.nccl,alltoall.nccl
SWEEP=(-b 16 -e 1M -f 4 -w 5 -n 20 --graph 1 -c 1 --inplace 0 --timeout 20)

echo "# gpu_fused.sh at $(date -u +%FT%TZ), commit ${CCLAB_COMMIT:-unknown}" | tee -a "$LOG"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >>"$LOG" 2>&1

# 1. correctness (the test skips nothing here: 2 GPUs)
if [ -x "$BIN/test_exec_fused_gpu" ]; then
  timeout 30 "$BIN/test_exec_fused_gpu" >"$TMP/test.txt" 2>&1
  rc=$?
  cat "$TMP/test.txt" >>"$LOG"
  echo "# test_exec_fused_gpu rc=$rc ($((SECONDS - START)) s): $(grep -cE '^\[       OK' "$TMP/test.txt") ok, $(grep -cE '^\[  FAILED  \].*\(' "$TMP/test.txt") failed" | tee -a "$LOG"
else
  echo "# no $BIN/test_exec_fused_gpu: correctness test skipped" | tee -a "$LOG"
fi

# 2. timings: fused (with the NCCL baselines in the same run), fused with larger CTA shares (fewer
# CTAs per lane), then the general lowering
run() {  # name csv args...
  local name=$1 csv=$2
  shift 2
  echo "# cclab run $name: $*" >>"$LOG"
  timeout 25 "$BIN/cclab" run "$@" --csv "$csv" >>"$LOG" 2>&1
  echo "# $name rc=$? ($((SECONDS - START)) s)" | tee -a "$LOG"
}
run fused "$TMP/fused.csv" --algo "$ALGOS,$NCCL" "${SWEEP[@]}" --tune lowering=fused,fused_timeout=5
run c128K "$TMP/c128K.csv" --algo "$ALGOS" "${SWEEP[@]}" --tune lowering=fused,fused_timeout=5,fused_cta_bytes=128K
run sc "$TMP/sc.csv" --algo "$ALGOS" "${SWEEP[@]}" --tune lowering=fused,fused_timeout=5,fused_fence=sc
run c512K "$TMP/c512K.csv" --algo "$ALGOS" "${SWEEP[@]}" --tune lowering=fused,fused_timeout=5,fused_cta_bytes=512K
run plan "$TMP/plan.csv" --algo "$ALGOS" "${SWEEP[@]}" --tune lowering=plan
run auto "$TMP/auto.csv" --algo "$ALGOS" "${SWEEP[@]}"  # the default: lowering=auto

# 3. compute-sanitizer memcheck and racecheck on a short fused run (a few algorithms, one size)
if command -v compute-sanitizer >/dev/null; then
  SAN=(--algo allreduce.ring,allgather.ring,alltoall.bruck,reduce.binomial -b 4100 -e 4100 -w 0 -n 1 --graph 0
    --timeout 100 --tune lowering=fused,fused_timeout=60)
  for tool in memcheck racecheck; do
    timeout 25 compute-sanitizer --tool $tool "$BIN/cclab" run "${SAN[@]}" >"$TMP/$tool.txt" 2>&1
    echo "# $tool rc=$? ($((SECONDS - START)) s): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$TMP/$tool.txt" | tail -1)" | tee -a "$LOG"
    grep -E "^=========" "$TMP/$tool.txt" | head -20 >>"$LOG"
  done
fi

# One CSV: the header once, the variants' algo renamed <algo>@<variant> so all paths sit side by side.
{
  [ -f "$TMP/fused.csv" ] && cat "$TMP/fused.csv"
  for v in sc c128K c512K plan auto; do
    [ -f "$TMP/$v.csv" ] && tail -n +2 "$TMP/$v.csv" | sed "s/^\([^,]*\),/\1@$v,/"
  done
} >"$CSV"

# Table: out-of-place rows; time of each path and of the collective's NCCL baseline.
awk -F, '
  NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
  $col["inplace"] != "0" && $col["inplace"] != "false" { next }
  {
    a = $col["algo"]; b = $col["bytes"]; t = $col["time_us"]; w = $col["wrong"]
    v = "fused"
    if (a ~ /@/) { v = substr(a, index(a, "@") + 1); a = substr(a, 1, index(a, "@") - 1) }
    if (a ~ /\.nccl$/) { nccl[$col["collective"] "," b] = t; next }
    key = a "," b
    tm[key, v] = t
    if (w != "0") bad[key] = bad[key] " " v ":" w
    if (v == "fused") coll[key] = $col["collective"]
    if (!(a in seen)) { seen[a] = 1; order[++na] = a }
    if (!(b in sb)) { sb[b] = 1; sizes[++ns] = b + 0 }
  }
  END {
    for (i = 1; i <= ns; ++i) for (j = i + 1; j <= ns; ++j) if (sizes[j] < sizes[i]) { x = sizes[i]; sizes[i] = sizes[j]; sizes[j] = x }
    nv = split("fused sc c128K c512K plan auto", vs, " ")
    printf "%-28s %8s", "algo (out of place, us)", "bytes"
    for (q = 1; q <= nv; ++q) printf " %8s", vs[q]
    printf " %8s %7s %7s  %s\n", "nccl", "f/nccl", "best/n", "wrong"
    worst = 0; worst_best = 0
    for (k = 1; k <= na; ++k) for (i = 1; i <= ns; ++i) {
      key = order[k] "," sizes[i]
      n = nccl[coll[key] "," sizes[i]]
      line = sprintf("%-28s %8d", order[k], sizes[i]); best = 0
      for (q = 1; q <= nv; ++q) {
        c = "-"
        if ((key, vs[q]) in tm) {
          c = sprintf("%.2f", tm[key, vs[q]])
          if (vs[q] ~ /^(fused|c|sc)/ && (best == 0 || tm[key, vs[q]] < best)) best = tm[key, vs[q]]
        }
        line = line sprintf(" %8s", c)
      }
      rf = (n > 0 && ((key, "fused") in tm)) ? tm[key, "fused"] / n : 0
      rb = (n > 0 && best > 0) ? best / n : 0
      if (rf > worst) worst = rf
      if (rb > worst_best) worst_best = rb
      line = line sprintf(" %8s %7s %7s  %s", n > 0 ? sprintf("%.2f", n) : "-", rf > 0 ? sprintf("%.2f", rf) : "-",
                          rb > 0 ? sprintf("%.2f", rb) : "-", (key in bad) ? bad[key] : "0")
      print line
    }
    printf "# worst fused / nccl time: %.2f; worst best-fused-variant / nccl: %.2f\n", worst, worst_best
  }' "$CSV" | tee -a "$LOG"
echo "# gpu_fused.sh done in $((SECONDS - START)) s" | tee -a "$LOG"
