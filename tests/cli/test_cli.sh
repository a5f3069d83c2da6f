#!/bin/bash
# tests/cli/test_cli.sh: the sandboxio command against the real dockerd.
#
# Runs $SBX_CLI (default build/sandboxio) end to end: exit statuses, output,
# --json, option errors, the egress allowlist options, the create/exec/ls/rm
# round trip, output caps, lifetimes, reap, doctor, the operator config
# (--config, $SANDBOXIO_CONFIG, config --effective), secrets and redaction,
# the audit log, TRACEPARENT (against a small OTLP receiver), and teardown on
# a signal or after kill -9. Every sandbox is
# made under a tenant cli-test-$$ or cli-test-$$-NAME, and at the end none of
# those may be left. The docker CLI is used only to look (docker ps, docker
# top, docker inspect, docker events) and, if a test failed, to remove what
# is left of this run's tenants.
#
# Needs dockerd and the image sandboxio/python:3.11. The last line is
# "N passed, N failed"; the exit status is non-zero when anything failed.
set -u

T=cli-test-$$
WORK_NAME=sbx-cli-test
BAD_SHOWS=cli
. "$(dirname "$0")/lib.sh"
tenants=$T

# cli ARGS...: runs the command; sets rc and secs, output in $work/out and $work/err.
cli() {
	local t0 t1
	t0=$(date +%s%N)
	"$CLI" "$@" >"$work/out" 2>"$work/err" </dev/null
	rc=$?
	t1=$(date +%s%N)
	secs=$(((t1 - t0) / 1000000000))
}

# cli_in INPUT ARGS...: the same, with INPUT on standard input.
cli_in() {
	local input=$1
	shift
	"$CLI" "$@" >"$work/out" 2>"$work/err" <<<"$input"
	rc=$?
}

# json EXPR: evaluates a Python expression over the JSON on stdout (as d).
json() {
	"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
		"$work/out" "$1" 2>>"$work/err"
}

stdout_is() { [ "$(cat "$work/out")" = "$1" ]; }
stderr_has() { grep -qi -- "$1" "$work/err"; }

# Containers of a tenant, or with an id, as docker sees them.
tenant_containers() {
	docker ps -aq --no-trunc --filter "label=io.sandboxio.tenant=$1"
}

# new_tenant NAME: sets tenant to a tenant of this run's own, which is checked
# for leftovers at the end.
new_tenant() {
	tenant=$T-$1
	tenants="$tenants $tenant"
}

# wait_running TENANT [PATTERN]: polls (up to 20 s) until a container of the
# tenant runs and, with PATTERN, until one of its processes matches it; sets cid.
wait_running() {
	cid=
	for _ in $(seq 1 200); do
		cid=$(docker ps -q --no-trunc --filter "label=io.sandboxio.tenant=$1" \
			--filter status=running | head -n1)
		if [ -n "$cid" ] && { [ -z "${2:-}" ] || docker top "$cid" 2>/dev/null | grep -q -- "$2"; }; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# kill9 PID: kill -9 of a background job, without the shell's "Killed" notice.
kill9() {
	exec 3>&2 2>/dev/null
	kill -9 "$1"
	wait "$1"
	exec 2>&3 3>&-
}

# A run that waits for the test: "$CLI" run ... -- sh -c "$GATE" goes on
# until open_gate CID PID, so what the test looks at while it runs does not
# depend on how fast the machine is. Without a container (the run was never
# seen running) the run is killed instead.
GATE_MARK=/tmp/sbx-test-gate
GATE="while [ ! -e $GATE_MARK ]; do sleep 0.05; done"
open_gate() {
	if [ -n "$1" ]; then
		docker exec "$1" touch "$GATE_MARK" >/dev/null 2>&1 || kill "$2" 2>/dev/null
	else
		kill "$2" 2>/dev/null
	fi
}

# gone_within TENANT SECS: polls until docker has no container of the tenant
# at all (docker ps -a: not even a stopped one); sets secs to the time taken.
gone_within() {
	local t0 now
	t0=$(date +%s%N)
	while :; do
		now=$(date +%s%N)
		secs=$(((now - t0) / 1000000000))
		[ -z "$(tenant_containers "$1")" ] && return 0
		[ $secs -ge "$2" ] && return 1
		sleep 0.2
	done
}

# lifetime_of TENANT: the deadline minus the creation time of its one sandbox,
# from ls --json.
lifetime_of() {
	"$CLI" ls --json --tenant "$1" 2>/dev/null |
		"$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d[0]["deadline"]-d[0]["created"] if len(d)==1 else -1)'
}

# keep NAME, restore NAME: set aside the last command's rc and output.
keep() {
	echo $rc >"$work/$1.rc"
	cp "$work/out" "$work/$1.out"
	cp "$work/err" "$work/$1.err"
}
restore() {
	rc=$(cat "$work/$1.rc")
	cp "$work/$1.out" "$work/out"
	cp "$work/$1.err" "$work/err"
}

# reap_out_has OUTCOME ID REASON: reap printed that line for that sandbox.
reap_out_has() {
	grep -q "^$1 *  ${2:0:12}  .*  $3\$" "$work/out"
}

# --- one-shot runs ---

cli run --tenant "$T" -- echo hello
[ $rc -eq 0 ] && stdout_is hello && ok "run echo hello" || bad "run echo hello"

cli run --tenant "$T" -- sh -c 'exit 3'
[ $rc -eq 3 ] && ok "run exits with the program's status" || bad "run exit 3"

cli --json run --tenant "$T" -- python3 -c 'print(1)'
[ $rc -eq 0 ] && json 'd["status"]=="exited" and d["exit_code"]==0 and d["stdout"]=="1\n" and d["sandbox_id"] and d["backend"]=="docker" and d["tier"]=="container" and d["stdout_truncated"] is False and d["stdout_bytes"]==2' &&
	ok "--json run parses, status exited" || bad "--json run"

# The deadline ended the run, not the program: sleep 1000 would take 1000 s.
cli run --tenant "$T" --timeout 1 -- sleep 1000
[ $rc -eq 124 ] && [ $secs -lt 600 ] && ok "run --timeout 1 sleep 1000: 124 in ${secs}s" ||
	bad "run --timeout 1" "took ${secs}s"

cli run --tenant "$T" --timeout=100.5 -- sh -c 'echo done'
[ $rc -eq 0 ] && stdout_is done && ok "--opt=value form" || bad "--timeout=100.5"

cli run --tenant "$T" -- nosuchprog
[ $rc -eq 127 ] && ok "run nosuchprog: 127" || bad "run nosuchprog"

# The README's main job, as it stands: scripts/demo.sh (setup, then the
# program of scripts/demo.py in a sandbox).
sh "$root/scripts/demo.sh" >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 0 ] && grep -qx "sum of 0..9: 45" "$work/out" && grep -qx "interfaces: \['lo'\]" "$work/out" &&
	ok "scripts/demo.sh, the README's main job: numpy in a sandbox with only lo" ||
	bad "scripts/demo.sh" "rc=$rc $(tail -3 "$work/err")"

cli run --tenant "$T" -- /etc/passwd
[ $rc -eq 126 ] && ok "run a non-executable: 126" || bad "run /etc/passwd"

cli --json run --tenant "$T" -- python3 -c 'import sys; sys.stdout.buffer.write(b"a\xffb\x00c")'
[ $rc -eq 0 ] && json 'd["stdout"]=="a\ufffdb\x00c" and d["stdout_encoding"]=="lossy-utf8" and "stderr_encoding" not in d' &&
	ok "--json replaces invalid UTF-8 and says so" || bad "lossy utf-8"

cli run --tenant "$T" --memory 32m -- python3 -c 'x = bytearray(256 << 20)'
[ $rc -eq 137 ] && stderr_has "killed: out of memory (memory cap 33554432 bytes)" &&
	ok "out of memory: 137 with a message" || bad "oom"

cli run --tenant "$T" --env GREETING=hi --workdir /tmp --cpus 0.5 --pids 64 --nofile 256 \
	--disk 64m -- sh -c 'echo "$GREETING $(pwd)"'
[ $rc -eq 0 ] && stdout_is "hi /tmp" && ok "run with every limit option" || bad "limits"

out=$(printf 'abc\n' | "$CLI" run --tenant "$T" --stdin - -- tr a-z A-Z 2>"$work/err")
rc=$?
[ $rc -eq 0 ] && [ "$out" = "ABC" ] && ok "run --stdin -" || bad "run --stdin -"

