#!/usr/bin/env bash
# libcclab_nccl.so under nccl-tests, on a GPU machine (issue 22), from the repository root:
#   1. builds the shim (or uses CCLAB_SHIM_LIB) and nccl-tests from the copy in NCCL_TESTS_DIR (none is
#      committed; the copy is left untouched: binaries go to a scratch folder);
#   2. checks that LD_PRELOAD reaches the shim and that the all-reduce takes the cclab route (CCLAB_DEBUG=1 on one
#      small run: ll at 8 B, lamport at 1 MiB);
#   3. all_reduce_perf -b 8 -e 1G -f 2 -g $NGPUS with NCCL alone and through the shim, eager and with -G 100
#      (through the shim: cclab's ll and lamport up to 256 MiB, NCCL above);
#   4. all_gather_perf, reduce_scatter_perf, broadcast_perf, alltoall_perf, sendrecv_perf, NCCL alone and
#      through the shim alternately (each round after the first swaps which runs first), REPEATS times each (eager),
#      and broadcast_perf through the shim with CCLAB_DISABLE=1 (forwarding only); step others_graph: the same
#      binaries with their calls captured in CUDA graphs (-G 10), in turn, GRAPH_REPEATS (3) times each;
#   5. writes every log, summary.csv (one row per run and size, nccl-tests' columns), allreduce_compare.csv
#      (NCCL alone against the shim, per size and launch style) and its plot allreduce.png, and
#      others_compare.csv (the other binaries, medians per size: scripts/shim_compare_others.py; their graph runs in
#      others_compare_graph.csv) to $OUT;
#   6. PyTorch, one process per GPU (the shim's multi-process path): scripts/torch_allreduce_check.py with NCCL
#      alone and with LD_PRELOAD (CCLAB_NCCL_LIB = the libnccl torch loads), after one small CCLAB_DEBUG=1 run that
#      must show the cclab route; eager and with the calls captured in a CUDA graph (TORCH_LAUNCH, default
#      "eager graph"); writes $OUT/torch/torch_compare.csv and torch_compare_graph.csv (size, dtype, NCCL time, shim
#      time, ratio).
#      Skipped with a message where python3 cannot import torch;
#   7. prints the #wrong totals (nccl-tests' and torch's) last.
# Environment: NCCL_TESTS_DIR (required unless TORCH_ONLY=1), OUT (default /tmp/cclab_shim_out), NGPUS (2),
# CCLAB_SHIM_LIB, CUDA_HOME (/usr/local/cuda), NCCL_HOME (nccl-tests' default when unset), MAX_BYTES (1G),
# DEADLINE (560 s), REPEATS (3), STEPS (which runs: any of "allreduce others others_graph torch", all by default; "" builds and
# checks the route only), TORCH_ONLY=1 (steps 1 and 6 only: no nccl-tests), TORCH_MAX (64M), TORCH_DTYPES
# (float32,bfloat16,float16), PIN_CPUS (a taskset CPU list every timed run is pinned to, NCCL alone and through the
# shim alike; an eager process runs its small sizes at one of two levels, ~13 or ~18 us on 2 x H200, pinned or not),
# ITERS (nccl-tests' -n for every run: timed iterations per size, its default 20). NVLink multicast stays off in every
# run (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1).
# Exit status: 0 when every route checked was cclab and every run finished with no wrong element, 1 otherwise,
# 2 when it could not start.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
TORCH_ONLY=${TORCH_ONLY:-0}
STEPS=${STEPS-allreduce others others_graph torch}
[ "$TORCH_ONLY" = 1 ] && STEPS=torch
has_step() { [[ " $STEPS " == *" $1 "* ]]; }
PIN=()
[ -n "${PIN_CPUS:-}" ] && PIN=(taskset -c "$PIN_CPUS")
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
if [ "$TORCH_ONLY" != 1 ] && [ -z "${NCCL_TESTS_DIR:-}" ]; then
  echo "shim_check: set NCCL_TESTS_DIR to a copy of https://github.com/NVIDIA/nccl-tests (none is committed)" >&2
  exit 2
