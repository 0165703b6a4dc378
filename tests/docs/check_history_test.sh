#!/usr/bin/env bash
# tests/docs/check_history_test.sh: the history check refuses each kind of history word in a
# page, naming the line, and passes the same page once it speaks of today.
set -euo pipefail
check=$(cd "$(dirname "$0")" && pwd)/check_history.py
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/docs"
printf '%s\n' '# hvdrun' "hvdrun starts ranks. A helper is us""ed to parse lines." >"$tree/README.md"
printf 'The ring moves data.\n' >"$tree/docs/runtime.md"
python3 "$check" "$tree" >"$tree/out" || { echo "a page of today was refused:"; cat "$tree/out"; exit 1; }
# Each word in two pieces, so that this script passes the project's own history checks.
printf '%s\n' "Befo""re, the ring copied twice." "It us""ed to blame rank 0." "Found in the twelfth ses""sion." \
  "Fixed by com""mit 8dc3683." "See iss""ue 23's targets." >>"$tree/docs/runtime.md"
if python3 "$check" "$tree" >"$tree/out"; then
  echo "history words passed"
  exit 1
fi
for expected in "docs/runtime.md:2: a sentence telling what the program did (" \
                "docs/runtime.md:3: a sentence telling what the program did once" "docs/runtime.md:4: a work session" \
                "docs/runtime.md:5: a commit hash" "docs/runtime.md:6: an issue number"; do
  grep -qF "$expected" "$tree/out" || { echo "missing: $expected"; cat "$tree/out"; exit 1; }
done
echo "check_history refuses each history word"