# --- option and engine errors: 125 with the library's message ---

cli run --tenant "$T" --memory 0 -- true
[ $rc -eq 125 ] && stderr_has memory && ok "--memory 0: 125 mentioning memory" || bad "--memory 0"

cli run --bogus -- true
[ $rc -eq 125 ] && stderr_has -- "--bogus" && ok "--bogus: 125 naming it" || bad "--bogus"

cli run --tenant "$T" --memory 12q -- true
[ $rc -eq 125 ] && stderr_has "12q" && ok "--memory 12q: 125" || bad "--memory 12q"

cli run --tenant "$T" --image 'bad image!' -- true
[ $rc -eq 125 ] && stderr_has image && ok "--image 'bad image!': 125" || bad "bad image"

cli run --tenant "$T" --image nosuch/image:1 -- true
[ $rc -eq 125 ] && stderr_has "nosuch/image:1" && ok "missing image: 125 naming it" ||
	bad "missing image"

cli --socket /nonexistent.sock run --tenant "$T" -- true
[ $rc -eq 125 ] && stderr_has socket && stderr_has /nonexistent.sock &&
	ok "bad --socket: 125 naming the socket" || bad "--socket"

cli run --tenant "$T" --timeout 0 -- true
[ $rc -eq 125 ] && ok "--timeout 0: 125" || bad "--timeout 0"

cli run --tenant "$T" --memory
[ $rc -eq 125 ] && stderr_has "needs a value" && ok "missing value: 125" || bad "missing value"

cli --json run --tenant "$T" --memory 0 -- true
[ $rc -eq 125 ] && json 'd["status"]=="error" and "memory" in d["error"] and d["code"]==-2' &&
	ok "--json failure object" || bad "--json error"

cli run
[ $rc -eq 125 ] && ok "run without COMMAND: 125" || bad "run without COMMAND"

cli nosuchcommand
[ $rc -eq 125 ] && ok "unknown command: 125" || bad "unknown command"

# --- egress allowlist options: refused before anything is created ---
# No test here sends a packet: traffic through an allowlist is the C contract
# tests' (tests/contract/test_docker_egress.c). Names come only from a hosts
# file written here, and the one address pinned is in 198.18.0.0/15.

new_tenant allow
TW=$tenant

# bad_allow LABEL WANT ARGS...: ARGS exit 125 with WANT on stderr, no container.
bad_allow() {
	local label=$1 want=$2
	shift 2
	cli "$@"
	[ $rc -eq 125 ] && stderr_has "$want" && [ -z "$(tenant_containers "$TW")" ] &&
		ok "$label: 125 naming the problem, no container" || bad "$label"
}

bad_allow "--allow-cidr 198.51.100.7/8 (host bits)" "host bits are set beyond /8" \
	run --tenant "$TW" --allow-cidr 198.51.100.7/8 -- true
bad_allow "--allow-cidr 198.51.100.300/24" "'198.51.100.300' is not an IPv4 or IPv6 address" \
	run --tenant "$TW" --allow-cidr 198.51.100.300/24 -- true
bad_allow "--allow-cidr abc" "'abc' is not an IPv4 or IPv6 address" \
	run --tenant "$TW" --allow-cidr abc -- true
bad_allow "--allow-cidr=198.18.0.0/24:0 (port 0)" "port 0" \
	run --tenant "$TW" --allow-cidr=198.18.0.0/24:0 -- true
bad_allow "--allow-cidr 0.0.0.0/0" "prefix of length 0" \
	create --tenant "$TW" --allow-cidr 0.0.0.0/0
bad_allow "--allow-host with a wildcard" "wildcards are not supported" \
	run --tenant "$TW" --allow-host '*.canary.test' -- true
bad_allow "--allow-host bad_name" "not allowed in a host name" \
	create --tenant "$TW" --allow-host bad_name
bad_allow "--allow-host an address" "use allow_cidr" \
	run-code --tenant "$TW" --lang bash --allow-host 198.18.0.1 /dev/null
bad_allow "--allow-host localhost" "localhost" \
	run --tenant "$TW" --allow-host localhost -- true
bad_allow "a bad entry after a good one" "'abc'" \
	run --tenant "$TW" --allow-cidr 198.18.0.0/24:443 --allow-cidr abc -- true

cli --json run --tenant "$TW" --allow-host 'a*b' -- true
[ $rc -eq 125 ] && json 'd["status"]=="error" and "wildcard" in d["error"] and d["code"]==-2' &&
	ok "--json --allow-host refusal: error object" || bad "--json --allow-host"

printf '198.18.200.9 pinned.canary.test\n127.0.0.1 loop.canary.test\n' >"$work/hosts"

bad_allow "--allow-host missing from --hosts-file" "no address in the hosts file $work/hosts" \
	--hosts-file "$work/hosts" run --tenant "$TW" --allow-host nosuch.canary.test -- true
bad_allow "--allow-host resolving to loopback" "loopback" \
	run --hosts-file "$work/hosts" --tenant "$TW" --allow-host loop.canary.test -- true
bad_allow "--hosts-file that does not exist" "$work/nosuch-hosts" \
	--hosts-file "$work/nosuch-hosts" run --tenant "$TW" --allow-host pinned.canary.test -- true

cli run --help
[ $rc -eq 0 ] && grep -q -- "--allow-host NAME\[:PORT\]" "$work/out" &&
	grep -q -- "--allow-cidr CIDR\[:PORT\]" "$work/out" && grep -q -- "--hosts-file FILE" "$work/out" &&
	grep -q "no network at all" "$work/out" && grep -q "no resolver inside" "$work/out" &&
	grep -q "What stays open" "$work/out" && ok "run --help documents the allowlist" ||
	bad "run --help allowlist"

# Creating with an allowlist (root, IPv4 forwarding): the name is pinned from
# the hosts file. The program only reads /etc/hosts; nothing is sent.
if [ "$(id -u)" -eq 0 ] && [ "$(cat /proc/sys/net/ipv4/ip_forward)" = 1 ]; then
	cli --hosts-file "$work/hosts" run --tenant "$TW" --allow-host pinned.canary.test:443 \
		-- cat /etc/hosts
	[ $rc -eq 0 ] && grep -q "^198\.18\.200\.9[[:space:]]*pinned\.canary\.test" "$work/out" &&
		! grep -q "loop.canary.test" "$work/out" && [ -z "$(tenant_containers "$TW")" ] &&
		ok "--allow-host with --hosts-file: pinned in /etc/hosts, nothing left" ||
		bad "--allow-host pinned"
	if [ "$(cat /proc/sys/net/ipv6/conf/all/forwarding)" = 1 ]; then
		cli run --tenant "$TW" --allow-cidr '[2001:db8:5::1]:443' -- true
		[ $rc -eq 0 ] && ok "--allow-cidr [IPv6]:port with IPv6 forwarding on" ||
			bad "--allow-cidr IPv6"
	else
		cli run --tenant "$TW" --allow-cidr '[2001:db8:5::1]:443' -- true
		[ $rc -eq 125 ] && stderr_has "IPv6 forwarding is off" && [ -z "$(tenant_containers "$TW")" ] &&
			ok "--allow-cidr IPv6 with IPv6 forwarding off: 125, no container" ||
			bad "--allow-cidr IPv6 refused"
	fi
else
	echo "skip --allow-host creation (needs root and net.ipv4.ip_forward=1)"
fi

# --- the operator config ---
# Configs are written here, owned by the user running the tests, into the
# mktemp directory (mode 0700): the library refuses one that others can write.

new_tenant config
TG=$tenant
cfg=$work/config.json
cat >"$cfg" <<'JSON'
{"defaults": {"timeout": 30, "memory": "256m"},
 "ceilings": {"timeout": 60, "memory": "1g"},
 "images": ["sandboxio/python:3.11"]}
JSON
chmod 0600 "$cfg"

# refused LABEL WANT ARGS...: ARGS exit 125 naming WANT and the config file,
# and nothing of tenant $TG exists.
refused() {
	local label=$1 want=$2
	shift 2
	cli "$@"
	[ $rc -eq 125 ] && stderr_has "$want" && stderr_has "in config $cfg" &&
		[ -z "$(tenant_containers "$TG")" ] &&
		ok "$label: 125 naming the ceiling and the file, no container" || bad "$label"
}