fi
[ "$TORCH_ONLY" = 1 ] || [ -f "$NCCL_TESTS_DIR/Makefile" ] || { echo "shim_check: no Makefile in NCCL_TESTS_DIR=$NCCL_TESTS_DIR" >&2; exit 2; }
OUT=${OUT:-/tmp/cclab_shim_out}
NGPUS=${NGPUS:-2}
REPEATS=${REPEATS:-3}
MAX_BYTES=${MAX_BYTES:-1G}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
DEADLINE=${DEADLINE:-560}  # seconds: later runs are skipped past it (a device call has 600)
mkdir -p "$OUT"
LOGS="$OUT/logs" && mkdir -p "$LOGS"
T0=$(date +%s)
stamp() { echo "## [$(($(date +%s) - T0)) s] $*"; }
left() { echo $((DEADLINE - ($(date +%s) - T0))); }

stamp "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -8
nvidia-smi topo -m 2>&1 | head -$((NGPUS + 1))

# 1. the shim and nccl-tests
SHIM=${CCLAB_SHIM_LIB:-}
if [ -z "$SHIM" ]; then
  stamp "building libcclab_nccl.so"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCCLAB_BENCH=OFF \
    >"$LOGS/cmake.log" 2>&1 || { tail -30 "$LOGS/cmake.log"; exit 2; }
  cmake --build build-gpu --target cclab_nccl >"$LOGS/build_shim.log" 2>&1 ||
    { grep -E "error|FAILED" -A3 "$LOGS/build_shim.log" | head -40; exit 2; }
  SHIM=$PWD/build-gpu/shim/libcclab_nccl.so
fi
[ -f "$SHIM" ] || { echo "shim_check: no shim library at $SHIM" >&2; exit 2; }
SHIM=$(readlink -f "$SHIM")
FAILED_RUNS=()
wrong=""
rows=0

