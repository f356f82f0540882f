#!/usr/bin/env bash
# Set up, build, and pass the tests: what CI runs (.ci/run). Steps, each failing the run when it fails:
#   1. set-up (scripts/setup.sh), configure and build (exec/ too when nvcc is present)
#   2. clang-format check of every C++/CUDA source
#   3. every test (ctest); tests labelled `gpu` skip with a message where no GPU is present; then the Python
#      package's tests (pytest python/tests: the package setup.sh installed, against the binary built here)
#   4. the CPU suite again under AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh)
#   5. the fuzz smoke run of every parser (scripts/fuzz_smoke.sh)
#   6. the notebooks, executed (scripts/run_notebooks.sh), and the package's benchmark (numbers recorded in
#      build/python_package.txt, not asserted)
#   7. every committed GPU record in the folder of the machine it was measured on (scripts/check_device.py),
#      and prediction against them (cclab compare)
# QUICK=1 stops after step 3.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { echo; echo "== test.sh: $1 ($(($(date +%s) - start)) s)"; }

step "set-up"
bash scripts/setup.sh
step "build"
cmake --preset default >/dev/null
cmake --build --preset default
step "format"
bash scripts/check_format.sh
step "tests"
# The tests' scratch files in a folder of this run: another run at the same time (a CI clone beside a checkout)
# writes the same names.
TMPDIR=$(mktemp -d)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
ctest --preset default -j "$(nproc)"
step "python tests"
# pytest exits 5 when it collected no test: a failure here, like any other non-zero exit.
rc=0
CCLAB_BIN=$PWD/build/cli/cclab "${PYTHON:-python3}" -m pytest -q -p no:cacheprovider python/tests || rc=$?
if [ $rc -ne 0 ]; then
  echo "test.sh: pytest failed (exit $rc$([ $rc -eq 5 ] && echo ': no test collected'))"
  exit 1
fi
[ "${QUICK:-0}" = 1 ] && exit 0

step "sanitizers"
bash scripts/sanitize.sh
step "fuzz smoke"
FUZZ_SECONDS=${FUZZ_SECONDS:-20} bash scripts/fuzz_smoke.sh
step "notebooks"
bash scripts/run_notebooks.sh
step "package benchmark"
"${PYTHON:-python3}" python/benchmarks/bench_package.py --cli build/cli/cclab --repeat 1 --out build/python_package.txt
step "compare"
for d in results/*/; do  # the GPU machines' folders (<model>x<count>[_<variant>]), not the simulator's results/sim
  [[ $(basename "$d") =~ ^[a-z]+[0-9]+x[0-9]+(_.*)?$ ]] || continue
  if compgen -G "$d*.csv" >/dev/null; then python3 scripts/check_device.py "$d" "$d"*.csv; fi
done
mkdir -p build/compare
for d in results/h200x2 results/h200x2_repeat results/h200x2_fresh results/h200x2_estimate; do  # other calls' records, the first call's profile
  compgen -G "$d/*.csv" >/dev/null || continue
  ./build/cli/cclab compare --measured "$d" --topo profiles/h200x2.json --csv "build/compare/$(basename "$d").csv"
done
# 4 GPUs: from the 2-GPU profile on the HGX H200 preset, and from the 4-GPU profile of the same call
if compgen -G "results/h200x4/*.csv" >/dev/null; then
  ./build/cli/cclab compare --measured results/h200x4 --topo hgx-h200 --profile profiles/h200x2.json \
    --csv build/compare/h200x4.csv
  ./build/cli/cclab compare --measured results/h200x4 --topo profiles/h200x4.json --csv build/compare/h200x4_own.csv
  # another call's records, the first call's profile
  [ -d results/h200x4_repeat ] && ./build/cli/cclab compare --measured results/h200x4_repeat \
    --topo profiles/h200x4.json --csv build/compare/h200x4_repeat.csv
fi
if compgen -G "results/h100x4/*.csv" >/dev/null; then
  ./build/cli/cclab compare --measured results/h100x4 --topo profiles/h100x4.json --csv build/compare/h100x4.csv
  [ -d results/h100x4_fresh ] && ./build/cli/cclab compare --measured results/h100x4_fresh \
    --topo profiles/h100x4.json --csv build/compare/h100x4_fresh.csv
  [ -f profiles/h100x2.json ] && ./build/cli/cclab compare --measured results/h100x4 --topo dgx-h100 \
    --profile profiles/h100x2.json --csv build/compare/h100x4_from_h100x2.csv
  [ -f profiles/h100x2.json ] && [ -d results/h100x4_fresh ] && ./build/cli/cclab compare \
    --measured results/h100x4_fresh --topo dgx-h100 --profile profiles/h100x2.json \
    --csv build/compare/h100x4_fresh_from_h100x2.csv
fi
# Another GPU: 2 x H100 from its own profile, and from the 2 x H200 profile on the DGX H100 preset
if compgen -G "results/h100x2/*.csv" >/dev/null; then
  ./build/cli/cclab compare --measured results/h100x2 --topo profiles/h100x2.json --csv build/compare/h100x2.csv
  ./build/cli/cclab compare --measured results/h100x2 --topo dgx-h100 --profile profiles/h200x2.json \
    --csv build/compare/h100x2_from_h200x2.csv
  [ -d results/h100x2_repeat ] && ./build/cli/cclab compare --measured results/h100x2_repeat \
    --topo profiles/h100x2.json --csv build/compare/h100x2_repeat.csv
  # and the reverse: 2 x H200 from the 2 x H100 profile on the 2 x H200 preset
  ./build/cli/cclab compare --measured results/h200x2 --topo h200x2 --profile profiles/h100x2.json \
    --csv build/compare/h200x2_from_h100x2.csv
fi
step "done"
