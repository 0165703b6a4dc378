#!/usr/bin/env bash
# tests/layering/check_layers_test.sh: the layering check fails on an upward include, a
# sideways one and a file in no room, naming each, and passes on a tree that keeps its floors.
set -euo pipefail
check=$(cd "$(dirname "$0")" && pwd)/check_layers.py
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/docs" "$tree/cli/top" "$tree/cli/side" "$tree/cli/low" "$tree/cli/stray"
cat >"$tree/docs/architecture.md" <<'DOC'
<!-- floors -->
| floor | rooms | what |
|---|---|---|
| 3 | `cli/top/`, `cli/side/` | two rooms on one floor |
| 1 | `cli/low/` | the floor |
<!-- /floors -->
DOC
printf '#include "cli/low/base.h"\n#include "cli/top/a.h"\n' >"$tree/cli/top/a.cc"
printf '#pragma once\n' >"$tree/cli/top/a.h"
printf '#pragma once\n' >"$tree/cli/low/base.h"
printf '#pragma once\n' >"$tree/cli/side/b.h"
python3 "$check" "$tree" >"$tree/out" || { echo "a tree keeping its floors was refused:"; cat "$tree/out"; exit 1; }

printf '#include "cli/top/a.h"\n' >"$tree/cli/low/base.cc"
printf '#include "cli/side/b.h"\n' >"$tree/cli/top/c.cc"
printf '#include <vector>\n' >"$tree/cli/stray/d.cc"
if python3 "$check" "$tree" >"$tree/out"; then
  echo "upward and sideways includes passed"
  exit 1
fi
expect() {
  grep -qF "$1" "$tree/out" || { echo "missing: $1"; cat "$tree/out"; exit 1; }
}
expect 'cli/low/base.cc:1: includes cli/top/a.h upward (cli/low/ is on floor 1, cli/top/ on floor 3)'
expect 'cli/top/c.cc:1: includes cli/side/b.h sideways (cli/top/ and cli/side/ share floor 3)'
expect 'cli/stray/d.cc: in no room of docs/architecture.md'
echo "check_layers: refuses what it should"
