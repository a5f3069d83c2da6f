# sandboxio: plain GNU make, out of tree into build/ (build/san/ for sanitizers).
#   make            library (.a and .so), the sandboxio CLI and sbx-init
#   make test       unit tests and contract tests (contract tests need dockerd)
#   make check      -Werror build, tests, the same under ASan+UBSan, headertest,
#                   format check, layer, Returns lists and size checks, ABI check,
#                   fuzz smoke run
#   make bench      benchmarks against named peers (needs dockerd)
#   make fuzz       libFuzzer on every parser of outside bytes (clang;
#                   FUZZ_TIME seconds each); make fuzz-smoke, a short
#                   deterministic run of each, is part of check
#   make format     clang-format in place
#   make install    PREFIX=/usr/local (DESTDIR, LIBDIR, MANDIR, UNITDIR...)
#   make pkg-check  the installed library with pkg-config, the man pages
#                   against --help, the systemd units (part of check)
#   make deb        Debian packages into build/deb/ (debhelper, lintian)
#   make deb-check  installs them in a fresh Debian 12 (as root; mmdebstrap)
#   make fresh-check  scripts/test.sh in a fresh minimal Debian 12 (mmdebstrap,
#                   as root, against this host's dockerd)

PREFIX ?= /usr/local
LIBEXECDIR ?= $(PREFIX)/libexec/sandboxio
# Where `make install` puts the Python package: a directory on Debian's
# python3 path (/usr/lib/python3/dist-packages for PREFIX=/usr, else
# PREFIX/lib/python3.X/dist-packages).
PY_SITE ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/$(shell /usr/bin/python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])' 2>/dev/null || echo python3)/dist-packages)
CC ?= cc
SAN ?=
ifeq ($(SAN),)
B := build
else
B := build/san
endif

PKGS := libcurl jansson libnl-3.0 libnl-route-3.0 libnftables libprotobuf-c
WARN := -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wvla -Wswitch-enum -Wno-missing-field-initializers -Wno-format-truncation
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 $(WARN) -fPIC -fvisibility=hidden -fstack-protector-strong
CPPFLAGS += -D_GNU_SOURCE -Iinclude -I. -MMD -MP \
	-DSBX_LIBEXECDIR='"$(LIBEXECDIR)"' $(shell pkg-config --cflags $(PKGS))
ifneq ($(SAN),)
CFLAGS += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SAN)
else
CPPFLAGS += -D_FORTIFY_SOURCE=2
endif
LIBS := $(shell pkg-config --libs $(PKGS)) -lpthread
TEST_LIBS := $(shell pkg-config --libs libmicrohttpd libnghttp2 libarchive openssl) -lcmocka

