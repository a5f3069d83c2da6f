#!/bin/sh
# test_man.sh: the man pages say what the command does, and render cleanly.
#
# - groff renders sandboxio(1), sandboxio-config(5) and libsandboxio(3)
#   with every warning on (-ww) and prints nothing;
# - for the main usage and for each command, the set of options named in
#   `sandboxio help COMMAND` and the set named in that command's section of
#   sandboxio(1) are equal (an option in one and not in the other fails);
# - every option the command accepts is in its --help, and every option its
#   --help names is accepted: each option named anywhere in the page is
#   given to each command as `--OPT=x --help`, which parses the options and
#   prints the usage without doing anything (DOCKER_HOST points at a socket
#   that does not exist, so nothing could reach a daemon anyway);
# - every key of docs/config.md's table is in sandboxio-config(5), and the
#   page's example is one of the examples docs/config.md has (which
#   test_core_config__docs_examples_parse parses).
#
# Usage: tests/pkg/test_man.sh [SANDBOXIO [MANDIR]]
#        (default build/sandboxio, and pages made from it by scripts/mkman.sh)
set -eu
cd "$(dirname "$0")/../.."
cli=${1:-build/sandboxio}
work=build/man-test
rm -rf "$work"
mkdir -p "$work"
man=${2:-}
if [ -z "$man" ]; then
	man=$work/man
	scripts/mkman.sh "$cli" "$("$cli" version | sed 's/^sandboxio //; s/ .*//')" "$man"
fi
fails=0
fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}
export DOCKER_HOST=unix://$PWD/$work/no-such.sock

# 1. groff, all warnings.
for p in sandboxio.1 sandboxio-config.5 libsandboxio.3; do
	if [ ! -f "$man/$p" ]; then
		fail "$man/$p is missing"
		continue
	fi
	LC_ALL=C.UTF-8 groff -ww -man -z -t "$man/$p" >"$work/groff.out" 2>&1 || true
	if [ -s "$work/groff.out" ]; then
		fail "groff -ww warns on $p: $(cat "$work/groff.out")"
	else
		echo "ok: $p renders without a warning"
	fi
done

# The options a text names, one a line, sorted.
opts() { grep -o -- '--[a-z][a-z0-9-]*' | sort -u; }
# The roff source of one part of sandboxio(1): "top" (up to COMMANDS) or a
# command's .SS section, with the escapes of minus signs and fonts undone.
section() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$man/sandboxio.1" | awk -v want="$1" '
		/^\.SH COMMANDS/ { top_done = 1 }
		want == "top" { if (!top_done) print; next }
		/^\.S[SH] / { on = ($0 == ".SS " want) ; next }
		on { print }'
}

# 2. --help and the page name the same options.
for c in top $(sh scripts/commands.sh "$cli" | grep -v -x -e version -e help); do
	case $c in
	top) "$cli" --help ;;
	*) "$cli" help "$c" ;;
	esac | opts >"$work/help.$c"
	name=$c
	[ "$c" != image ] || name="image build"
	section "$name" | opts >"$work/man.$c"
	if [ ! -s "$work/man.$c" ] && [ -s "$work/help.$c" ]; then
		fail "sandboxio.1 has no options for '$name'"
	elif ! diff -u "$work/help.$c" "$work/man.$c" >"$work/diff.$c"; then
		fail "'$name': --help (-) and sandboxio.1 (+) differ: $(grep '^[-+]-' "$work/diff.$c" | tr '\n' ' ')"
	else
		echo "ok: $name: $(wc -l <"$work/help.$c") options, the same in --help and sandboxio.1"
	fi
done

# 3. What each command accepts is what its --help documents: the options of
# its usage lines, of its option list (a line that starts with one), and of
# a line that starts "global options" (serve's); not those its prose only
# mentions ("'sandboxio config --effective' shows what applies").
documented() {
	awk 'NR == 1 { usage = 1 }
		usage && /^$/ { usage = 0 }
		usage { print; next }
		/^  -/ { print $1; next }
		/^global options/ { print }' | opts
}
cat "$work"/man.* | sort -u | grep -vx -- '--help' >"$work/all"
before=$fails
for c in top $(sh scripts/commands.sh "$cli" | grep -v -x -e version -e help); do
	case $c in
	top) "$cli" --help ;;
	*) "$cli" help "$c" ;;
	esac | documented >"$work/doc.$c"
	case $c in
	top) set -- ;;
	image) set -- image build ;;
	*) set -- "$c" ;;
	esac
	while read -r o; do
		rc=0
		out=$("$cli" "$@" "$o=x" --help 2>&1 </dev/null) || rc=$?
		# accepted: the usage printed (exit 0), or a flag's "takes no value"
		# (exit 125); refused: "unknown option" (exit 125); anything else
		# (a crash, a sanitizer's report) fails
		case $rc:$out in
		125:*"unknown option $o"*) accepted=0 ;;
		0:*usage:* | 125:*"option $o takes no value"*) accepted=1 ;;
		*)
			fail "'${*:-sandboxio} $o=x --help' exits $rc: $out"
			continue
			;;
		esac
		if grep -qx -- "$o" "$work/doc.$c"; then
			[ "$accepted" = 1 ] || fail "'${*:-sandboxio}': --help documents $o, which it refuses: $out"
		else
			[ "$accepted" = 0 ] || fail "'${*:-sandboxio}' accepts $o, which its --help does not document"
		fi
	done <"$work/all"
done
[ "$fails" -ne "$before" ] ||
	echo "ok: each command accepts exactly the options its --help documents (of $(wc -l <"$work/all") names)"

# 4. sandboxio-config(5) and docs/config.md.
grep -o '^| `[a-z_]*\.[a-z_]*`' docs/config.md | sed 's/^| `//; s/`$//' | sort -u >"$work/keys"
sed -e 's/\\-/-/g' "$man/sandboxio-config.5" >"$work/config5"
missing=""
while read -r k; do
	grep -q -- "$k" "$work/config5" || missing="$missing $k"
done <"$work/keys"
if [ -z "$missing" ]; then
	echo "ok: the $(wc -l <"$work/keys") keys of docs/config.md are in sandboxio-config(5)"
else
	fail "sandboxio-config(5) lacks keys of docs/config.md:$missing"
fi
awk '/^\.SH EXAMPLE/ { ex = 1 } ex && /^\.nf/ { on = 1; next } on && /^\.fi/ { exit } on' \
	"$man/sandboxio-config.5" >"$work/example.json"
python3 - "$work/example.json" docs/config.md <<'PY' || fail "the example of sandboxio-config(5) is not one of docs/config.md's"
import json, re, sys
ex = json.load(open(sys.argv[1]))
docs = re.findall(r"^```json\n(.*?)^```", open(sys.argv[2]).read(), re.S | re.M)
sys.exit(0 if any(json.loads(d) == ex for d in docs) else 1)
PY
echo "ok: the example of sandboxio-config(5) is one of docs/config.md's"

if [ "$fails" -ne 0 ]; then
	echo "test_man: $fails failure(s)" >&2
	exit 1
fi
echo "test_man: all passed"