refused "run --timeout 61 under a ceiling of 60" "above ceilings.timeout (60 s)" \
	--config "$cfg" run --tenant "$TG" --timeout 61 -- true
refused "create --memory 2g under a ceiling of 1g" "above ceilings.memory (1g)" \
	--config "$cfg" create --tenant "$TG" --memory 2g
refused "an image not in images" 'image "nosuch/image:1" is not in images' \
	--config "$cfg" run --tenant "$TG" --image nosuch/image:1 -- true
refused "config --effective --timeout 61" "above ceilings.timeout (60 s)" \
	--config "$cfg" config --effective --timeout 61

cli --config "$cfg" run --tenant "$TG" --timeout 60 -- echo at-ceiling
[ $rc -eq 0 ] && stdout_is at-ceiling && ok "run --timeout 60 at the ceiling of 60 runs" ||
	bad "run --timeout 60 at the ceiling"

memcap='cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max'
cli --config "$cfg" run --tenant "$TG" -- sh -c "$memcap"
[ $rc -eq 0 ] && stdout_is 268435456 && ok "the operator's default memory 256m applies without --memory" ||
	bad "operator default memory"

cli --config "$cfg" run --tenant "$TG" --memory 128m -- sh -c "$memcap"
[ $rc -eq 0 ] && stdout_is 134217728 && ok "--memory 128m under the ceiling is applied" ||
	bad "--memory under a config"

cli --config "$cfg" run --tenant "$TG" --lifetime 10 -- true
[ $rc -eq 125 ] && stderr_has -- "--lifetime 10 is shorter than the run deadline of 30 s" &&
	ok "--lifetime shorter than the operator's default run deadline: 125" ||
	bad "--lifetime under a config"

# The lifetime margin (run deadline + 30 s) stops at the timeout ceiling.
"$CLI" --config "$cfg" run --tenant "$TG" --timeout 60 -- sh -c "$GATE" >"$work/out" 2>"$work/err" &
pid=$!
wait_running "$TG" "$GATE_MARK"
life=$(lifetime_of "$TG")
open_gate "$cid" $pid
wait $pid
rc=$?
[ $rc -eq 0 ] && [ "$life" -ge 59 ] && [ "$life" -le 61 ] &&
	ok "run --timeout 60 under a ceiling of 60: the sandbox lives 60 s, not 90" ||
	bad "lifetime capped at the ceiling" "lifetime $life"

cli --config "$cfg" config --effective --pids 64
[ $rc -eq 0 ] && json "d['source']=='$cfg' and d['effective']['memory']=={'value':'256m','origin':'$cfg'} and d['effective']['timeout']['run']=={'value':30,'origin':'$cfg'} and d['effective']['pids']=={'value':64,'origin':'request'} and d['effective']['nofile']['origin']=='builtin' and d['ceilings']['timeout']=={'value':60,'origin':'$cfg'} and d['images']['value']==['sandboxio/python:3.11']" &&
	ok "config --effective: JSON with each value's origin" || bad "config --effective"

cli config --effective
[ $rc -eq 0 ] && json "d['source']=='builtin' and d['effective']['memory']=={'value':'512m','origin':'builtin'} and d['egress']['value']=='any'" &&
	ok "config --effective without a config: the built-in one" || bad "config --effective builtin"

chmod 0644 "$cfg"
SANDBOXIO_CONFIG=$cfg cli config --effective --memory 64m
[ $rc -eq 0 ] && json "d['source']=='$cfg' and d['effective']['memory']=={'value':'64m','origin':'request'}" &&
	ok "\$SANDBOXIO_CONFIG is honoured (mode 0644)" || bad "SANDBOXIO_CONFIG config --effective"

SANDBOXIO_CONFIG=$cfg cli run --tenant "$TG" --timeout 61 -- true
[ $rc -eq 125 ] && stderr_has "above ceilings.timeout" && stderr_has "in config $cfg" &&
	[ -z "$(tenant_containers "$TG")" ] &&
	ok "\$SANDBOXIO_CONFIG binds run: --timeout 61 refused" || bad "SANDBOXIO_CONFIG run"

SANDBOXIO_CONFIG=$work/nosuch.json cli --config "$cfg" config --effective
[ $rc -eq 0 ] && json "d['source']=='$cfg'" && ok "--config wins over \$SANDBOXIO_CONFIG" ||
	bad "--config over SANDBOXIO_CONFIG"

SANDBOXIO_CONFIG=$work/nosuch.json cli ls --tenant "$TG"
[ $rc -eq 125 ] && stderr_has "$work/nosuch.json" && ok "\$SANDBOXIO_CONFIG naming no file: 125" ||
	bad "SANDBOXIO_CONFIG missing file"

chmod 0664 "$cfg"
cli --config "$cfg" run --tenant "$TG" -- true
[ $rc -eq 125 ] && stderr_has "file $cfg is writable by its group" && [ -z "$(tenant_containers "$TG")" ] &&
	ok "a group-writable config: 125 naming the file" || bad "group-writable config"
chmod 0600 "$cfg"

printf '{"defaults": {"swap": "1g"}}\n' >"$work/unknown.json"
chmod 0600 "$work/unknown.json"
cli --config "$work/unknown.json" run --tenant "$TG" -- true
[ $rc -eq 125 ] && stderr_has "config $work/unknown.json: defaults.swap: unknown key" &&
	ok "an unknown key: 125 naming the key and the file" || bad "unknown key"

cli --json --config "$work/unknown.json" config --effective
[ $rc -eq 125 ] && json 'd["status"]=="error" and "defaults.swap" in d["error"]' &&
	ok "--json config error: error object" || bad "--json config error"

cli --config "$work/nosuch.json" create --tenant "$TG"
[ $rc -eq 125 ] && stderr_has "$work/nosuch.json" && [ -z "$(tenant_containers "$TG")" ] &&
	ok "--config naming no file: 125" || bad "--config missing file"

cli config
[ $rc -eq 125 ] && stderr_has -- "--effective" && ok "config without --effective: 125" ||
	bad "config without --effective"

cli --help
[ $rc -eq 0 ] && grep -q -- "--config PATH" "$work/out" && grep -q "config --effective" "$work/out" &&
	ok "--help documents --config and config --effective" || bad "--help config"

# --- a narrowing config under the system config ---
# The system config is /etc/sandboxio/config.json. These tests give the
# command one of their own in a private mount namespace, over a tmpfs on
# /etc there, so the machine's /etc is never touched; they need root (for
# unshare -m) and are skipped otherwise.

# sys_cli SYSCONFIG ARGS...: as cli, with SYSCONFIG as the system config.
sys_cli() {
	local sys=$1
	shift
	unshare -m sh -c 'mount -t tmpfs -o mode=0755 sbx-etc /etc &&
		mkdir -m 0755 /etc/sandboxio &&
		cp "$1" /etc/sandboxio/config.json &&
		chmod 0644 /etc/sandboxio/config.json && shift && exec "$@"' \
		sh "$sys" "$CLI" "$@" >"$work/out" 2>"$work/err" </dev/null
	rc=$?
}

SYS=/etc/sandboxio/config.json
syscfg=$work/system.json
wide=$work/wide.json
narrowcfg=$work/narrow.json
cat >"$syscfg" <<'JSON'
{"defaults": {"timeout": 30}, "ceilings": {"timeout": 60, "memory": "1g"}}
JSON
printf '{"ceilings": {"timeout": 3600}}\n' >"$wide"
printf '{"defaults": {"timeout": 10}, "ceilings": {"timeout": 20}}\n' >"$narrowcfg"
chmod 0600 "$wide" "$narrowcfg"

