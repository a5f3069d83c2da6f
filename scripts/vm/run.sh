#!/bin/sh
# run.sh: the job of the test guest, copied onto its job disk by
# scripts/vm.sh and run by sbx-job.service once dockerd is up.
#
# /job/mode holds two words: the job (smoke or full) and the cgroup
# hierarchy the guest must be on (v2 or v1). The hierarchy is asserted
# first, so that a run can never pass on the wrong one by accident; then
# that dockerd reports the same cgroup version and the systemd driver.
# Everything goes to /job/log and the console; the exit status goes to
# /job/status, which the host reads after the guest has powered off.
# The guest has no network: the default image comes as a root file system
# tarball that the host built with scripts/mkimage.sh (/job/image.tar),
# imported by `sandboxio image build` itself through SANDBOXIO_MKIMAGE.
set -u
read -r job hier </job/mode

step() { echo "SBXVM: $*"; }
fail() {
	echo "SBXVM: FAIL: $*"
	exit 1
}

main() {
	step "job $job, hierarchy $hier, kernel $(uname -r), $(nproc) CPUs"
	step "cmdline: $(cat /proc/cmdline)"
	fs=$(stat -fc %T /sys/fs/cgroup)
	case $hier in
	v2)
		[ "$fs" = cgroup2fs ] || fail "/sys/fs/cgroup is $fs, not cgroup2fs"
		! grep -q ' cgroup ' /proc/self/mounts || fail "a cgroup v1 hierarchy is mounted"
		;;
	v1)
		[ "$fs" = tmpfs ] || fail "/sys/fs/cgroup is $fs, not the tmpfs of v1"
		[ "$(stat -fc %T /sys/fs/cgroup/memory)" = cgroupfs ] ||
			fail "/sys/fs/cgroup/memory is not a cgroup v1 hierarchy"
		! grep -q ' cgroup2 ' /proc/self/mounts || fail "a cgroup2 hierarchy is mounted (hybrid)"
		;;
	*) fail "unknown hierarchy $hier" ;;
	esac
	step "cgroup hierarchy: $fs ($hier) asserted"

	i=0
	until docker info >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le 600 ] || fail "dockerd did not answer within 600 s"
		sleep 1
	done
	info=$(docker info --format '{{.CgroupVersion}} {{.CgroupDriver}}')
	want="${hier#v} systemd"
	[ "$info" = "$want" ] || fail "docker info reports cgroup '$info', want '$want'"
	step "docker info: cgroup version and driver '$info'"
	docker version --format 'docker {{.Server.Version}}'

	cd /job/src || fail "no /job/src"
	export SANDBOXIO_MKIMAGE=/job/mkimage-cached.sh
	case $job in
	smoke)
		make -j"$(nproc)" all build/tests/unit/cgroups/test_cgroups \
			build/tests/contract/test_docker_runs || fail "build"
		step "unit: cgroups"
		build/tests/unit/cgroups/test_cgroups || fail "unit tests of cgroups"
		SANDBOXIO_INIT="$PWD/build/sbx-init" build/sandboxio image build || fail "image build"
		step "contract: test_docker_runs"
		SANDBOXIO_INIT="$PWD/build/sbx-init" SBX_CLI="$PWD/build/sandboxio" \
			build/tests/contract/test_docker_runs || fail "contract test_docker_runs"
		;;
	full)
		step "scripts/test.sh"
		CI=true scripts/test.sh || fail "scripts/test.sh"
		;;
	*) fail "unknown job $job" ;;
	esac
	step "PASS"
}

rm -f /job/status /job/log
t0=$(date +%s)
# To the job disk and, line by line, to the console: the host's log of the
# serial port shows progress while the guest runs.
{
	(main)
	echo $? >/job/status.tmp
} 2>&1 | tee /job/log
rc=$(cat /job/status.tmp)
echo "SBXVM: job took $(($(date +%s) - t0)) s; exit $rc" | tee -a /job/log
mv /job/status.tmp /job/status
sync
