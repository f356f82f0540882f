#!/usr/bin/env bash
# Executes every notebook under notebooks/ with nbclient (what CI runs, so they never rot). The committed
# notebooks stay clean: executed copies go to $OUT (default: a temporary folder, removed unless KEEP=1).
# The notebooks import the cclab package (pip install ., which scripts/setup.sh runs).
#   scripts/run_notebooks.sh [notebook.ipynb ...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c "import cclab" 2>/dev/null; then
  echo "run_notebooks: the cclab package is not installed for $PY: run scripts/setup.sh (or pip install .)" >&2
  exit 1
fi
CREATED=""
if [ -z "${OUT:-}" ]; then OUT=$(mktemp -d -t cclab_notebooks.XXXXXX); CREATED=1; fi
mkdir -p "$OUT"
TIMEOUT=${TIMEOUT:-120}  # per cell, seconds
if [ $# -gt 0 ]; then books=("$@"); else books=(notebooks/*.ipynb); fi

rc=0
"$PY" - "$OUT" "$TIMEOUT" "${books[@]}" <<'EOF' || rc=$?
import os, sys, time
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

out, timeout, books = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
failed = 0
for path in books:
    t0 = time.time()
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})
    try:
        client.execute()
        status = "ok"
    except CellExecutionError as e:
        failed += 1
        status = "FAILED\n" + str(e).strip().splitlines()[-1]
    dest = os.path.join(out, os.path.basename(path))
    nbformat.write(nb, dest)
    print(f"run_notebooks: {path}: {status} ({time.time() - t0:.1f} s; executed copy {dest})")
sys.exit(1 if failed else 0)
EOF
if [ -n "$CREATED" ] && [ "${KEEP:-0}" != 1 ]; then rm -rf "$OUT"; fi
exit $rc
