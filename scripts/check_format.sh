#!/usr/bin/env bash
# The formatter check of the C++/CUDA sources against .clang-format (Google-based, 120 columns).
#
#   scripts/check_format.sh          list the files clang-format would change; exit 1 if any
#   scripts/check_format.sh --fix    format them in place (once, by the lead, after merging)
#   scripts/check_format.sh FILE...  check only these files
#
# Part of CI (.ci/run), after the whole tree was formatted once when the parallel branches of
# issues #16, #19 and #20 were merged. scripts/setup.sh installs clang-format (Debian's
# 12, version 14). The output depends on the clang-format version: Debian 12's clang-format 14 is the
# reference (clang-format-14 is preferred where several are installed).
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
if [[ "${1:-}" == "--fix" ]]; then
  fix=1
  shift
fi
cf=""
for c in clang-format-14 clang-format; do
  if command -v "$c" > /dev/null; then
    cf=$c
    break
  fi
done
if [[ -z "$cf" ]]; then
  echo "check_format: no clang-format found (Debian: apt-get install clang-format)" >&2
  exit 2
fi
if [[ $# -gt 0 ]]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files '*.h' '*.hpp' '*.c' '*.cpp' '*.cu' '*.cuh')
fi
echo "check_format: $($cf --version) on ${#files[@]} files"
if [[ $fix == 1 ]]; then
  "$cf" --style=file -i "${files[@]}"
  echo "check_format: formatted"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! "$cf" --style=file "$f" | cmp -s - "$f"; then bad+=("$f"); fi
done
if [[ ${#bad[@]} -gt 0 ]]; then
  printf 'check_format: not formatted: %s\n' "${bad[@]}" >&2
  echo "check_format: ${#bad[@]} file(s) differ from .clang-format (scripts/check_format.sh --fix formats them)" >&2
  exit 1
fi
echo "check_format: every file is formatted"