if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	sys_cli "$syscfg" config --effective
	[ $rc -eq 0 ] && json "d['source']=='$SYS' and d['system']=='$SYS' and d['ceilings']['timeout']=={'value':60,'origin':'$SYS'} and d['effective']['timeout']['run']=={'value':30,'origin':'$SYS'}" &&
		ok "the system config binds without --config" || bad "system config"

	sys_cli "$syscfg" --config "$wide" config --effective
	[ $rc -eq 125 ] && stderr_has "config $wide: refused: ceilings.timeout" &&
		stderr_has "above the system's ceilings.timeout (60 s)" && stderr_has "system config $SYS" &&
		ok "a narrowing --config with a bigger timeout ceiling: 125 naming both files" ||
		bad "narrowing --config wider than the system"

	sys_cli "$syscfg" --config "$wide" run --tenant "$TG" --timeout 3000 -- true
	[ $rc -eq 125 ] && stderr_has "$wide" && stderr_has "$SYS" && [ -z "$(tenant_containers "$TG")" ] &&
		ok "run with a widening --config: 125, no container" || bad "run with a widening --config"

	sys_cli "$syscfg" --config "$narrowcfg" config --effective --pids 64
	[ $rc -eq 0 ] && json "d['source']=='$narrowcfg' and d['system']=='$SYS' and d['ceilings']['timeout']=={'value':20,'origin':'$narrowcfg'} and d['ceilings']['memory']=={'value':'1g','origin':'$SYS'} and d['ceilings']['pids']['origin']=='builtin' and d['effective']['timeout']['run']=={'value':10,'origin':'$narrowcfg'} and d['effective']['pids']=={'value':64,'origin':'request'}" &&
		ok "a narrowing --config with a smaller ceiling applies; each origin named" ||
		bad "narrowing --config applies"

	sys_cli "$syscfg" --config "$narrowcfg" config --effective --timeout 21
	[ $rc -eq 125 ] && stderr_has "above ceilings.timeout (20 s)" && stderr_has "in config $narrowcfg" &&
		ok "a request above the narrowed ceiling: 125" || bad "request above narrowed ceiling"

	SANDBOXIO_CONFIG=$wide sys_cli "$syscfg" config --effective
	[ $rc -eq 125 ] && stderr_has "config $wide: refused: ceilings.timeout" && stderr_has "system config $SYS" &&
		ok "\$SANDBOXIO_CONFIG with a bigger timeout ceiling: 125 naming both files" ||
		bad "SANDBOXIO_CONFIG wider than the system"

	SANDBOXIO_CONFIG=$narrowcfg sys_cli "$syscfg" config --effective
	[ $rc -eq 0 ] && json "d['source']=='$narrowcfg' and d['ceilings']['timeout']=={'value':20,'origin':'$narrowcfg'}" &&
		ok "\$SANDBOXIO_CONFIG with a smaller ceiling applies" || bad "SANDBOXIO_CONFIG narrowing applies"
else
	echo "skip the system config tests: they need root and unshare -m"
fi

# --- run-code ---

cli_in 'import sys
print("py", 6 * 7)
sys.exit(4)' run-code --tenant "$T" --lang python -
[ $rc -eq 4 ] && stdout_is "py 42" && ok "run-code python from stdin" || bad "run-code python"

printf 'echo "$((6*7))"\n' >"$work/code.sh"
cli --json run-code --tenant "$T" --lang=bash "$work/code.sh"
[ $rc -eq 0 ] && json 'd["stdout"]=="42\n" and d["status"]=="exited"' &&
	ok "run-code bash from a file, --json" || bad "run-code bash"

cli run-code --tenant "$T" --lang ruby -
[ $rc -eq 125 ] && ok "run-code --lang ruby: 125" || bad "run-code ruby"

# --- output caps ---

cli run --tenant "$T" --max-output 1m -- sh -c 'yes | head -c 50000000'
size=$(wc -c <"$work/out")
[ $rc -eq 0 ] && [ "$size" -eq 1048576 ] &&
	stderr_has "stdout truncated: 1048576 of 50000000 bytes kept" &&
	ok "output flood with --max-output 1m: truncated, exit 0" ||
	bad "flood" "stdout size $size"

cli --json run --tenant "$T" --max-output 1m -- sh -c 'yes | head -c 50000000'
[ $rc -eq 0 ] && json 'd["stdout_truncated"] is True and d["stdout_bytes"]==50000000 and len(d["stdout"])==1048576' &&
	ok "--json flood: stdout_truncated" || bad "--json flood"

# --- create / exec / ls / rm ---

cli create --tenant "$T" --timeout 120
id=$(cat "$work/out")
if [ $rc -eq 0 ] && [ -n "$id" ]; then
	ok "create prints an id"
else
	bad "create"
fi

cli exec "$id" -- sh -c 'echo one > /workspace/f; cat /workspace/f'
[ $rc -eq 0 ] && stdout_is one && ok "exec runs in the sandbox" || bad "exec"

cli exec "$id" cat /workspace/f
[ $rc -eq 0 ] && stdout_is one && ok "exec sees the earlier run's file" || bad "exec state"

cli exec --json "$id" --timeout 1 -- sleep 10
[ $rc -eq 124 ] && json "d['status']=='timeout' and d['exit_code']==124 and d['sandbox_id']=='$id'" &&
	ok "exec --timeout: 124" || bad "exec --timeout"

cli exec "$id" -- sh -c 'exit 5'
[ $rc -eq 5 ] && ok "exec passes the exit status" || bad "exec exit 5"

cli ls --tenant "$T"
[ $rc -eq 0 ] && grep -q "^${id:0:12} .*$T .*running" "$work/out" && ok "ls shows the sandbox" ||
	bad "ls"

cli ls --tenant "$T" --json
[ $rc -eq 0 ] && json "len(d)==1 and d[0]['id']=='$id' and d[0]['tenant']=='$T' and d[0]['state']=='running' and d[0]['deadline']>d[0]['created']" &&
	ok "ls --json" || bad "ls --json"

cli rm "$id"
[ $rc -eq 0 ] && ok "rm" || bad "rm"
left=$(docker ps -aq --no-trunc --filter label=io.sandboxio.managed-by=sandboxio | grep -c "^$id" || true)
[ "$left" -eq 0 ] && ok "after rm, docker has no such container" || bad "rm left $id"

cli exec "$id" -- true
[ $rc -eq 125 ] && ok "exec on a removed sandbox: 125" || bad "exec removed"

cli rm nosuch-sandbox
[ $rc -eq 125 ] && stderr_has nosuch-sandbox && ok "rm of an unknown id: 125" || bad "rm unknown"

cli create --tenant "$T" --timeout 60
id2=$(cat "$work/out")
cli rm nosuch-sandbox "$id2"
left=$(tenant_containers "$T" | grep -c "^$id2" || true)
[ $rc -eq 125 ] && [ -n "$id2" ] && [ "$left" -eq 0 ] &&
	ok "rm goes on past an unknown id" || bad "rm partial"

# --- teardown on signals ---

# The signal comes once the program runs (seen in the sandbox), and the
# sandbox must be gone from the Engine when the command returns: not being
# removed, gone (docker ps -a lists a container until its removal ends).
for sig in INT TERM; do
	"$CLI" run --tenant "$T" -- sleep 60 >"$work/out" 2>"$work/err" &
	pid=$!
	wait_running "$T" "sleep 60"
	seen=$cid
	kill -$sig $pid
	wait $pid
	rc=$?
	left=$(tenant_containers "$T")
	want=$([ $sig = INT ] && echo 130 || echo 143)
	[ -n "$seen" ] && [ $rc -eq "$want" ] && [ -z "$left" ] &&
		ok "SIG$sig during a silent run: $want, sandbox removed" ||
		bad "SIG$sig" "seen=$seen left=$left"
done

# --- lifetimes ---

cli run --tenant "$T" --timeout 10 --lifetime 5 -- true
[ $rc -eq 125 ] && stderr_has -- "--lifetime 5 is shorter than the run deadline of 10 s" &&
	ok "run --lifetime shorter than --timeout: 125" || bad "--lifetime < --timeout"

cli run --tenant "$T" --lifetime 60 -- true
[ $rc -eq 125 ] && stderr_has -- "--lifetime 60 is shorter than the run deadline of 300 s" &&
	ok "run --lifetime shorter than the default run deadline: 125" || bad "--lifetime < default"

cli run-code --tenant "$T" --lang bash --timeout 10 --lifetime 5 -
[ $rc -eq 125 ] && stderr_has -- "--lifetime" && ok "run-code --lifetime shorter: 125" ||
	bad "run-code --lifetime"

cli run --tenant "$T" --timeout 300 --lifetime 300 -- echo same
[ $rc -eq 0 ] && stdout_is same && ok "run --lifetime equal to --timeout" || bad "--lifetime = --timeout"

cli run --tenant "$T" --lifetime 0 -- true
[ $rc -eq 125 ] && ok "--lifetime 0: 125" || bad "--lifetime 0"

