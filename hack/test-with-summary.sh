#!/usr/bin/env bash
# Runs a test command (the arguments), its whole output to the terminal and
# to LOG, and when it fails repeats the failures at the end: the FAIL lines
# and the tests' own messages (file.go:N: lines that are not klog's). A
# failed integration test prints every log line of its control plane, so
# its assertion sits thousands of lines from either end of the output, and
# what CI shows of a run (its head and tail) never held it.
set -uo pipefail
log=${LOG:?LOG names the file for the whole output}
mkdir -p "$(dirname "$log")"
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if (( rc != 0 )); then
	echo "=== failures (exit $rc; whole output in $log)"
	grep -E -e '^\s*--- FAIL|^(FAIL|panic:)' -e '^\s+[A-Za-z0-9_]+\.go:[0-9]+: ' "$log" |
		grep -v -E '\.go:[0-9]+: [IWEF][0-9]{4} [0-9:.]+\]' | head -n 80
fi
exit "$rc"
