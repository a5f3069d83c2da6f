#!/bin/sh
# check-sizes.sh: no source file of the project (tests and benchmarks aside)
# over 1,000 lines, and no function over 120 lines unless the comment just
# above it says why it stays one ("One function on purpose"). A function is
# read as the project's style writes it: its opening brace and its closing
# brace alone on a line, at the first column.
set -eu
cd "$(dirname "$0")/.."
bad=0
for f in $(git ls-files '*.c' '*.h' | grep -v '^tests/\|^bench/'); do
	n=$(wc -l <"$f")
	if [ "$n" -gt 1000 ]; then
		echo "check-sizes: $f has $n lines (at most 1000): split it along its concerns"
		bad=1
	fi
	awk -v f="$f" '
		/^\/\*/ { cstart = NR; ctext = "" }
		cstart { ctext = ctext $0 "\n" }
		/\*\// && cstart { cend = NR; ccopy = ctext; cstart = 0 }
		/^\{$/ { start = NR; why = (cend && NR - cend <= 12 && ccopy ~ /One function on purpose/) }
		/^\}/ && start {
			if (NR - start > 120 && !why) {
				printf "check-sizes: %s:%d: a function of %d lines with no comment saying why it stays one\n", f, start, NR - start
				bad = 1
			}
			start = 0
		}
		END { exit bad }' "$f" || bad=1
done
[ "$bad" -eq 0 ] || exit 1
echo "check-sizes: no file over 1000 lines, every function over 120 lines says why"