new_tenant life
TL=$tenant
cli create --tenant "$TL" --lifetime 90
id=$(cat "$work/out")
life=$(lifetime_of "$TL")
[ $rc -eq 0 ] && [ "$life" -ge 89 ] && [ "$life" -le 91 ] && ok "create --lifetime 90: deadline 90 s after creation" ||
	bad "create --lifetime" "lifetime $life"
cli exec --json "$id" -- sh -c 'echo ok'
[ $rc -eq 0 ] && json 'd["stdout"]=="ok\n"' && ok "exec in a sandbox made with --lifetime" ||
	bad "exec --lifetime sandbox"
cli rm "$id"

# (a) kill -9 mid-run: the init ends the sandbox at its lifetime, nobody else.
# A lifetime that ran out before the run was seen running, or before the
# kill, proves nothing: the attempt is made again with twice the lifetime.
new_tenant kill9-short
TA=$tenant
for life in 4 8 16 32 64 128; do
	"$CLI" run --tenant "$TA" --timeout $life --lifetime $life -- sleep 1000 >"$work/out" 2>"$work/err" &
	pid=$!
	seen=
	wait_running "$TA" "sleep 1000" && seen=$cid
	kill9 $pid
	left=$(tenant_containers "$TA")
	[ -n "$seen" ] && [ -n "$left" ] && break
	echo "     (lifetime $life ran out before the kill; again with twice as long)"
	gone_within "$TA" $((life + 120)) || true
done
gone_within "$TA" $((life + 120))
gone=$?
[ -n "$seen" ] && [ -n "$left" ] && [ $gone -eq 0 ] &&
	ok "kill -9 of run --lifetime $life: sandbox gone ${secs}s after the kill" ||
	bad "kill -9 --lifetime $life" "seen=$seen left-after-kill=$left gone=$gone after ${secs}s"

# (b) kill -9 mid-run with a far lifetime: the sandbox stays until reap.
# Opening a backend reaps the host's orphans, so another sandboxio process
# (a concurrent test run, a daemon) could remove this one before our reap
# does. So the run and our reaps happen under a host name of their own (a
# UTS namespace, the holder's, entered with nsenter): the sandbox's
# owner-host is that name, and a sandboxio process under another name
# leaves the orphan to its deadline (core/owner.c). nscli is cli there.
unshare --uts sh -c "hostname sbx-cli-test-$$ && exec sleep 100000" &
holder=$!
nsp=
for _ in $(seq 1 200); do
	[ "$(nsenter -t $holder -u hostname 2>/dev/null)" = "sbx-cli-test-$$" ] && nsp=$holder && break
	sleep 0.05
done
nscli() {
	nsenter -t "$nsp" -u -- "$CLI" "$@" >"$work/out" 2>"$work/err"
	rc=$?
}
new_tenant kill9-far
TB=$tenant
nsenter -t "$nsp" -u -F -- "$CLI" run --tenant "$TB" --lifetime 600 -- sleep 500 \
	>"$work/out" 2>"$work/err" &
pid=$!
wait_running "$TB" "sleep 500"
seen=$cid
life=$(lifetime_of "$TB")
kill9 $pid
left=$(tenant_containers "$TB")
nscli reap --tenant "$TB" --dry-run
keep dry
after_dry=$(tenant_containers "$TB")
nscli --json reap --tenant "$TB" --dry-run
keep dryjson
after_json=$(tenant_containers "$TB")
nscli reap --tenant "$TB"
keep reap
after_reap=$(tenant_containers "$TB")
kill9 $holder
[ -n "$seen" ] && [ "$left" = "$seen" ] && [ "$life" -ge 599 ] && [ "$life" -le 601 ] &&
	ok "kill -9 of run --lifetime 600: the sandbox is still there" ||
	bad "kill -9 --lifetime 600" "seen=$seen left=$left lifetime=$life"

restore dry
[ $rc -eq 0 ] && [ "$(wc -l <"$work/out")" -eq 1 ] && reap_out_has "would remove" "$seen" owner-gone &&
	stderr_has "would reap 1 sandbox" && [ "$after_dry" = "$seen" ] &&
	ok "reap --dry-run lists it (would remove, owner-gone) and leaves it" || bad "reap --dry-run"

restore dryjson
[ $rc -eq 0 ] && json "len(d)==1 and d[0]=={'id':'$seen','tenant':'$TB','reason':'owner-gone','removed':False,'detail':''}" &&
	[ "$after_json" = "$seen" ] && ok "reap --dry-run --json" || bad "reap --dry-run --json"

restore reap
[ $rc -eq 0 ] && reap_out_has removed "$seen" owner-gone && stderr_has "reaped 1 sandbox" &&
	[ -z "$after_reap" ] && ok "reap removes it: docker ps -a shows nothing" || bad "reap"

cli reap --tenant "$TB"
[ $rc -eq 0 ] && [ ! -s "$work/out" ] && stderr_has "reaped 0 sandboxes" &&
	ok "reap again: nothing to do" || bad "reap again"

# (c) a detached sandbox has no owner: reap leaves it until its deadline.
new_tenant detached
TC=$tenant
cli create --tenant "$TC" --timeout 120
id=$(cat "$work/out")
cli reap --tenant "$TC"
[ $rc -eq 0 ] && [ ! -s "$work/out" ] && [ -n "$id" ] && [ "$(tenant_containers "$TC")" = "$id" ] &&
	ok "reap leaves a sandbox made by create" || bad "reap detached"
cli rm "$id"
[ $rc -eq 0 ] && [ -z "$(tenant_containers "$TC")" ] && ok "rm after reap" || bad "rm detached"

# (e) the daemon is down.
cli --socket /nonexistent.sock reap
[ $rc -eq 125 ] && stderr_has /nonexistent.sock && ok "reap with the daemon down: 125 naming the socket" ||
	bad "reap --socket"

cli --json --socket /nonexistent.sock reap --dry-run
[ $rc -eq 125 ] && json 'd["status"]=="error" and "/nonexistent.sock" in d["error"]' &&
	ok "reap --json with the daemon down: error object" || bad "reap --json --socket"

cli reap --tenant 'no such tenant'
[ $rc -eq 125 ] && stderr_has tenant && ok "reap --tenant with a bad name: 125" || bad "reap bad tenant"

cli reap extra
[ $rc -eq 125 ] && ok "reap with an argument: 125" || bad "reap extra"

# --- (d) SIGINT at any moment leaves nothing ---

# As from a terminal: a background job of a script would start with SIGINT
# ignored. The signal must land while the command waits for a chosen Engine
# call, whatever the machine's speed: the command talks to the Engine through
# tests/support/engine-hold.py, which holds that call until the signal has
# been sent. The calls are those of opening the backend (the reaper's
# listing) and of each step of creating a sandbox.
hold_points=("GET /containers/json" "POST /containers/create" "POST /containers/[0-9a-f]+/attach"
	"POST /containers/[0-9a-f]+/start" "GET /containers/[0-9a-f]+/json")

# hold_start PATTERN...: a proxy at $work/hold.sock that holds the first
# request matching each PATTERN until hold_release.
hold_start() {
	local a=() p line
	rm -f "$work/hold.in" "$work/hold.out" "$work/hold.sock"
	mkfifo "$work/hold.in" "$work/hold.out"
	for p in "$@"; do a+=(--hold "$p"); done
	"$PY" "$root/tests/support/engine-hold.py" --listen "$work/hold.sock" "${a[@]}" \
		<"$work/hold.in" >"$work/hold.out" &
	hold_pid=$!
	exec {hold_w}>"$work/hold.in" {hold_r}<"$work/hold.out"
	read -r -t 120 line <&$hold_r && [ "$line" = ready ]
}
# hold_wait: until a request is held (its line in $held); fails if the
# command ($pid) ended without making it. The bound is only a hang guard.
hold_wait() {
	local i
	held=
	for i in $(seq 1 600); do
		read -r -t 1 held <&$hold_r && return 0
		kill -0 "$pid" 2>/dev/null || return 1
	done
	return 1
}
hold_release() { echo release >&$hold_w; }
hold_stop() {
	exec {hold_w}>&- {hold_r}<&-
	kill $hold_pid 2>/dev/null
	wait $hold_pid 2>/dev/null
}

