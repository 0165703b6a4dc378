#!/usr/bin/env bash
# tests/support/failures_first.sh: sourced by the testbeds. failures_first CMD... runs a
# Catch test program and, when it fails, prints each failed assertion with its test case's
# name before the program's whole output. A cluster suite prints hundreds of lines, and CI
# logs keep the start of a failed test's output and its end, not the middle where Catch
# reported the failure. On a terminal the output streams as usual. A program still running
# after HVD_FAILURES_FIRST_LIMIT seconds (540: below CTest's 600 for the cluster suites, whose
# kill would lose what was held back) is stopped and its last lines go first.

failures_first() {
  if [[ -t 1 ]]; then
    "$@"
    return
  fi
  local log rc=0
  log=$(mktemp /tmp/hvd-failures-first.XXXXXX)
  local limit=${HVD_FAILURES_FIRST_LIMIT:-540}
  timeout -k 10 "$limit" "$@" > "$log" 2>&1 || rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "failures first (the whole output follows):"
    if [[ $rc -eq 124 || $rc -eq 137 ]]; then
      echo "  still running after $limit s: stopped; the last lines:"
      tail -n 5 "$log" | sed 's/^/    /'
    fi
    # Catch's console reporter: a case's name between two dashed rules, then each failure as
    # "file:line: FAILED:" followed by the expression and its expansion.
    awk '
      length($0) == 79 && /^-+$/ { rule++; if (rule % 2 == 1) { name = ""; getline; name = $0 } ; next }
      / FAILED:$/ { print "  " name; print "    " $0; shown = 4; next }
      shown > 0 { print "    " $0; shown-- }
    ' "$log"
    if [[ $rc -ne 124 && $rc -ne 137 ]] && ! grep -q " FAILED:$" "$log"; then
      echo "  no failed assertion: exit code $rc; the last lines:"
      tail -n 5 "$log" | sed 's/^/    /'
    fi
    echo
  fi
  cat "$log"
  rm -f "$log"
  return "$rc"
}
