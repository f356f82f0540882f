#!/usr/bin/env bash
# Fails when a C++/CUDA source is not clang-formatted (.clang-format at the root). Records under results/ are
# a run's output (a probe's generated source among them), not sources.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format not found, skipped"; exit 0; }
bad=0
while IFS= read -r f; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then echo "not formatted: $f"; bad=1; fi
done < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' ':!results/' 2>/dev/null)
[ $bad -eq 0 ] && echo "check_format: all sources formatted"
exit $bad