new_tenant sigint-early
TD=$tenant
for point in "${hold_points[@]}"; do
	for what in create run; do
		hold_start "$point"
		if [ $what = create ]; then
			env --default-signal=INT "$CLI" --socket "$work/hold.sock" create --tenant "$TD" \
				>"$work/out" 2>"$work/err" &
		else
			env --default-signal=INT "$CLI" --socket "$work/hold.sock" run --tenant "$TD" \
				-- sleep 100 >"$work/out" 2>"$work/err" &
		fi
		pid=$!
		hold_wait
		kill -INT $pid
		hold_release
		wait $pid
		rc=$?
		hold_stop
		left=$(tenant_containers "$TD")
		[ -n "$held" ] && [ $rc -eq 130 ] && [ -z "$left" ] && stderr_has "interrupted by signal 2" &&
			ok "SIGINT into $what while the Engine answers '$point': 130, nothing left" ||
			bad "SIGINT into $what at '$point'" "held=$held left=$left"
		for c in $left; do docker rm -f "$c" >/dev/null 2>&1; done
	done
done

new_tenant sigint-silent
TQ=$tenant
env --default-signal=INT "$CLI" run --tenant "$TQ" -- sleep 100 >"$work/out" 2>"$work/err" &
pid=$!
wait_running "$TQ" "sleep 100"
seen=$cid
life=$(lifetime_of "$TQ")
kill -INT $pid
wait $pid
rc=$?
left=$(tenant_containers "$TQ")
gone=$([ -z "$left" ] && echo 0 || echo 1)
[ -n "$seen" ] && [ $rc -eq 130 ] && [ $gone -eq 0 ] && stderr_has "interrupted by signal 2" &&
	ok "SIGINT during a silent run (SIGINT not ignored): 130, nothing left after ${secs}s" ||
	bad "SIGINT silent run" "seen=$seen gone=$gone"
[ "$life" -ge 329 ] && [ "$life" -le 331 ] &&
	ok "run without --lifetime: the sandbox lives the run's 300 s plus 30 s" ||
	bad "default lifetime" "lifetime $life"

new_tenant sigint-stream
TS=$tenant
rm -f "$work/fifo" "$work/stream"
mkfifo "$work/fifo"
cat "$work/fifo" >"$work/stream" &
reader=$!
env --default-signal=INT "$CLI" run --tenant "$TS" -- sh -c 'while :; do echo x; done' \
	>"$work/fifo" 2>"$work/err" &
pid=$!
for _ in $(seq 1 200); do
	[ -s "$work/stream" ] && break
	sleep 0.1
done
streamed=$(wc -c <"$work/stream")
kill -INT $pid
wait $pid
rc=$?
wait $reader
left=$(tenant_containers "$TS")
gone=$([ -z "$left" ] && echo 0 || echo 1)
[ "$streamed" -gt 0 ] && [ $rc -eq 130 ] && [ $gone -eq 0 ] &&
	ok "SIGINT while output streams to a pipe: 130, nothing left" ||
	bad "SIGINT streaming" "streamed=$streamed gone=$gone"

# --- a caller that is not root ---

# A user of the docker group (here: nobody, with the socket's group and no
# other) creates sandboxes too: choosing a uid takes no file that only root
# could make. Three at once, so that they may contend for the uid lock.
sock_gid=$(stat -c %g /var/run/docker.sock 2>/dev/null || echo 0)
if [ "$(id -u)" -eq 0 ] && [ "$sock_gid" != 0 ]; then
	new_tenant nonroot
	TN=$tenant
	# The binaries, where that user may run them (a checkout may sit in a
	# folder only root can enter): the command's front with the full
	# program beside it, as the build and an install place them.
	bin=$(mktemp -d /tmp/sbx-nonroot.XXXXXX)
	chmod 0755 "$bin"
	cp "$CLI" "$(dirname "$CLI")/sandboxio-full" "$SANDBOXIO_INIT" \
		"$(dirname "$SANDBOXIO_INIT")/sbx-resolv.conf" "$bin/"
	pids=""
	for k in 1 2 3; do
		(cd / && exec setpriv --reuid=65534 --regid="$sock_gid" --clear-groups \
			env SANDBOXIO_INIT="$bin/sbx-init" "$bin/$(basename "$CLI")" run --tenant "$TN" -- id -u) \
			>"$work/nonroot.$k" 2>"$work/nonroot.$k.err" &
		pids="$pids $!"
	done
	fails=0
	for p in $pids; do wait "$p" || fails=$((fails + 1)); done
	cat "$work"/nonroot.[123] >"$work/out"
	cat "$work"/nonroot.[123].err >"$work/err"
	rc=$fails
	[ $fails -eq 0 ] && [ "$(grep -c '^15[0-9]*$' "$work/out")" -eq 3 ] &&
		[ -z "$(tenant_containers "$TN")" ] &&
		ok "three runs at once by a docker-group user: each under a sandbox uid, nothing left" ||
		bad "non-root runs" "failed=$fails"
	rm -rf "$bin"
else
	echo "skip the non-root case: it needs root to drop to, and a docker group on the socket"
fi

# --- doctor ---

cli doctor
cid12=$(sed -n 's/^ok  *sandbox  *created \([0-9a-f]\{12\}\) .*/\1/p' "$work/out")
[ $rc -eq 0 ] && grep -q "^ok  *daemon  " "$work/out" && grep -q "^ok  *image  *sandboxio/python:3.11" "$work/out" &&
	[ -n "$cid12" ] && ok "doctor: exit 0, ok lines for daemon, image and sandbox" || bad "doctor"
for name in no-new-privs capabilities seccomp-mode uid interfaces config deny-canary; do
	grep -q "^ok  *$name  " "$work/out" && ok "doctor: ok $name" || bad "doctor $name"
done
grep -q "^ok  *deny-canary  .*ENETUNREACH" "$work/out" && ok "doctor: the deny canary gets ENETUNREACH" ||
	bad "doctor deny canary"
# setup.sh registers runsc with dockerd: the gvisor tier is offered and
# proven by its own kernel; microvm is not, and is named as not offered.
grep -q "^ok  *tier-gvisor  .*own kernel" "$work/out" && ok "doctor: ok tier-gvisor, its own kernel" ||
	bad "doctor tier-gvisor" "$(grep tier- "$work/out")"
grep -q "^warn  *tier-microvm  *not offered here: .*microvm" "$work/out" &&
	ok "doctor: warn tier-microvm, not offered, says why" || bad "doctor tier-microvm"
! grep -qv "^\(ok  \|warn\|FAIL\)  [a-z0-9-]*  *[^ ]" "$work/out" &&
	ok "doctor: every line is 'ok|warn|FAIL  name  detail'" || bad "doctor line format"
[ -n "$cid12" ] && [ -z "$(docker ps -aq --no-trunc | grep "^$cid12")" ] &&
	ok "doctor removed its sandbox" || bad "doctor left $cid12"

cli --json doctor
[ $rc -eq 0 ] && json 'd["ok"] is True and {c["name"] for c in d["checks"] if c["status"]=="ok"} >= {"daemon","image","sandbox","deny-canary"} and all(c["status"] in ("ok","warn") for c in d["checks"])' &&
	ok "doctor --json" || bad "doctor --json"

cli --socket /nonexistent.sock doctor
[ $rc -eq 1 ] && grep -q "^FAIL  *daemon  .*/nonexistent.sock" "$work/out" &&
	grep -q "^FAIL  *deny-canary  *not checked" "$work/out" &&
	ok "doctor with the daemon down: 1, FAIL daemon naming the socket" || bad "doctor --socket"

cli doctor extra
[ $rc -eq 125 ] && ok "doctor with an argument: 125" || bad "doctor extra"

# Two moments: early (opening the backend, creating), and once doctor's own
# sandbox exists (running its checks inside it). The second waits for the
# sandbox to appear rather than for a fixed time, so a fast doctor cannot
# finish before the signal.
for when in early sandbox; do
	if [ $when = early ]; then
		hold_start "GET /info"
		env --default-signal=INT "$CLI" --socket "$work/hold.sock" doctor >"$work/out" 2>"$work/err" &
		pid=$!
		hold_wait
	else
		env --default-signal=INT "$CLI" doctor >"$work/out" 2>"$work/err" &
		pid=$!
		i=0
		while [ -z "$(tenant_containers sandboxio-doctor)" ] && [ $i -lt 3000 ] &&
			kill -0 $pid 2>/dev/null; do
			i=$((i + 1))
			sleep 0.05
		done
	fi
	kill -INT $pid
	[ $when = early ] && hold_release
	wait $pid
	rc=$?
	[ $when = early ] && hold_stop
	left=$(tenant_containers sandboxio-doctor)
	# Once its sandbox exists doctor may finish its last checks before the
	# signal lands (0); nothing may be left either way.
	want=130
	[ $when = sandbox ] && [ $rc -eq 0 ] && want=0
	[ $rc -eq $want ] && [ -z "$left" ] && ok "SIGINT into doctor ($when): $rc, nothing left" ||
		bad "SIGINT into doctor ($when)" "rc=$rc left=$left"
