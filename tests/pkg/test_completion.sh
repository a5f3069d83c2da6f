#!/bin/sh
# test_completion.sh: the bash completion offers each command's options.
#
# Generates the completion (scripts/mkcompletion.sh), loads it into bash and
# completes `sandboxio CMD --` for every command: the words offered must be
# the options that the command's --help documents and accepts (the set
# test_man.sh checks against the parser), with --help. Also: the commands
# after `sandboxio`, a global option's value skipped when finding the
# command, and the fixed values of --backend.
#
# Usage: tests/pkg/test_completion.sh [SANDBOXIO]   (default build/sandboxio)
set -eu
cd "$(dirname "$0")/../.."
cli=${1:-build/sandboxio}
work=build/completion-test
rm -rf "$work"
mkdir -p "$work"
scripts/mkcompletion.sh "$cli" "$work/sandboxio.bash"
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# complete WORD...: what bash offers for the last word of "sandboxio WORD...".
complete_words() {
	bash -c '. "$1"; shift; COMP_WORDS=(sandboxio "$@"); COMP_CWORD=$#; _sandboxio
		printf "%s\n" "${COMPREPLY[@]}" | sort -u | tr "\n" " "' sh "$work/sandboxio.bash" "$@"
}
documented() {
	awk 'NR == 1 { usage = 1 }
		usage && /^$/ { usage = 0 }
		usage { print; next }
		/^  -/ { print $1; next }
		/^global options/ { print }' | grep -o -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' '
}

for c in $(sh scripts/commands.sh "$cli" | grep -v -x -e version -e help); do
	set -- "$c"
	[ "$c" != image ] || set -- image build
	want=$({
		"$cli" help "$c"
		echo "  --help"
	} | documented)
	got=$(complete_words "$@" --)
	[ "$got" = "$want" ] && echo "ok: '$*' completes its $(echo "$want" | wc -w) options" ||
		fail "'$*' completes '$got', its --help documents '$want'"
done
got=$(complete_words "")
for c in $(sh scripts/commands.sh "$cli"); do
	case " $got " in *" $c "*) ;; *) fail "'sandboxio ' does not offer $c: $got" ;; esac
done
got=$(complete_words --socket /x re)
[ "$got" = "reap " ] && echo "ok: a global option's value is not taken for the command" ||
	fail "'sandboxio --socket /x re' completes '$got'"
got=$(complete_words --socket /x reap --dr)
[ "$got" = "--dry-run " ] || fail "'sandboxio --socket /x reap --dr' completes '$got'"
got=$(complete_words --backend "")
[ "$got" = "docker e2b modal " ] || fail "--backend completes '$got'"

if [ "$fails" -ne 0 ]; then
	echo "test_completion: $fails failure(s)" >&2
	exit 1
fi
echo "test_completion: all passed"
