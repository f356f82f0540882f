#!/usr/bin/env bash
# Refits every committed profile from its raw samples (profiles/NAME.measurements.json), with no GPU: after a
# change to what the profile keeps or how a term is fitted. The samples are left as they are; each profile
# keeps the machine, date and commit of the device call that measured them.
#   bash scripts/refit_profiles.sh            (build/cli/cclab, or $CCLAB)
set -euo pipefail
CCLAB=${CCLAB:-build/cli/cclab}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for samples in profiles/*.measurements.json; do
  name=$(basename "$samples" .measurements.json)
  [ -f "profiles/$name.json" ] || continue
  topo=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["topology"])' "profiles/$name.json")
  "$CCLAB" calibrate --from "$samples" --topo "$topo" --name "$name" --out "$tmp/$name.json" \
    --measurements "$tmp/$name.measurements.json" > "$tmp/$name.log"
  mv "$tmp/$name.json" "profiles/$name.json"
  echo "profiles/$name.json: $(python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); print(len(p["params"]), "parameters,", len(p["tables"]), "tables")' "profiles/$name.json")"
done