done

# --- secrets, redaction, the audit log and tracing ---
# The value is only ever in environment variables and files of this script:
# it is looked for with grep -F -f PATTERN-FILE, never given on a command
# line, so that the ps check sees no process of ours holding it.

new_tenant secret
TK=$tenant
SV=s3cr3t-value-XYZ
printf '%s\n' "$SV" >"$work/secret.pat"
# leaks FILE...: the secret's value is in one of the files.
leaks() { grep -qF -f "$work/secret.pat" -- "$@"; }
adir=$(mktemp -d "$work/audit.XXXXXX")
alog=$adir/audit.jsonl

MYTOKEN=$SV cli --audit-log "$alog" run --tenant "$TK" --secret MYTOKEN -- sh -c 'echo $MYTOKEN'
[ $rc -eq 0 ] && stdout_is "<redacted>" && ! leaks "$work/out" "$work/err" &&
	ok "run --secret: the program's echo of it is redacted" || bad "run --secret redacted"

MYTOKEN=$SV cli --audit-log "$alog" run --tenant "$TK" --secret MYTOKEN -- sh -c 'printf %s "$MYTOKEN" | base64'
[ $rc -eq 0 ] && stdout_is "<redacted>" && ! leaks "$work/out" &&
	ok "run --secret: its base64 form is redacted too" || bad "run --secret base64"

MYTOKEN=$SV cli run --tenant "$TK" --audit-log "$alog" --no-redact-output --secret MYTOKEN -- sh -c 'echo $MYTOKEN'
[ $rc -eq 0 ] && stdout_is "$SV" && ok "run --secret --no-redact-output shows the value" ||
	bad "--no-redact-output"

MYTOKEN=$SV cli --json --audit-log "$alog" run --tenant "$TK" --secret=MYTOKEN -- sh -c 'echo $MYTOKEN >&2'
[ $rc -eq 0 ] && json 'd["stderr"]=="<redacted>\n" and d["spans_dropped"]==0' && ! leaks "$work/out" "$work/err" &&
	ok "--json run --secret: stderr redacted, spans_dropped 0 without tracing" || bad "--json --secret"

MYTOKEN=$SV cli_in 'import os
print(len(os.environ["MYTOKEN"]), os.environ["MYTOKEN"])' --audit-log "$alog" \
	run-code --tenant "$TK" --secret MYTOKEN --lang python -
[ $rc -eq 0 ] && stdout_is "16 <redacted>" && ! leaks "$work/out" &&
	ok "run-code --secret: delivered, output redacted" || bad "run-code --secret"

# While a run with the secret goes on: not in the container's inspect or
# events, not on any host process's command line, not in sandboxio's own
# environment (wiped once read).
t0=$(date +%s)
MYTOKEN=$SV "$CLI" --audit-log "$alog" run --tenant "$TK" --secret MYTOKEN -- \
	sh -c '[ ${#MYTOKEN} -eq 16 ] && '"$GATE" >"$work/out" 2>"$work/err" &
pid=$!
if wait_running "$TK" "$GATE_MARK"; then
	docker inspect "$cid" >"$work/inspect" 2>&1
	irc=$?
	ps -eww -o args >"$work/ps"
	cat "/proc/$pid/environ" >"$work/environ" 2>/dev/null
	erc=$?
	docker events --since "$t0" --until "$(date +%s)" --filter "container=$cid" >"$work/events" 2>&1
else
	irc=1 erc=1
fi
open_gate "$cid" $pid
wait $pid
rc=$?
[ $rc -eq 0 ] && [ $irc -eq 0 ] && grep -q "$cid" "$work/inspect" && ! leaks "$work/inspect" &&
	ok "docker inspect during a run with a secret: no value" || bad "docker inspect" "cid=$cid irc=$irc"
grep -q "$GATE_MARK" "$work/ps" && ! leaks "$work/ps" &&
	ok "host command lines (ps) during the run: no value" || bad "ps args"
[ $erc -eq 0 ] && ! leaks "$work/environ" && ok "sandboxio's own /proc/PID/environ: the value is wiped" ||
	bad "environ wiped" "erc=$erc"
! leaks "$work/events" && ok "docker events of the sandbox: no value" || bad "docker events"

# Error paths: each is 125 with a message, and none quotes the value.
MYTOKEN=$SV cli --audit-log "$alog" run --tenant "$TK" --secret MYTOKEN --env MYTOKEN=plain -- true
[ $rc -eq 125 ] && stderr_has "MYTOKEN is both a plain variable and a secret" && ! leaks "$work/out" "$work/err" &&
	[ -z "$(tenant_containers "$TK")" ] && ok "--secret NAME with --env NAME=...: 125, no container" ||
	bad "secret and env clash"

MYTOKEN=$SV cli --json --audit-log "$alog" run --tenant "$TK" --secret MYTOKEN --env MYTOKEN=plain -- true
[ $rc -eq 125 ] && json 'd["status"]=="error" and "MYTOKEN" in d["error"]' && ! leaks "$work/out" "$work/err" &&
	ok "--json clash: error object without the value" || bad "--json clash"

SHORTV=q7z cli run --tenant "$TK" --secret SHORTV -- true
[ $rc -eq 125 ] && stderr_has "4 to 16384 bytes" && ! grep -q q7z "$work/err" &&
	ok "a 3-byte secret: 125, the library's bounds, no value" || bad "short secret"

# Library messages that quote what they were given are redacted.
MYTOKEN=$SV cli --audit-log "$alog" run --tenant "$TK" --secret MYTOKEN --memory "$SV" -- true
[ $rc -eq 125 ] && stderr_has "<redacted>" && ! leaks "$work/out" "$work/err" &&
	ok "a library error quoting the value: redacted" || bad "redacted library error"

MYTOKEN=$SV cli --json --audit-log "$alog" run --tenant "$TK" --secret MYTOKEN --image "nosuch/$SV" -- true
[ $rc -eq 125 ] && json 'd["status"]=="error" and "<redacted>" in d["error"]' && ! leaks "$work/out" "$work/err" &&
	ok "--json engine error quoting the value: redacted" || bad "--json redacted engine error"

printf '{"secrets": false}\n' >"$work/nosecrets.json"
chmod 0600 "$work/nosecrets.json"
MYTOKEN=$SV cli --config "$work/nosecrets.json" --audit-log "$alog" run --tenant "$TK" --secret MYTOKEN -- true
[ $rc -eq 125 ] && stderr_has "secrets is false" && stderr_has "$work/nosecrets.json" && ! leaks "$work/out" "$work/err" &&
	[ -z "$(tenant_containers "$TK")" ] && ok "a config with secrets false: 125 with its message" ||
	bad "config forbids secrets"

unset NOPE
cli run --tenant "$TK" --secret NOPE -- true
[ $rc -eq 125 ] && stderr_has "environment variable NOPE is not set" &&
	ok "--secret NOPE with NOPE unset: 125 naming it" || bad "--secret NOPE"

cli --json run --tenant "$TK" --secret NOPE -- true
[ $rc -eq 125 ] && json 'd["status"]=="error" and "NOPE" in d["error"]' && ok "--json --secret NOPE: error object" ||
	bad "--json --secret NOPE"

for form in "--secret TOKEN=hunter2-value" "--secret=TOKEN=hunter2-value"; do
	cli run --tenant "$TK" $form -- true
	[ $rc -eq 125 ] && stderr_has "takes the name of an environment variable" && ! grep -q hunter2 "$work/err" &&
		ok "$form: 125, it takes a variable name, the value is not echoed" || bad "$form"
done

