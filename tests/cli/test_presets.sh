#!/bin/bash
# tests/cli/test_presets.sh: --allow-preset on the command line:
# `sandboxio config --effective` shows the names a preset expands to (each as
# --allow-host would add it, a wildcard by the names the preset file pins for
# it), an unknown preset exits 125 naming the presets there are, create's and
# run's --help list the option, and a narrowing config's egress.presets
# permits exactly its presets' names. Then, against dockerd (root, IPv4
# forwarding, as the allowlist needs), a run with --allow-preset pins each
# of the preset's names from a hosts file, exactly as --allow-host does; the
# program only reads /etc/hosts, nothing is sent, and the addresses are
# canary ones. Every sandbox is made under the tenant cli-presets-$$ and
# none may be left.
#
# The last line is "N passed, N failed".
set -u

T=cli-presets-$$
WORK_NAME=sbx-presets-test
BAD_SHOWS=cli
. "$(dirname "$0")/lib.sh"

# cli ARGS...: runs the command; rc, output in $work/out and $work/err.
cli() {
	rc=0
	"$CLI" "$@" >"$work/out" 2>"$work/err" || rc=$?
}

# allow EXPECTED: effective.allow of $work/out, comma-joined, is EXPECTED.
allow() {
	[ "$(python3 -c 'import json,sys; print(",".join(json.load(open(sys.argv[1]))["effective"]["allow"]["value"]))' "$work/out" 2>/dev/null)" = "$1" ]
}

cli config --effective --allow-preset pypi
[ $rc -eq 0 ] && allow "pypi.org:443,files.pythonhosted.org:443" &&
	ok "--allow-preset pypi: its two names, port 443" || bad "--allow-preset pypi"

cli config --effective --allow-host github.com:443 --allow-preset github --allow-cidr 198.51.100.0/24
[ $rc -eq 0 ] && allow "github.com:443,api.github.com:443,codeload.github.com:443,raw.githubusercontent.com:443,objects.githubusercontent.com:443,release-assets.githubusercontent.com:443,198.51.100.0/24" &&
	ok "--allow-preset github: in order, a repeat once, the wildcard by its pinned names" ||
	bad "--allow-preset github"

cli config --effective --allow-preset debian
[ $rc -eq 0 ] && allow "deb.debian.org:80,deb.debian.org:443,security.debian.org:80,security.debian.org:443" &&
	ok "--allow-preset debian: http and https" || bad "--allow-preset debian"

cli run --allow-preset nosuch -- true
[ $rc -eq 125 ] && grep -q "allow_preset 'nosuch': no such preset (there are: pypi, npm, crates, debian, github)" "$work/err" &&
	ok "--allow-preset nosuch: exit 125 naming the presets" || bad "--allow-preset nosuch"

cli --json create --allow-preset PyPI
[ $rc -eq 125 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["status"]=="error" and "no such preset" in d["error"] and d["code"]==-2))' "$work/out" &&
	ok "--json create --allow-preset PyPI: error object (names are lower case)" ||
	bad "--json --allow-preset"

for c in run create run-code; do
	cli $c --help
	if [ $rc -eq 0 ] && grep -q -- "--allow-preset NAME" "$work/out"; then
		ok "$c --help lists --allow-preset"
	else
		bad "$c --help"
	fi
done

printf '{"egress": {"presets": ["pypi"]}}\n' >"$work/narrow.json"
cli --config "$work/narrow.json" config --effective --allow-preset pypi
[ $rc -eq 0 ] && allow "pypi.org:443,files.pythonhosted.org:443" &&
	ok "a config's egress.presets permits its preset" || bad "egress.presets permits"
cli --config "$work/narrow.json" config --effective --allow-preset npm
[ $rc -eq 125 ] && grep -q "registry.npmjs.org" "$work/err" &&
	ok "a config's egress.presets permits no other preset" || bad "egress.presets refuses"
printf '{"egress": {"presets": ["nosuch"]}}\n' >"$work/bad.json"
cli --config "$work/bad.json" config --effective
[ $rc -eq 125 ] && grep -q 'egress.presets\[0\].*unknown preset "nosuch"' "$work/err" &&
	ok "a config naming an unknown preset is refused" || bad "egress.presets unknown"

if [ "$(id -u)" -eq 0 ] && [ "$(cat /proc/sys/net/ipv4/ip_forward)" = 1 ]; then
	# pypi's names on canary addresses (never contacted), and one name more.
	printf '198.18.201.1 pypi.org\n198.18.201.2 files.pythonhosted.org\n198.18.201.3 evil.example\n' \
		>"$work/hosts"
	cli --hosts-file "$work/hosts" run --tenant "$T" --allow-preset pypi -- cat /etc/hosts
	[ $rc -eq 0 ] && grep -q "^198\.18\.201\.1[[:space:]]*pypi\.org" "$work/out" &&
		grep -q "^198\.18\.201\.2[[:space:]]*files\.pythonhosted\.org" "$work/out" &&
		! grep -q "evil.example" "$work/out" &&
		[ -z "$(docker ps -aq --filter "label=io.sandboxio.tenant=$T")" ] &&
		ok "run --allow-preset pypi: both names pinned from the hosts file, no other, nothing left" ||
		bad "run --allow-preset pinned"
	cli --hosts-file "$work/hosts" run --tenant "$T" --allow-preset npm -- true
	[ $rc -eq 125 ] && grep -q "registry.npmjs.org: the name has no address in the hosts file" "$work/err" &&
		[ -z "$(docker ps -aq --filter "label=io.sandboxio.tenant=$T")" ] &&
		ok "run --allow-preset npm: a name without an address refuses the create, no container" ||
		bad "run --allow-preset npm unresolved"
else
	bad "the allowlist cases need root and IPv4 forwarding (uid $(id -u))"
fi

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