LIB_SRC := $(wildcard util/*.c core/*.c engine/*.c cgroups/*.c netpolicy/*.c remote/*.c \
	remote/e2b/*.c remote/modal/*.c backends/*.c)
# remote/modal/modal.proto: the project's own subset of Modal's messages,
# compiled with protoc-c into build/gen/ (one copy, shared by both builds).
PROTO_SRC := $(wildcard remote/modal/*.proto)
PROTO_C := $(PROTO_SRC:%.proto=build/gen/%.pb-c.c)
PROTO_H := $(PROTO_SRC:%.proto=build/gen/%.pb-c.h)
LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o) $(PROTO_C:build/gen/%.c=$(B)/obj/gen/%.o)
CPPFLAGS += -Ibuild/gen
# server/: the E2B-compatible server of `sandboxio serve`, linked into the CLI.
CLI_SRC := $(wildcard cli/*.c server/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(B)/obj/%.o)
INIT_SRC := $(wildcard init/*.c) util/frame.c util/time.c
# sbx-init is static and never sanitized: it runs as PID 1 inside images that
# have none of the host's libraries.
INIT_OBJ := $(INIT_SRC:%.c=build/init-obj/%.o)

UNIT_SRC := $(wildcard tests/unit/*/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(UNIT_SRC))
CONTRACT_SRC := $(wildcard tests/contract/test_*.c)
CONTRACT_BIN := $(patsubst tests/contract/%.c,$(B)/tests/contract/%,$(CONTRACT_SRC))
# tests/canary/: the canary harness (a library the contract tests of every
# backend link) and its own tests, run with the contract tests.
CANARY_LIB := $(filter-out tests/canary/test_%.c,$(wildcard tests/canary/*.c))
CANARY_SRC := $(wildcard tests/canary/test_*.c)
CANARY_BIN := $(patsubst tests/canary/%.c,$(B)/tests/canary/%,$(CANARY_SRC))
TEST_SUPPORT := $(wildcard tests/support/*.c) $(CANARY_LIB)

all: $(B)/libsandboxio.a $(B)/libsandboxio.so $(B)/sandboxio build/sbx-init build/sbx-resolv.conf \
	build/sbx-egress

# Every sandbox's /etc/resolv.conf: no name server.
build/sbx-resolv.conf: init/resolv.conf
	@mkdir -p build
	cp $< $@

# V=1 shows the commands.
Q := $(if $(V),,@)

build/gen/%.pb-c.c build/gen/%.pb-c.h: %.proto
	@mkdir -p build/gen
	$(Q)protoc-c --c_out=build/gen $<

# The code contexts' driver (core/interp-driver.py), embedded by core/interp.c
# as one C string.
build/gen/core/interp-driver.h: core/interp-driver.py
	@mkdir -p build/gen/core
	$(Q)sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@.tmp && mv $@.tmp $@
$(B)/obj/core/interp.o build/fuzz/obj/core/interp.o: build/gen/core/interp-driver.h

# The egress presets (share/sandboxio/presets/egress.conf), compiled into
# netpolicy/preset.c as one C string.
build/gen/netpolicy/presets-text.h: share/sandboxio/presets/egress.conf
	@mkdir -p build/gen/netpolicy
	$(Q)sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@.tmp && mv $@.tmp $@
$(B)/obj/netpolicy/preset.o build/fuzz/obj/netpolicy/preset.o: build/gen/netpolicy/presets-text.h

# Generated code is compiled without -Werror's stricter prototype checks.
$(B)/obj/gen/%.o: build/gen/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(filter-out -Wmissing-prototypes -Wswitch-enum,$(CFLAGS)) -c -o $@ $<

$(LIB_SRC:%.c=$(B)/obj/%.o): | $(PROTO_H)
# A .proto may import another: its generated code needs every header first.
$(PROTO_C:build/gen/%.c=$(B)/obj/gen/%.o): | $(PROTO_H)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

build/init-obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (init)")
	$(Q)$(CC) -D_GNU_SOURCE -I. -MMD -MP -std=gnu11 $(WARN) -O2 -g -c -o $@ $<

$(B)/libsandboxio.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/libsandboxio.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libsandboxio.so.0 $(LDFLAGS) -o $@ $^ $(LIBS)

# The CLI's `serve` speaks HTTP through libmicrohttpd, checks signed URLs
# with libcrypto's SHA-256 and inflates gzip bodies with zlib.
SERVE_LIBS := $(shell pkg-config --libs libmicrohttpd libcrypto zlib)
# `cp` reads and writes its tar streams with libarchive.
SERVE_LIBS += $(shell pkg-config --libs libarchive)
$(B)/sandboxio-full: $(CLI_OBJ) $(B)/libsandboxio.a
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(B)/libsandboxio.a $(LIBS) $(SERVE_LIBS)

# The command users call (cli/front/main.c): exec through the daemon in a
# program of libc and jansson alone, sandboxio-full for everything else.
# A use of the engine's libraries by these objects fails the link.
FRONT_OBJ := $(addprefix $(B)/obj/cli/,front/main.o options.o output.o signals.o io.o dclient.o \
	dproto.o report.o)
$(B)/sandboxio: $(FRONT_OBJ) $(B)/libsandboxio.a $(B)/sandboxio-full
	$(CC) $(LDFLAGS) -Wl,--as-needed -o $@ $(FRONT_OBJ) $(B)/libsandboxio.a \
		$(shell pkg-config --libs jansson)

build/sbx-init: $(INIT_OBJ)
	$(CC) -static -o $@ $^ -lseccomp -lcap

# sbx-egress, the name checker of allow_host entries (cli/egress/): a host
# process per sandbox, found beside sbx-init (or $$SANDBOXIO_EGRESS).
EGRESS_SRC := $(wildcard cli/egress/*.c)
EGRESS_OBJ := $(EGRESS_SRC:%.c=$(B)/obj/%.o)
build/sbx-egress: $(EGRESS_OBJ) $(B)/libsandboxio.a
	@mkdir -p build
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(EGRESS_OBJ) $(B)/libsandboxio.a $(LIBS)

# The init's I/O-free parts, linked into its unit tests and the engine's (whose
# scripted init parses the host's requests with them), and fuzzed.
INIT_PURE_SRC := init/request.c

$(B)/tests/unit/%: tests/unit/%.c $(B)/libsandboxio.a $(TEST_SUPPORT) $(INIT_PURE_SRC)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CCLD    $@")
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_SUPPORT) $(if $(filter $(B)/tests/unit/init/% $(B)/tests/unit/engine/%,$@),$(INIT_PURE_SRC)) $(B)/libsandboxio.a $(LIBS) $(TEST_LIBS)

$(B)/tests/contract/%: tests/contract/%.c $(B)/libsandboxio.a $(TEST_SUPPORT)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CCLD    $@")
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_SUPPORT) $(B)/libsandboxio.a $(LIBS) $(TEST_LIBS)

# The local engine on Podman, rootful and rootless (tests/contract/run-podman.sh;
# as root, with podman installed by scripts/setup.sh).
contract-podman: $(CONTRACT_BIN) $(B)/sandboxio build/sbx-init build/sbx-resolv.conf
	SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio \
		bash tests/contract/run-podman.sh $(B)

unit: $(UNIT_BIN) build/sbx-init build/sbx-resolv.conf
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done
	@echo "== $(B)/tests/unit/init/test_init_chan under gVisor (runsc do)"
	@SBX_INIT_KERNEL=gvisor SANDBOXIO_INIT=$(CURDIR)/tests/support/in-gvisor.sh \
		$(B)/tests/unit/init/test_init_chan

$(B)/tests/canary/%: tests/canary/%.c $(B)/libsandboxio.a $(TEST_SUPPORT)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CCLD    $@")
	$(Q)$(CC) $(CPPFLAGS) -Itests $(CFLAGS) $(LDFLAGS) -o $@ $< $(TEST_SUPPORT) $(B)/libsandboxio.a $(LIBS) $(TEST_LIBS)

contract: $(CANARY_BIN) $(CONTRACT_BIN) $(B)/sandboxio build/sbx-init build/sbx-resolv.conf \
	build/sbx-egress
	@set -e; for t in $(CANARY_BIN) $(CONTRACT_BIN); do echo "== $$t"; \
		SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio $$t; done
	@set -e; for t in test_controls test_docker_egress test_docker_egress_names \
		test_docker_defaults test_docker_secrets test_docker_root test_docker_teardown \
		test_docker_runs test_docker_pause; do \
		echo "== $(B)/tests/contract/$$t on the gvisor tier (runsc, registered by setup.sh)"; \
		SBX_TEST_TIER=gvisor SANDBOXIO_INIT=$(CURDIR)/build/sbx-init \
		SBX_CLI=$(CURDIR)/$(B)/sandboxio $(B)/tests/contract/$$t; done
	@echo "== tests/cli/test_cli.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/cli/test_cli.sh
	@echo "== tests/cli/test_presets.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/cli/test_presets.sh
	@echo "== tests/cli/test_code.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/cli/test_code.sh
	@echo "== tests/cli/test_exec_tty.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/cli/test_exec_tty.sh
	@echo "== tests/cli/test_serve_e2b.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/cli/test_serve_e2b.sh
	@echo "== tests/cli/test_serve_e2b_life.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/cli/test_serve_e2b_life.sh
	@echo "== tests/cli/test_serve_load.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/cli/test_serve_load.sh
	@echo "== tests/cli/test_daemon.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/cli/test_daemon.sh
	@echo "== tests/cli/test_pause.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/cli/test_pause.sh
	@echo "== tests/cli/test_cp.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/cli/test_cp.sh
	@echo "== tests/sdk/run-e2b.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/sdk/run-e2b.sh
	@echo "== tests/sdk/run-modal.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/sdk/run-modal.sh
	@echo "== tests/sdk/run-mcp.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/sdk/run-mcp.sh
	@echo "== tests/fakes/modal/test_double.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/fakes/modal/test_double.sh
	@echo "== tests/contract/run-remote.sh"
	@SANDBOXIO_INIT=$(CURDIR)/build/sbx-init SBX_CLI=$(CURDIR)/$(B)/sandboxio bash tests/contract/run-remote.sh $(B)
	@echo "== tests/contract/run-no-engine.sh"
	@sh tests/contract/run-no-engine.sh $(B)

test: all unit contract

headertest:
	@mkdir -p build
	printf '#include <sandboxio.h>\nint main(void){return sbx_version()==0;}\n' > build/headertest.c
	$(CC) -std=c99 -pedantic -Wall -Wextra -Werror -Iinclude -c -o build/headertest.o build/headertest.c
	cp build/headertest.c build/headertest.cc
	c++ -std=c++11 -pedantic -Wall -Wextra -Werror -Iinclude -c -o build/headertest-cc.o build/headertest.cc

FMT_SRC = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format:
	clang-format -i $(FMT_SRC)
format-check:
	clang-format --dry-run --Werror $(FMT_SRC)

abi-check: $(B)/libsandboxio.so
	nm -D --defined-only $(B)/libsandboxio.so | awk '$$2=="T"{print $$3}' | sort > build/abi.txt
	diff -u docs/abi.txt build/abi.txt

# Includes and symbol uses point down the layers, with no circles
# (docs/architecture.md; the rank table is in the script).
check-layers: all
	scripts/check-layers.sh $(B)

# Each public function's Returns list names exactly the codes its
# implementation can return (the method is in the script).
check-returns:
	scripts/check-returns.sh

# No source file over 1,000 lines; no function over 120 without a comment
# saying why it stays one.
check-sizes:
	scripts/check-sizes.sh

check: headertest format-check check-layers check-returns check-sizes
	tests/scripts/test_docker_runtime.sh
	$(MAKE) pkg-check
	$(MAKE) test
	if command -v podman >/dev/null; then $(MAKE) contract-podman; \
	else echo "contract-podman: skipped, podman is not installed (scripts/setup.sh)"; fi
	$(MAKE) python-test
	$(MAKE) abi-check
	$(MAKE) SAN=address,undefined test
	$(MAKE) fuzz-smoke

bench: all
	bench/run.sh

# The Python package (bindings/python/), over build/libsandboxio.so, and
# `sandboxio mcp` as a process (tests/mcp/); the tests marked "engine" need
# dockerd, as the contract tests do. Debian's python3 with python3-pytest.
PYTHON3 ?= /usr/bin/python3
python-test: all
	PYTHONPATH=bindings/python SBX_CLI=$(CURDIR)/build/sandboxio $(PYTHON3) -m pytest -q \
		-p no:cacheprovider bindings/python/tests tests/mcp

fresh-check:
	scripts/fresh-check.sh

# The suite in a Debian 12 guest of its own, on cgroup v2 only (as root; KVM;
# scripts/vm.sh says what it builds and caches under build/vm/).
# VM_ARGS: --smoke, --v1, --tcg.
check-vm:
	scripts/vm.sh $(VM_ARGS)

# Fuzzing (libFuzzer, clang): one target for every parser of bytes from
# outside the process, tests/fuzz/fuzz_<name>.c (docs/fuzzing.md). The
# library (and the server, server/, for its parsers) is compiled once more with
# coverage and ASan+UBSan into build/fuzz/, and each target links what it
# uses of it. `make fuzz` runs each for FUZZ_TIME seconds from its committed
# corpus (tests/fuzz/corpus/<name>/); `make fuzz-smoke` (part of check)
# replays every tests/fuzz/regress/<name>-* input, then each corpus and on to
# FUZZ_RUNS executions in all with a fixed seed, failing on any crash.
FUZZ_TIME ?= 20
FUZZ_RUNS ?= 2000
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -std=gnu11 -g -O1 -Wall -Wno-unused-function -fno-omit-frame-pointer $(FUZZ_SAN) -D_GNU_SOURCE \
	-Iinclude -I. -Ibuild/gen -DSBX_LIBEXECDIR='"$(LIBEXECDIR)"' \
	$(shell pkg-config --cflags $(PKGS))
FUZZ_NAMES := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_NAMES:%=build/fuzz/fuzz_%)
FUZZ_LIB_SRC := $(LIB_SRC) $(filter-out cli/main.c,$(CLI_SRC))
FUZZ_OBJ := $(FUZZ_LIB_SRC:%.c=build/fuzz/obj/%.o) $(PROTO_C:build/gen/%.c=build/fuzz/obj/gen/%.o)
# Sources a target needs besides the library: the init's parser.
FUZZ_EXTRA_init := $(INIT_PURE_SRC)
# Options of a target's own smoke run, where one needs them:
# FUZZ_SMOKE_OPTS_<name>.

build/fuzz/obj/%.o: %.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (fuzz)")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<
build/fuzz/obj/gen/%.o: build/gen/%.c | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<
build/fuzz/libsbx-fuzz.a: $(FUZZ_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c build/fuzz/libsbx-fuzz.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CCLD    $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -MMD -MP -MF $@.d -Itests -o $@ $< $(FUZZ_EXTRA_$*) \
		build/fuzz/libsbx-fuzz.a $(LIBS) $(SERVE_LIBS)
build/fuzz/make_seeds: tests/fuzz/make_seeds.c util/frame.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -D_GNU_SOURCE -I. -o $@ $^

fuzz: $(FUZZ_BIN)
	@set -e; for n in $(FUZZ_NAMES); do echo "== fuzz_$$n"; mkdir -p build/fuzz/corpus/$$n; \
		d=; [ -f tests/fuzz/$$n.dict ] && d=-dict=tests/fuzz/$$n.dict; \
		build/fuzz/fuzz_$$n -max_total_time=$(FUZZ_TIME) -max_len=300000 -print_final_stats=1 \
			-artifact_prefix=build/fuzz/ $$d build/fuzz/corpus/$$n tests/fuzz/corpus/$$n; done

fuzz-smoke: $(FUZZ_NAMES:%=fuzz-smoke-%)
fuzz-smoke-%: build/fuzz/fuzz_%
	@echo "== fuzz_$*"
	@set -e; r=$$(ls tests/fuzz/regress/$*-* 2>/dev/null || true); \
	if [ -n "$$r" ]; then build/fuzz/fuzz_$* -runs=1 $$r >build/fuzz/$*.log 2>&1 || \
		{ tail -40 build/fuzz/$*.log; exit 1; }; fi; \
	d=; [ -f tests/fuzz/$*.dict ] && d=-dict=tests/fuzz/$*.dict; \
	rm -rf build/fuzz/smoke/$* && mkdir -p build/fuzz/smoke/$*; \
	build/fuzz/fuzz_$* -runs=$(FUZZ_RUNS) -seed=1 -max_len=300000 $(FUZZ_SMOKE_OPTS_$*) \
		-artifact_prefix=build/fuzz/ $$d build/fuzz/smoke/$* tests/fuzz/corpus/$* \
		>build/fuzz/$*.log 2>&1 || { tail -40 build/fuzz/$*.log; exit 1; }; \
	grep -h '^Done' build/fuzz/$*.log

# The one version source is include/sandboxio/common.h: the .so's name, the
# .pc file, the man pages and the Debian packages take it from there.
VERSION := $(shell sed -n 's/^\#define SBX_VERSION_STRING "\(.*\)"/\1/p' include/sandboxio/common.h)
SOMAJOR := 0
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions

# The man pages: sandboxio(1) from the command's own --help texts,
# sandboxio-config(5) and libsandboxio(3) from packaging/man/ (scripts/mkman.sh).
MAN_PAGES := build/man/sandboxio.1 build/man/sandboxio-config.5 build/man/libsandboxio.3
man: build/man/.stamp
build/man/.stamp: $(B)/sandboxio scripts/mkman.sh $(wildcard packaging/man/*)
	scripts/mkman.sh $(B)/sandboxio $(VERSION) build/man
	@touch $@
# The bash completion, from the same help texts (scripts/mkcompletion.sh).
build/sandboxio.bash: $(B)/sandboxio scripts/mkcompletion.sh
	scripts/mkcompletion.sh $(B)/sandboxio $@

# sandboxio.pc is written for the PREFIX of this install; its private
# libraries are the ones the library links (LIBS), named directly rather
# than as Requires.private, so that `pkg-config --static` links
# libsandboxio.a against the shared curl, jansson, libnl, nftables and
# protobuf-c (Debian ships no static libraries of curl's own dependencies).
install: all build/man/.stamp build/sandboxio.bash
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/sandboxio \
		$(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(BASHCOMPDIR)
	install -m 0755 $(B)/sandboxio $(DESTDIR)$(BINDIR)/
	install -m 0644 $(B)/libsandboxio.a $(DESTDIR)$(LIBDIR)/
	install -m 0644 $(B)/libsandboxio.so $(DESTDIR)$(LIBDIR)/libsandboxio.so.$(VERSION)
	ln -sf libsandboxio.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libsandboxio.so.$(SOMAJOR)
	ln -sf libsandboxio.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libsandboxio.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' -e 's|@LIBS_PRIVATE@|$(strip $(LIBS))|' \
		packaging/sandboxio.pc.in >$(DESTDIR)$(PKGCONFIGDIR)/sandboxio.pc
	chmod 0644 $(DESTDIR)$(PKGCONFIGDIR)/sandboxio.pc
	install -m 0755 build/sbx-init $(DESTDIR)$(LIBEXECDIR)/sbx-init
	install -m 0755 build/sbx-egress $(DESTDIR)$(LIBEXECDIR)/sbx-egress
	install -m 0755 $(B)/sandboxio-full $(DESTDIR)$(LIBEXECDIR)/sandboxio-full
	install -m 0644 build/sbx-resolv.conf $(DESTDIR)$(LIBEXECDIR)/sbx-resolv.conf
	install -m 0755 scripts/mkimage.sh $(DESTDIR)$(LIBEXECDIR)/mkimage.sh
	install -m 0644 include/sandboxio.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 0644 include/sandboxio/*.h $(DESTDIR)$(INCLUDEDIR)/sandboxio/
	install -m 0644 build/man/sandboxio.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 build/man/libsandboxio.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 0644 build/man/sandboxio-config.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 build/sandboxio.bash $(DESTDIR)$(BASHCOMPDIR)/sandboxio
	install -d $(DESTDIR)$(PREFIX)/share/sandboxio/presets
	install -m 0644 share/sandboxio/presets/egress.conf $(DESTDIR)$(PREFIX)/share/sandboxio/presets/
	for u in sandboxio-serve.service sandboxio-daemon.service sandboxio-reap.service \
		sandboxio-reap.timer; do \
		sed 's|/usr/bin/sandboxio|$(BINDIR)/sandboxio|' packaging/systemd/$$u \
			>$(DESTDIR)$(UNITDIR)/$$u && chmod 0644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; done
	install -d $(DESTDIR)$(PY_SITE)/sandboxio
	install -m 0644 bindings/python/sandboxio/*.py $(DESTDIR)$(PY_SITE)/sandboxio/

# The installed library, header and .pc file, used as a C program would:
# install into a scratch prefix, compile the README's example with
# pkg-config (shared and static) and run it against a missing socket. The
# man pages against --help and the options each command accepts; the
# systemd units; the bash completion.
pkg-check: all build/man/.stamp
	tests/pkg/test_pkgconfig.sh
	tests/pkg/test_man.sh $(B)/sandboxio build/man
	tests/pkg/test_units.sh $(B)/sandboxio
	tests/pkg/test_completion.sh $(B)/sandboxio

# Debian packages (debhelper): sandboxio, libsandboxio0, libsandboxio-dev,
# built from a copy of the tree under build/deb/, where they are left
# (scripts/mkdeb.sh). deb-check installs them in a fresh Debian 12
# (scripts/deb-check.sh; as root).
deb:
	scripts/mkdeb.sh
deb-check:
	scripts/deb-check.sh

clean:
	rm -rf build

.PHONY: all unit contract contract-podman test headertest format format-check abi-check check check-vm bench fuzz \
	fuzz-smoke install pkg-check man deb deb-check clean fresh-check check-layers check-returns \
	check-sizes python-test
# Dependency files of this tree's builds only: not of the copies and root file
# systems that deb, deb-check, fresh-check and check-vm (the test guest's
# files) make under build/ (whose folders, such as etc/dpkg/dpkg.cfg.d, end
# in .d too).
-include $(shell find build \( -path build/deb -o -path build/deb-check -o -path build/fresh \
	-o -path build/vm \) -prune -o -name '*.d' -type f -print 2>/dev/null)