MYTOKEN=$SV cli run --tenant "$TK" --secret MYTOKEN --secret MYTOKEN -- true
[ $rc -eq 125 ] && stderr_has "MYTOKEN is given twice" && ok "the same --secret twice: 125" || bad "--secret twice"

cli run-code --tenant "$TK" --lang bash --secret NOPE -
[ $rc -eq 125 ] && stderr_has NOPE && ok "run-code --secret NOPE: 125" || bad "run-code --secret NOPE"

cli create --tenant "$TK" --secret MYTOKEN
[ $rc -eq 125 ] && stderr_has -- "--secret" && ok "create takes no --secret (secrets are per run)" ||
	bad "create --secret"

# --secret-file
printf 'f1le-s3cret-ABC\n' >"$work/tok"
chmod 0600 "$work/tok"
cli run --tenant "$TK" --secret-file FTOKEN="$work/tok" -- sh -c 'echo "[$FTOKEN]"'
[ $rc -eq 0 ] && stdout_is "[<redacted>]" && ok "--secret-file: delivered without its newline, redacted" ||
	bad "--secret-file"

cli run --tenant "$TK" --no-redact-output --secret-file FTOKEN="$work/tok" -- sh -c 'echo "[$FTOKEN]"'
[ $rc -eq 0 ] && stdout_is "[f1le-s3cret-ABC]" && ok "--secret-file --no-redact-output shows it" ||
	bad "--secret-file raw"

cli run --tenant "$TK" --secret-file FTOKEN="$work/nosuch-tok" -- true
[ $rc -eq 125 ] && stderr_has "$work/nosuch-tok" && ok "--secret-file of a missing file: 125 naming it" ||
	bad "--secret-file missing"

cli run --tenant "$TK" --secret-file "$work/tok" -- true
[ $rc -eq 125 ] && stderr_has "expected NAME=PATH" && ok "--secret-file without NAME=: 125" ||
	bad "--secret-file without name"

# exec: the secret is that run's only.
cli create --tenant "$TK" --timeout 120
id=$(cat "$work/out")
MYTOKEN=$SV cli exec --audit-log "$alog" --secret MYTOKEN "$id" -- sh -c 'echo "${#MYTOKEN} $MYTOKEN"'
[ $rc -eq 0 ] && stdout_is "16 <redacted>" && ! leaks "$work/out" && ok "exec --secret: delivered, redacted" ||
	bad "exec --secret"
MYTOKEN=$SV cli exec "$id" --no-redact-output --secret MYTOKEN -- sh -c 'echo $MYTOKEN'
[ $rc -eq 0 ] && stdout_is "$SV" && ok "exec --no-redact-output" || bad "exec --no-redact-output"
cli exec "$id" -- sh -c 'echo "[${MYTOKEN:-}]"'
[ $rc -eq 0 ] && stdout_is "[]" && ok "a later exec without --secret does not have it" || bad "exec after secret"
cli exec "$id" --secret NOPE -- true
[ $rc -eq 125 ] && stderr_has NOPE && ok "exec --secret NOPE: 125" || bad "exec --secret NOPE"
cli rm "$id"

# The audit log of all the above.
cli --audit-log "$alog" ls --tenant "$TK"
[ "$(stat -c %a "$alog")" = 600 ] && ok "--audit-log file is created 0600" ||
	bad "audit log mode" "mode $(stat -c %a "$alog")"
"$PY" -c 'import json,sys
raw=open(sys.argv[1]).read()
lines=raw.split("\n")
assert raw.endswith("\n") and lines[-1]==""
ev=[json.loads(l) for l in lines[:-1]]
assert all(isinstance(e,dict) and e["v"]==1 for e in ev)
names={e["event"] for e in ev}
assert {"sandbox.create","run.start","run.end","sandbox.destroy"} <= names, names
assert any(e["event"]=="run.start" and e.get("secret_names")==["MYTOKEN"] for e in ev)
assert any(e["event"]=="run.start" and e.get("raw_output") is True for e in ev)
' "$alog" 2>>"$work/err" && ok "every audit line parses as JSON; run.start names the secret" ||
	bad "audit log JSON"
! leaks "$alog" && grep -q MYTOKEN "$alog" && ok "the audit log has the secret's name, never its value" ||
	bad "audit log leaks"

touch "$work/wide.jsonl"
chmod 0644 "$work/wide.jsonl"
cli --audit-log "$work/wide.jsonl" run --tenant "$TK" -- true
[ $rc -eq 125 ] && stderr_has "$work/wide.jsonl" && [ -z "$(tenant_containers "$TK")" ] &&
	ok "--audit-log on a file others can read: 125" || bad "audit log wide"

# Tracing: TRACEPARENT makes the spans children of the caller's span.
cat >"$work/otlp.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[1], "ab") as f:
            f.write(body + b"\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[2] + ".tmp", "w").write(str(s.server_address[1]))
__import__("os").rename(sys.argv[2] + ".tmp", sys.argv[2])
s.serve_forever()
PY
rm -f "$work/spans" "$work/otlp.port"
"$PY" "$work/otlp.py" "$work/spans" "$work/otlp.port" &
otlp=$!
for _ in $(seq 1 1200); do # a hang guard: the receiver says its port when it listens
	[ -s "$work/otlp.port" ] && break
	kill -0 "$otlp" 2>/dev/null || break
	sleep 0.1
done
[ -s "$work/otlp.port" ] || bad "the OTLP receiver said no port" "$(cat "$work/spans" 2>/dev/null)"
tid=4bf92f3577b34da6a3ce929d0e0e4736
psid=00f067aa0ba902b7
MYTOKEN=$SV TRACEPARENT=00-$tid-$psid-01 OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$(cat "$work/otlp.port") \
	cli --json run --tenant "$TK" --secret MYTOKEN -- sh -c 'echo $MYTOKEN'
kill $otlp
wait $otlp 2>/dev/null
[ $rc -eq 0 ] && json 'd["stdout"]=="<redacted>\n" and isinstance(d["spans_dropped"], int)' &&
	"$PY" -c 'import json,sys
spans=[s for l in open(sys.argv[1]) if l.strip() for r in json.loads(l)["resourceSpans"]
       for ss in r["scopeSpans"] for s in ss["spans"]]
names={s["name"] for s in spans}
assert {"sandboxio.sandbox","sandboxio.run"} <= names, names
assert all(s["traceId"]==sys.argv[2] for s in spans)
assert any(s.get("parentSpanId")==sys.argv[3] for s in spans)
' "$work/spans" $tid $psid 2>>"$work/err" && ! leaks "$work/spans" &&
	ok "TRACEPARENT: spans join the caller's trace, and hold no value" || bad "TRACEPARENT spans"

cli run --help
[ $rc -eq 0 ] && grep -q -- "--secret NAME" "$work/out" && grep -q -- "--secret-file NAME=PATH" "$work/out" &&
	grep -q -- "--no-redact-output" "$work/out" && grep -q "replaced by <redacted>" "$work/out" &&
	grep -q -- "--audit-log PATH" "$work/out" && ok "run --help documents secrets and redaction" ||
	bad "run --help secrets"

cli exec --help
[ $rc -eq 0 ] && grep -q -- "--secret NAME" "$work/out" && grep -q -- "--no-redact-output" "$work/out" &&
	ok "exec --help documents secrets" || bad "exec --help secrets"

# --- misc ---

cli --version
[ $rc -eq 0 ] && grep -q "^sandboxio [0-9]" "$work/out" && ok "--version" || bad "--version"

cli run --help
[ $rc -eq 0 ] && grep -q "usage: sandboxio run" "$work/out" && ok "run --help" || bad "run --help"

cli help
[ $rc -eq 0 ] && grep -q "usage: sandboxio" "$work/out" && ok "help" || bad "help"

cli help reap
[ $rc -eq 0 ] && grep -q "usage: sandboxio reap" "$work/out" && ok "help reap" || bad "help reap"

cli run --help
[ $rc -eq 0 ] && grep -q -- "--lifetime S" "$work/out" && grep -q "plus 30 s" "$work/out" &&
	ok "run --help documents --lifetime and the margin" || bad "run --help --lifetime"

# --- nothing of this run's tenants is left ---

for t in $tenants; do
	leftover=$(tenant_containers "$t")
	if [ -z "$leftover" ]; then
		ok "no container of tenant $t is left"
	else
		bad "containers of $t left: $leftover"
		docker rm -f $leftover >/dev/null 2>&1
	fi
done

echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
