#!/bin/sh
# fuzz-cpu.sh: runs one libFuzzer target until it has used a budget of CPU
# time (user + system, every thread of the process), not of wall time, so
# that a run shares a busy machine and still fuzzes as long as it claims.
# Then merges what it found into the committed corpus and prints a summary.
#
# Usage: scripts/fuzz-cpu.sh NAME [CPU_SECONDS]   (default 900)
# Needs build/fuzz/fuzz_NAME (make build/fuzz/fuzz_NAME). Working files go to
# build/fuzz/long/NAME/ (the grown corpus, the log); a crash, leak or timeout
# is saved as build/fuzz/long/NAME/crash-* and ends the run with status 1.
#
# The summary line: target, executions, cov, ft, CPU seconds, wall seconds,
# files merged into tests/fuzz/corpus/NAME, new features and edges of the merge.
set -eu
cd "$(dirname "$0")/.."
name=$1
budget=${2:-900}
bin=build/fuzz/fuzz_$name
[ -x "$bin" ] || { echo "fuzz-cpu: $bin is not built (make $bin)" >&2; exit 2; }
case $budget in '' | *[!0-9]*) echo "fuzz-cpu: CPU seconds must be a number" >&2; exit 2 ;; esac
out=build/fuzz/long/$name
mkdir -p "$out/corpus"
log=$out/fuzz.log
dict=
[ ! -f "tests/fuzz/$name.dict" ] || dict=-dict=tests/fuzz/$name.dict
hz=$(getconf CLK_TCK)
start=$(date +%s)

# A wall bound far above the budget keeps a stopped watcher from leaving
# the target running for ever; the CPU budget is what ends the run.
"$bin" -max_total_time=$((budget * 20)) -max_len=300000 -print_final_stats=1 \
	-artifact_prefix="$out/" $dict "$out/corpus" "tests/fuzz/corpus/$name" >"$log" 2>&1 &
pid=$!

cpu_of() { # utime + stime of the whole process, in seconds
	awk -v hz="$hz" '{ sub(/^.*\) /, ""); print int(($12 + $13) / hz) }' "/proc/$1/stat" 2>/dev/null
}
cpu=0
while kill -0 "$pid" 2>/dev/null; do
	c=$(cpu_of "$pid") || break
	[ -z "$c" ] || cpu=$c
	if [ "$cpu" -ge "$budget" ]; then
		kill -INT "$pid" 2>/dev/null || true
		break
	fi
	sleep 5 # how often the budget is looked at, not a guess at any speed
done
rc=0
wait "$pid" || rc=$?
wall=$(($(date +%s) - start))
# libFuzzer ends an interrupted run with its own status; only an artifact
# (crash-, leak-, timeout-, oom-) means it found something.
found=
for a in "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-*; do
	[ ! -e "$a" ] || found=$a
done
if [ -n "$found" ]; then
	echo "fuzz-cpu: $name found an input that fails; see $out/ and $log" >&2
	tail -40 "$log" >&2
	exit 1
fi
if [ "$rc" -ne 0 ] && ! grep -q 'run interrupted' "$log" && ! grep -q '^Done' "$log"; then
	echo "fuzz-cpu: $name ended with status $rc; see $log" >&2
	tail -20 "$log" >&2
	exit 1
fi
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
last=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')

before=$(ls "tests/fuzz/corpus/$name" | wc -l)
"$bin" -merge=1 -max_len=300000 $dict "tests/fuzz/corpus/$name" "$out/corpus" >"$out/merge.log" 2>&1 || {
	echo "fuzz-cpu: the merge of $name failed; see $out/merge.log" >&2
	exit 1
}
after=$(ls "tests/fuzz/corpus/$name" | wc -l)
feat=$(sed -n 's/.*new files with \([0-9]*\) new features.*/\1/p' "$out/merge.log" | tail -1)
edges=$(sed -n 's/.*; \([0-9]*\) new coverage edges.*/\1/p' "$out/merge.log" | tail -1)
echo "$name execs=${execs:-?} cov=${cov:-?} ft=${ft:-?} cpu_s=$cpu wall_s=$wall merged_files=$((after - before)) new_features=${feat:-0} new_edges=${edges:-0}"