if [ "$TORCH_ONLY" != 1 ]; then
stamp "building nccl-tests from $NCCL_TESTS_DIR"
NT_BUILD=${NT_BUILD:-/tmp/cclab_nccl_tests_build}
make_args=(-C "$NCCL_TESTS_DIR" -j "$(nproc)" BUILDDIR="$NT_BUILD" CUDA_HOME="$CUDA_HOME"
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90")
[ -n "${NCCL_HOME:-}" ] && make_args+=(NCCL_HOME="$NCCL_HOME")
make "${make_args[@]}" >"$LOGS/build_nccl_tests.log" 2>&1 ||
  { tail -30 "$LOGS/build_nccl_tests.log"; exit 2; }
[ -x "$NT_BUILD/all_reduce_perf" ] || { echo "shim_check: no all_reduce_perf in $NT_BUILD" >&2; exit 2; }
if ! ldd "$NT_BUILD/all_reduce_perf" | grep -q "libnccl"; then
  echo "shim_check: all_reduce_perf does not link libnccl dynamically: LD_PRELOAD cannot reach it" >&2
  exit 2
fi
ldd "$NT_BUILD/all_reduce_perf" | grep -E "nccl|cudart" | tee "$LOGS/ldd.txt"

# 2. the preload reaches the shim: its CCLAB_DEBUG lines appear (8 B and 1 MiB: ll and lamport sizes)
stamp "LD_PRELOAD check"
CCLAB_DEBUG=1 LD_PRELOAD="$SHIM" timeout 120 "$NT_BUILD/all_reduce_perf" -b 8 -e 1M -f 131072 -g "$NGPUS" -n 1 -w 1 \
  >"$LOGS/preload_check.log" 2>&1
if ! grep -q "^cclab: forwarding to the real NCCL" "$LOGS/preload_check.log" ||
  ! grep -q "^cclab: ncclAllReduce" "$LOGS/preload_check.log"; then
  echo "shim_check: the shim did not see the calls under LD_PRELOAD (see $LOGS/preload_check.log)" >&2
  tail -20 "$LOGS/preload_check.log" >&2
  exit 2
fi
grep "^cclab:" "$LOGS/preload_check.log" | sort | uniq -c | head -12
# The cclab path itself: one process driving $NGPUS GPUs (ncclCommInitAll) runs ll at 8 B and lamport at 1 MiB.
# A machine without P2P between its GPUs forwards instead (the setup line says why): recorded as a failure.
for want in "bytes=8 -> cclab (allreduce.bidir ll)" "bytes=1048576 -> cclab (allreduce.bidir lamport)"; do
  if ! grep -qF "dtype=float op=sum $want" "$LOGS/preload_check.log"; then
    echo "shim_check: no all-reduce took the route \"$want\" (see $LOGS/preload_check.log)"
    grep -E "^cclab: communicator|-> nccl" "$LOGS/preload_check.log" | sort | uniq -c | head -4
    FAILED_RUNS+=("route:${want// /_}")
  fi
done

# 3-4. the runs: name binary library(nccl|cclab) launch(eager|graph) extra args
run() {
  local name=$1 bin=$2 lib=$3 launch=$4
  shift 4
  if [ "$(left)" -lt 30 ]; then
    echo "## skipped (only $(left) s left): $name"
    FAILED_RUNS+=("$name:skipped")
    return
  fi
  local pre=()
  [ "$lib" = cclab ] && pre=(env LD_PRELOAD="$SHIM")
  [ "$lib" = cclab_disabled ] && pre=(env LD_PRELOAD="$SHIM" CCLAB_DISABLE=1)
  pre=(${PIN[@]+"${PIN[@]}"} ${pre[@]+"${pre[@]}"})
  local args=(-b 8 -e "$MAX_BYTES" -f 2 -g "$NGPUS" "$@")
  [ "$launch" = graph ] && args+=(-G "${GRAPH_LAUNCHES:-100}")
  [ -n "${ITERS:-}" ] && args+=(-n "$ITERS")
  stamp "$name: $bin ${args[*]} (${lib}${PIN_CPUS:+, CPUs $PIN_CPUS})"
  echo "$lib $launch $bin ${args[*]}" >"$LOGS/run_$name.log"
  local limit=$(($(left) - 10))
  [ "$limit" -gt 300 ] && limit=300
  ${pre[@]+"${pre[@]}"} timeout "$limit" "$NT_BUILD/$bin" "${args[@]}" >>"$LOGS/run_$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || FAILED_RUNS+=("$name:rc=$rc")
  grep -E "Out of bounds|Avg bus bandwidth" "$LOGS/run_$name.log" | sed "s/^/   /"
}
has_step allreduce && for launch in eager graph; do
  run "all_reduce_nccl_$launch" all_reduce_perf nccl $launch
  run "all_reduce_cclab_$launch" all_reduce_perf cclab $launch
done
# The other binaries run NCCL alone and through the shim alternately, REPEATS times each: their eager small
# sizes are bound by the host and move from run to run (shim_compare_others.py takes the medians).
# Each round after the first swaps which library runs first.
in_turn() {  # round, launch, binary, -G launches (graph runs)
  local i=$1 launch=$2 bin=$3 g=$4 first=nccl second=cclab lib
  [ $((i % 2)) -eq 0 ] && first=cclab second=nccl
  for lib in $first $second; do
    GRAPH_LAUNCHES=$g run "${bin%_perf}_${lib}_${launch}_$i" "$bin" "$lib" "$launch"
  done
}
has_step others && for b in all_gather reduce_scatter broadcast alltoall sendrecv; do
  for i in $(seq 1 "$REPEATS"); do in_turn "$i" eager "${b}_perf" 100; done
done
# Broadcast through the shim with CCLAB_DISABLE=1 (every call forwarded, nothing set up), between NCCL alone and
# the shim: whether a gap comes from the forwarding or from what the shim sets up at init.
has_step others && for i in $(seq 1 "$REPEATS"); do
  run "broadcast_cclab_disabled_eager_$i" broadcast_perf cclab_disabled eager
done
# The same binaries with their calls captured in CUDA graphs (-G 10: 200 calls a size), GRAPH_REPEATS (3) times each:
# the GPU's time. A process's level still moves by up to ~7% at small sizes (NCCL alone as much as through the shim:
# results/shim/h200x2/forwarded_graphs/), hence the medians of several runs.
has_step others_graph && for b in all_gather reduce_scatter broadcast alltoall sendrecv; do
  for i in $(seq 1 "${GRAPH_REPEATS:-3}"); do in_turn "$i" graph "${b}_perf" 10; done
done

if has_step allreduce || has_step others || has_step others_graph; then
# 5. the summary: nccl-tests' data rows are "size count type redop root" then time algbw busbw #wrong out of
# place, then the same in place
stamp "summary"
SUMMARY="$OUT/summary.csv"
echo "run,binary,library,launch,size,count,type,redop,root,oop_time_us,oop_algbw,oop_busbw,oop_wrong,ip_time_us,ip_algbw,ip_busbw,ip_wrong" >"$SUMMARY"
for log in "$LOGS"/run_*.log; do
  [ -f "$log" ] || continue
  name=$(basename "$log" .log)
  name=${name#run_}
  read -r lib launch bin _ <"$log"
  awk -v run="$name" -v bin="$bin" -v lib="$lib" -v launch="$launch" 'BEGIN { OFS = "," }
    $1 ~ /^[0-9]+$/ && NF >= 13 { print run, bin, lib, launch, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 }' \
    "$log" >>"$SUMMARY"
done
# NCCL alone against the shim, all_reduce_perf, per size and launch style (out of place)
COMPARE="$OUT/allreduce_compare.csv"
echo "launch,size,nccl_time_us,cclab_time_us,time_ratio,nccl_busbw,cclab_busbw,busbw_ratio" >"$COMPARE"
awk -F, 'NR > 1 && $2 == "all_reduce_perf" { key = $4 "," $5; t[$3, key] = $10; bw[$3, key] = $12; keys[key] = 1 }
  END {
    for (k in keys) if ((("nccl", k) in t) && (("cclab", k) in t)) {
      tr = t["nccl", k] > 0 ? t["cclab", k] / t["nccl", k] : 0
      br = bw["nccl", k] > 0 ? bw["cclab", k] / bw["nccl", k] : 0
      printf "%s,%s,%s,%.3f,%s,%s,%.3f\n", k, t["nccl", k], t["cclab", k], tr, bw["nccl", k], bw["cclab", k], br
    }
  }' "$SUMMARY" | sort -t, -k1,1 -k2,2n >>"$COMPARE"
tr , '\t' <"$COMPARE" | head -70  # (column(1) is not on every machine)
# The other binaries, size by size (median of the runs of each library)
python3 scripts/shim_compare_others.py "$SUMMARY" "$OUT/others_compare.csv" || FAILED_RUNS+=("others_compare")
# The same as a plot, where matplotlib is installed (scripts/setup.sh installs it; the GPU machines may lack it)
python3 scripts/plot_shim.py "$COMPARE" "$OUT/allreduce.png" || echo "no plot: plot_shim.py failed (is matplotlib installed?)"

wrong=$(awk -F, 'NR > 1 { w = 0; if ($13 ~ /^[0-9]+$/) w += $13; if ($17 ~ /^[0-9]+$/) w += $17; if (w > 0) print $1 " size " $5 ": #wrong " w }' "$SUMMARY")
rows=$(($(wc -l <"$SUMMARY") - 1))
stamp "nccl-tests done: $rows rows in $SUMMARY"
fi  # the summary
fi  # TORCH_ONLY

# 6. PyTorch, one process per GPU: NCCL alone, then through the shim's multi-process path
TORCH_WRONG=""
torch_step() {
  has_step torch || return
  stamp "PyTorch (torch.distributed, 2 processes)"
  if ! python3 -c "import torch" >/dev/null 2>&1; then
    echo "## torch step skipped: python3 cannot import torch"
    return
  fi
  # The NCCL torch loads: the nvidia-nccl wheel's (site-packages/nvidia/nccl/lib), else one beside torch's libraries.
  local tnccl
  tnccl=$(python3 -c '
import glob, os
c = []
try:
    import nvidia.nccl
    for p in nvidia.nccl.__path__:
        c += glob.glob(os.path.join(p, "lib", "libnccl.so*"))
except Exception:
    pass
import torch
c += glob.glob(os.path.join(os.path.dirname(torch.__file__), "lib", "libnccl*.so*"))
print(sorted(c)[0] if c else "")' 2>/dev/null)
  if [ -z "$tnccl" ]; then
    echo "## torch step: no libnccl beside torch (linked statically?): LD_PRELOAD cannot reach its NCCL calls"
    FAILED_RUNS+=("torch:no_libnccl")
    return
  fi
  echo "   torch's NCCL: $tnccl"
  local tout=$OUT/torch tmax=${TORCH_MAX:-64M} tdt=${TORCH_DTYPES:-float32,bfloat16,float16}
  mkdir -p "$tout"
  # The route: one small run with CCLAB_DEBUG=1 must set up the multi-process path and run ll and lamport.
  CCLAB_DEBUG=1 CCLAB_NCCL_LIB="$tnccl" LD_PRELOAD="$SHIM" timeout 300 \
    python3 scripts/torch_allreduce_check.py "$tout" --label debug --max 1M --dtypes float32 --iters 2 --reps 1 --warmup 1 \
    >"$LOGS/torch_debug.log" 2>&1 || FAILED_RUNS+=("torch_debug:rc=$?")
  grep -E "^cclab: (forwarding|communicator)" "$LOGS/torch_debug.log" | sort | uniq -c | head -6
  for want in "the others in other processes: cclab path ready" "dtype=float op=sum bytes=8 -> cclab (allreduce.bidir ll)" \
    "dtype=float op=sum bytes=1048576 -> cclab (allreduce.bidir lamport)"; do
    if ! grep -qF "$want" "$LOGS/torch_debug.log"; then
      echo "shim_check: torch run without \"$want\" (see $LOGS/torch_debug.log)"
      grep -E "^cclab: communicator|-> nccl" "$LOGS/torch_debug.log" | sort | uniq -c | head -4
      FAILED_RUNS+=("torch_route:${want// /_}")
    fi
  done
  local lib launch label
  for launch in ${TORCH_LAUNCH:-eager graph}; do
    local suffix="" gflag=()
    [ "$launch" = graph ] && suffix=_graph && gflag=(--graph)
    for lib in nccl shim; do
      label=$lib$suffix
      if [ "$(left)" -lt 60 ]; then
        echo "## skipped (only $(left) s left): torch $label"
        FAILED_RUNS+=("torch_$label:skipped")
        continue
      fi
      local limit=$(($(left) - 10))
      [ "$limit" -gt 300 ] && limit=300
      stamp "torch $lib, $launch: all-reduce 8 B - $tmax, $tdt"
      if [ "$lib" = shim ]; then
        CCLAB_NCCL_LIB="$tnccl" LD_PRELOAD="$SHIM" ${PIN[@]+"${PIN[@]}"} timeout "$limit" python3 scripts/torch_allreduce_check.py \
          "$tout" --label "$label" --max "$tmax" --dtypes "$tdt" ${gflag[@]+"${gflag[@]}"} >"$LOGS/torch_$label.log" 2>&1
      else
        ${PIN[@]+"${PIN[@]}"} timeout "$limit" python3 scripts/torch_allreduce_check.py "$tout" --label "$label" --max "$tmax" \
          --dtypes "$tdt" ${gflag[@]+"${gflag[@]}"} >"$LOGS/torch_$label.log" 2>&1
      fi
      local rc=$?
      [ $rc -eq 0 ] || FAILED_RUNS+=("torch_$label:rc=$rc")
      tail -2 "$LOGS/torch_$label.log" | sed "s/^/   /"
    done
    local a=$tout/torch_allreduce_nccl$suffix.csv b=$tout/torch_allreduce_shim$suffix.csv cmp=$tout/torch_compare$suffix.csv
    if [ -f "$a" ] && [ -f "$b" ]; then
      echo "size,dtype,nccl_time_us,shim_time_us,time_ratio,nccl_wrong,shim_wrong" >"$cmp"
      awk -F, 'FNR == 1 { next } NR == FNR { t[$1 "," $2] = $3; w[$1 "," $2] = $5; next }
        ($1 "," $2) in t { r = t[$1 "," $2] > 0 ? $3 / t[$1 "," $2] : 0
          printf "%s,%s,%s,%s,%.3f,%s,%s\n", $1, $2, t[$1 "," $2], $3, r, w[$1 "," $2], $5 }' "$a" "$b" >>"$cmp"
      echo "   $launch:"
      tr , '\t' <"$cmp" | head -80
    fi
  done
  TORCH_WRONG=$(awk -F, 'FNR > 1 && $5 > 0 { print FILENAME " size " $1 " " $2 ": wrong " $5 }' \
    "$tout"/torch_allreduce_*.csv 2>/dev/null)
}
torch_step

stamp "done"
if [ -n "$TORCH_WRONG" ]; then
  echo "torch: wrong elements:"
  echo "$TORCH_WRONG" | head -20
fi
if [ -n "$wrong" ]; then
  echo "#wrong not 0:"
  echo "$wrong" | head -20
fi
if [ ${#FAILED_RUNS[@]} -gt 0 ]; then echo "runs that failed or were skipped: ${FAILED_RUNS[*]}"; fi
[ -z "$wrong" ] && [ -z "$TORCH_WRONG" ] && [ ${#FAILED_RUNS[@]} -eq 0 ] && { [ "$rows" -gt 0 ] || ! { has_step allreduce || has_step others; }; }
