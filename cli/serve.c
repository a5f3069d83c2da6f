/*
 * cli/serve.c: `sandboxio serve --api e2b`: options, the API key file, the
 * ready line, signals and shutdown, around the server of server/ (its
 * listening socket, routes and semantics; server/server.h).
 *
 * Arguments are all checked before anything is touched (a refused --listen
 * creates no key file and opens no engine). The key is never printed: a
 * missing key file is created 0600 with O_EXCL from getrandom, and an
 * existing one must be a regular file of the effective user that nobody
 * else may read or write, as the audit log and the operator config must
 * be. A non-loopback address is refused unless --allow-non-loopback says
 * the operator means it, and even then a warning says what it exposes. The
 * ready line names the address the socket got (port 0 picks a free one).
 *
 * SIGINT, SIGTERM and SIGHUP are blocked before any thread exists, so every
 * thread (the engine's, libmicrohttpd's, the server's workers) inherits the
 * mask and the main thread alone takes them, in sbxs_run(), between sweeps
 * that close expired sandboxes. A signal closes every sandbox and exits 0:
 * stopping is this command's normal end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "server/server.h"

#define SERVE_DEFAULT_LISTEN "127.0.0.1:3000"
#define SERVE_DEFAULT_MAX_TIMEOUT_S 3600u /* E2B's ceiling for its Hobby tier */
#define SERVE_KEY_MAX 256
#define SERVE_DEFAULT_MAX_CONNS 1024u
#define SERVE_DEFAULT_MAX_CLIENT_CONNS 64u
#define SERVE_DEFAULT_AUTH_TIMEOUT_S 10u
#define SERVE_IDLE_TIMEOUT_S 640u /* an authenticated connection's idle bound */
#define SERVE_DEFAULT_TRANSFER_S 60u

static const char usage_serve[] =
	"usage: sandboxio [GLOBAL OPTIONS] serve --api e2b [--listen ADDR:PORT]\n"
	"                 [--api-key-file PATH] [--allow-non-loopback] [--max-timeout S]\n"
	"                 [--max-connections N] [--max-client-connections N]\n"
	"                 [--auth-timeout S] [--transfer-timeout S] [--tier T]\n"
	"                 [--e2b-image IMAGE|none] [--no-e2b-root]\n"
	"                 [--pause-max S]\n"
	"\n"
	"Serves an E2B-compatible API (the REST control plane and the envd process\n"
	"and file endpoints, on one listener) backed by this host's Docker engine, so\n"
	"that E2B's own SDKs run their sandboxes here: point them at the server with\n"
	"E2B_API_URL=http://ADDR:PORT, E2B_SANDBOX_URL=http://ADDR:PORT and\n"
	"E2B_API_KEY=<the key in the key file>. When it listens it prints one line,\n"
	"'ready http://ADDR:PORT', on stdout. SIGINT, SIGTERM or SIGHUP closes every\n"
	"sandbox it made and exits 0.\n"
	"\n"
	"options:\n"
	"  --api e2b            the API to serve (required; e2b is the only one)\n"
	"  --listen ADDR:PORT   address to listen on; default " SERVE_DEFAULT_LISTEN "; port 0\n"
	"                       picks a free port ([::1]:PORT for IPv6)\n"
	"  --api-key-file PATH  the key every REST call must send as X-API-Key; default\n"
	"                       $XDG_CONFIG_HOME/sandboxio/e2b-api-key (~/.config/...).\n"
	"                       A missing file is created 0600 with a new key\n"
	"                       (e2b_ and 40 hex digits; never printed); an existing one\n"
	"                       must be a regular file of the effective user that grants\n"
	"                       group and others nothing\n"
	"  --allow-non-loopback listen on an address other than loopback. Anyone who\n"
	"                       reaches it with the key runs code on this host's Docker\n"
	"                       engine, and the API is plain HTTP: the key, commands and\n"
	"                       outputs travel unencrypted\n"
	"  --max-timeout S      ceiling of a sandbox's timeout; default 3600 s\n"
	"  --pause-max S        how long a paused sandbox is kept before it is removed\n"
	"                       (its timeout does not count while paused); default and\n"
	"                       most: the operator config's ceilings.pause (1 h)\n"
	"  --max-connections N  connections served at once (a thread each); default 1024\n"
	"  --max-client-connections N\n"
	"                       of those, from one client address; default 64\n"
	"  --auth-timeout S     time from a connection's accept to its first\n"
	"                       authenticated request; default 10 s (then 640 s idle)\n"
	"  --transfer-timeout S deadline of one file download or upload in a sandbox;\n"
	"                       default 60 s\n"
	"  --tier T             the least isolation of every sandbox it makes:\n"
	"                       container (default) or gvisor (runsc registered with\n"
	"                       dockerd; 'sandboxio doctor' shows it). A create the\n"
	"                       host cannot give that tier is refused with the reason;\n"
	"                       the operator config's min_tier still applies above it\n"
	"  --e2b-image IMAGE|none\n"
	"                       template 'base' as E2B's flavour: this image (build\n"
	"                       " CLI_E2B_IMAGE " with 'sandboxio image build --recipe\n"
	"                       e2b'), whose commands run as user 'user' in\n"
	"                       /home/user, and as the sandbox's root for envd's user\n"
	"                       'root': uid 0 with no capability, the same seccomp\n"
	"                       filters and no-new-privileges (sudo gains nothing).\n"
	"                       Default none: 'base' is the default image and root is\n"
	"                       refused\n"
	"  --no-e2b-root        refuse envd's user 'root' in the e2b flavour too\n"
	"global options --json, --socket, --hosts-file, --config and --audit-log apply\n"
	"to the sandboxes it makes, as for 'sandboxio create'; they may also follow\n"
	"'serve'.\n"
	"\n"
	"How E2B maps here: templateID absent or 'base' is the default image\n"
	"(" CLI_DEFAULT_IMAGE " or the operator config's) or the --e2b-image, 'code-\n"
	"interpreter-v1' the default image, another templateID a local\n"
	"image; timeout (default 15 s) is the sandbox's lifetime, which\n"
	"POST /sandboxes/ID/timeout may shorten, or extend up to that lifetime, never\n"
	"beyond; without any deny control the network is open (as E2B's is), with\n"
	"allow_internet_access false or denyOut 0.0.0.0/0 only allowOut is reachable.\n"
	"Fields this server cannot honour (autoPause, mcp, volumeMounts,\n"
	"network.rules, ...) are refused with 400, never ignored. One command runs at\n"
	"a time per sandbox; stopping a running command (a signal, or a client that\n"
	"goes away) ends the whole sandbox, since Docker cannot kill one exec.\n";

void cli_serve_usage(int to_stderr)
{
	FILE *f = to_stderr ? stderr : stdout;

	fputs(usage_serve, f);
	fflush(f);
}

struct serve_args {
	const char *api;
	const char *listen;
	const char *key_file;
	const char *max_timeout;
	const char *pause_max;
	const char *max_conns, *max_client_conns, *auth_timeout, *transfer_timeout;
	const char *tier;
	const char *e2b_image;
	int allow_non_loopback, no_root;
};

enum serve_opt {
	SO_API,
	SO_LISTEN,
	SO_KEY_FILE,
	SO_NON_LOOPBACK,
	SO_MAX_TIMEOUT,
	SO_PAUSE_MAX,
	SO_MAX_CONNS,
	SO_MAX_CLIENT_CONNS,
	SO_AUTH_TIMEOUT,
	SO_TRANSFER_TIMEOUT,
	SO_TIER,
	SO_E2B_IMAGE,
	SO_NO_ROOT,
	SO_JSON,
	SO_SOCKET,
	SO_HOSTS_FILE,
	SO_CONFIG,
	SO_AUDIT_LOG,
	SO_HELP
};

static const struct {
	const char *name;
	enum serve_opt id;
	int has_arg;
} serve_opts[] = {
	{"api", SO_API, 1},
	{"listen", SO_LISTEN, 1},
	{"api-key-file", SO_KEY_FILE, 1},
	{"allow-non-loopback", SO_NON_LOOPBACK, 0},
	{"max-timeout", SO_MAX_TIMEOUT, 1},
	{"pause-max", SO_PAUSE_MAX, 1},
	{"max-connections", SO_MAX_CONNS, 1},
	{"max-client-connections", SO_MAX_CLIENT_CONNS, 1},
	{"auth-timeout", SO_AUTH_TIMEOUT, 1},
	{"transfer-timeout", SO_TRANSFER_TIMEOUT, 1},
	{"tier", SO_TIER, 1},
	{"e2b-image", SO_E2B_IMAGE, 1},
	{"no-e2b-root", SO_NO_ROOT, 0},
	{"json", SO_JSON, 0},
	{"socket", SO_SOCKET, 1},
	{"hosts-file", SO_HOSTS_FILE, 1},
	{"config", SO_CONFIG, 1},
	{"audit-log", SO_AUDIT_LOG, 1},
	{"help", SO_HELP, 0},
};

static void store(struct cli_opts *o, struct serve_args *a, enum serve_opt id, const char *val)
{
	switch (id) {
	case SO_API:
		a->api = val;
		break;
	case SO_LISTEN:
		a->listen = val;
		break;
	case SO_KEY_FILE:
		a->key_file = val;
		break;
	case SO_NON_LOOPBACK:
		a->allow_non_loopback = 1;
		break;
	case SO_MAX_TIMEOUT:
		a->max_timeout = val;
		break;
	case SO_PAUSE_MAX:
		a->pause_max = val;
		break;
	case SO_MAX_CONNS:
		a->max_conns = val;
		break;
	case SO_MAX_CLIENT_CONNS:
		a->max_client_conns = val;
		break;
	case SO_AUTH_TIMEOUT:
		a->auth_timeout = val;
		break;
	case SO_TRANSFER_TIMEOUT:
		a->transfer_timeout = val;
		break;
	case SO_TIER:
		a->tier = val;
		break;
	case SO_E2B_IMAGE:
		a->e2b_image = val;
		break;
	case SO_NO_ROOT:
		a->no_root = 1;
		break;
	case SO_JSON:
		o->json = 1;
		break;
	case SO_SOCKET:
		o->socket = val;
		break;
	case SO_HOSTS_FILE:
		o->hosts_file = val;
		break;
	case SO_CONFIG:
		o->config = val;
		break;
	case SO_AUDIT_LOG:
		o->audit_log = val;
		break;
	case SO_HELP:
		o->help = 1;
		break;
	}
}

/* "--opt value" and "--opt=value", as the other commands take them
 * (cli/options.c); serve takes no arguments besides its options. */
static int parse_args(struct cli_opts *o, struct serve_args *a, int argc, char **argv, int i)
{
	while (i < argc) {
		const char *arg = argv[i], *name, *eq, *val = NULL;
		size_t nlen, k, hit = SIZE_MAX;

		if (strcmp(arg, "-h") == 0) {
			o->help = 1;
			i++;
			continue;
		}
		if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
			cli_print_error(o, SBX_EINVALID, "serve takes no arguments (got '%.64s')",
					arg);
			return CLI_EXIT_FAIL;
		}
		name = arg + 2;
		eq = strchr(name, '=');
		nlen = eq ? (size_t)(eq - name) : strlen(name);
		for (k = 0; k < sizeof(serve_opts) / sizeof(serve_opts[0]); k++)
			if (strlen(serve_opts[k].name) == nlen &&
			    strncmp(serve_opts[k].name, name, nlen) == 0)
				hit = k;
		if (hit == SIZE_MAX) {
			cli_print_error(
				o, SBX_EINVALID,
				"unknown option %.*s for 'serve' (see 'sandboxio serve --help')",
				(int)(nlen + 2), arg);
			return CLI_EXIT_FAIL;
		}
		i++;
		if (serve_opts[hit].has_arg) {
			if (eq) {
				val = eq + 1;
			} else if (i < argc) {
				val = argv[i++];
			} else {
				cli_print_error(o, SBX_EINVALID, "option --%s needs a value",
						serve_opts[hit].name);
				return CLI_EXIT_FAIL;
			}
		} else if (eq) {
			cli_print_error(o, SBX_EINVALID, "option --%s takes no value",
					serve_opts[hit].name);
			return CLI_EXIT_FAIL;
		}
		store(o, a, serve_opts[hit].id, val);
	}
	return 0;
}

/* A whole number from lo to hi (decimal digits only); -1 otherwise. */
static int parse_count(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 9)
		return -1;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* A duration of whole seconds from lo to hi ("10", "10s", "2m"); -1 otherwise. */
static int parse_seconds_opt(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	uint64_t ms;

	if (sbx_parse_duration_ms(&ms, s) < 0 || ms % 1000 || ms / 1000 < lo || ms / 1000 > hi)
		return -1;
	*out = (unsigned)(ms / 1000);
	return 0;
}

/* ===== The listening address ===== */

struct listen_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	int family;
	int loopback;
	char host[INET6_ADDRSTRLEN + 2]; /* as the ready line shows it: [::1] */
};

/*
 * ADDR:PORT with an IPv4 address, [IPv6]:PORT, or localhost:PORT. Names
 * other than localhost are refused rather than resolved: the address a
 * server exposes itself on should be the one written.
 */
static int parse_listen(const char *spec, struct listen_addr *la)
{
	char addr[INET6_ADDRSTRLEN];
	const char *port_s, *end;
	unsigned long port = 0;
	size_t alen;

	memset(la, 0, sizeof(*la));
	if (spec[0] == '[') {
		end = strchr(spec, ']');
		if (!end || end[1] != ':')
			return -1;
		alen = (size_t)(end - spec - 1);
		if (alen == 0 || alen >= sizeof(addr))
			return -1;
		memcpy(addr, spec + 1, alen);
		addr[alen] = '\0';
		port_s = end + 2;
		la->family = AF_INET6;
	} else {
		end = strrchr(spec, ':');
		if (!end)
			return -1;
		alen = (size_t)(end - spec);
		if (alen == 0 || alen >= sizeof(addr))
			return -1;
		memcpy(addr, spec, alen);
		addr[alen] = '\0';
		if (strchr(addr, ':'))
			return -1;
		if (strcmp(addr, "localhost") == 0)
			strcpy(addr, "127.0.0.1");
		port_s = end + 1;
		la->family = AF_INET;
	}
	if (!*port_s || strlen(port_s) > 5)
		return -1;
	for (const char *p = port_s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		port = port * 10 + (unsigned long)(*p - '0');
	}
	if (port > 65535)
		return -1;
	if (la->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&la->ss;

		if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1)
			return -1;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		la->len = sizeof(*sin);
		la->loopback = (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
		snprintf(la->host, sizeof(la->host), "%s", addr);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&la->ss;

		if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) != 1)
			return -1;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		la->len = sizeof(*sin6);
		la->loopback = IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr) ||
			       (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) &&
				sin6->sin6_addr.s6_addr[12] == 127);
		snprintf(la->host, sizeof(la->host), "[%s]", addr);
	}
	return 0;
}

/* ===== The API key file ===== */

/* $XDG_CONFIG_HOME/sandboxio/e2b-api-key, else ~/.config/sandboxio/... */
static int default_key_path(char *buf, size_t size, char *dir, size_t dsize)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	struct passwd *pw;
	int n;

	if (xdg && xdg[0] == '/') {
		n = snprintf(dir, dsize, "%s/sandboxio", xdg);
	} else {
		if (!home || home[0] != '/') {
			pw = getpwuid(geteuid());
			home = pw ? pw->pw_dir : NULL;
		}
		if (!home || home[0] != '/')
			return -1;
		n = snprintf(dir, dsize, "%s/.config/sandboxio", home);
	}
	if (n < 0 || (size_t)n >= dsize)
		return -1;
	n = snprintf(buf, size, "%s/e2b-api-key", dir);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* mkdir -p with 0700 for the directories it creates. */
static int make_dirs(const char *dir)
{
	char path[PATH_MAX];

	if (strlen(dir) >= sizeof(path))
		return -1;
	strcpy(path, dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(path, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/*
 * Creates the key file with a new key. Returns 1 when made, 0 when the file
 * appeared meanwhile (the caller reads it), -1 after reporting an error.
 */
static int generate_key(const struct cli_opts *o, const char *path)
{
	unsigned char raw[20];
	char key[64];
	size_t off = 0;
	int fd, rc = 1;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == EEXIST)
			return 0;
		cli_print_error(o, SBX_EDENIED, "serve: cannot create the API key file %s: %s",
				path, strerror(errno));
		return -1;
	}
	while (off < sizeof(raw)) {
		ssize_t n = getrandom(raw + off, sizeof(raw) - off, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			cli_print_error(o, SBX_ERROR, "serve: getrandom: %s", strerror(errno));
			rc = -1;
			goto out;
		}
		off += (size_t)n;
	}
	memcpy(key, "e2b_", 4);
	for (size_t k = 0; k < sizeof(raw); k++)
		snprintf(key + 4 + 2 * k, 3, "%02x", raw[k]);
	key[44] = '\n';
	if (cli_write_all(fd, key, 45) < 0 || fsync(fd) < 0) {
		cli_print_error(o, SBX_ERROR, "serve: cannot write the API key file %s: %s", path,
				strerror(errno));
		rc = -1;
	}
out:
	close(fd);
	if (rc < 0)
		unlink(path);
	explicit_bzero(raw, sizeof(raw));
	explicit_bzero(key, sizeof(key));
	return rc;
}

/*
 * Reads the key into key (NUL-terminated). Returns 0, 1 when the file does
 * not exist, or -1 after reporting why the file cannot be used.
 */
static int read_key(const struct cli_opts *o, const char *path, char *key, size_t size)
{
	char buf[SERVE_KEY_MAX + 8];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 1;
		cli_print_error(o, SBX_EDENIED, "serve: API key file %s: %s", path,
				errno == ELOOP ? "is a symbolic link; name the file itself"
					       : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		cli_print_error(o, SBX_EDENIED, "serve: API key file %s: %s", path,
				strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		cli_print_error(o, SBX_EDENIED, "serve: API key file %s is not a regular file",
				path);
		close(fd);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		cli_print_error(o, SBX_EDENIED,
				"serve: API key file %s is owned by uid %u, not by the effective "
				"user (uid %u)",
				path, (unsigned)st.st_uid, (unsigned)geteuid());
		close(fd);
		return -1;
	}
	if (st.st_mode & 077) {
		cli_print_error(o, SBX_EDENIED,
				"serve: API key file %s grants group or others access (mode "
				"%04o); it must be 0600 or stricter (chmod 600 %s)",
				path, (unsigned)(st.st_mode & 07777), path);
		close(fd);
		return -1;
	}
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0) {
		cli_print_error(o, SBX_EDENIED, "serve: cannot read the API key file %s: %s", path,
				strerror(errno));
		return -1;
	}
	len = (size_t)n;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
		len--;
	for (size_t k = 0; k < len; k++)
		if (buf[k] < 0x21 || buf[k] > 0x7e)
			len = SIZE_MAX - 1;
	if (len == 0 || len > SERVE_KEY_MAX || len >= size) {
		explicit_bzero(buf, sizeof(buf));
		cli_print_error(o, SBX_EINVALID,
				"serve: API key file %s does not hold a key: one line of 1 to %d "
				"printable ASCII characters",
				path, SERVE_KEY_MAX);
		return -1;
	}
	memcpy(key, buf, len);
	key[len] = '\0';
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

static int load_key(const struct cli_opts *o, const char *given, char *key, size_t size)
{
	char path[PATH_MAX], dir[PATH_MAX];
	int rc;

	if (given) {
		snprintf(path, sizeof(path), "%s", given);
	} else if (default_key_path(path, sizeof(path), dir, sizeof(dir)) < 0) {
		cli_print_error(o, SBX_EINVALID,
				"serve: no home directory to keep the API key in; give "
				"--api-key-file PATH");
		return CLI_EXIT_FAIL;
	} else if (make_dirs(dir) < 0) {
		cli_print_error(o, SBX_EDENIED, "serve: cannot create %s: %s", dir,
				strerror(errno));
		return CLI_EXIT_FAIL;
	}
	for (int attempt = 0; attempt < 2; attempt++) {
		rc = read_key(o, path, key, size);
		if (rc <= 0)
			return rc < 0 ? CLI_EXIT_FAIL : 0;
		rc = generate_key(o, path);
		if (rc < 0)
			return CLI_EXIT_FAIL;
		if (rc == 1)
			cli_warn("serve: generated a new API key in %s (mode 0600); clients send "
				 "it as X-API-Key (E2B_API_KEY)",
				 path);
	}
	cli_print_error(o, SBX_ERROR, "serve: API key file %s keeps changing", path);
	return CLI_EXIT_FAIL;
}

/* ===== The command ===== */

/* The image of templateID "base": the operator config's default, else the
 * built-in one, as a create of a policy that names none would use. */
static int default_image(const struct cli_opts *o, const sbx_config *cfg, char **out)
{
	sbx_policy *p = NULL, *eff = NULL;
	int rc = 0;

	if (sbx_policy_new(&p) < 0 || sbx_config_apply(&eff, cfg, p, CLI_BACKEND) < 0) {
		cli_print_lib_error(o);
		rc = CLI_EXIT_FAIL;
	} else if (!(*out = strdup(sbx_policy_image(eff)))) {
		cli_print_error(o, SBX_ENOMEM, "out of memory");
		rc = CLI_EXIT_FAIL;
	}
	sbx_policy_free(eff);
	sbx_policy_free(p);
	return rc;
}

/* --e2b-image as an argument, checked with the others: none, or a valid
 * image reference. */
static int e2b_image_arg(const struct cli_opts *o, const char *arg)
{
	sbx_policy *p = NULL;
	int rc = 0;

	if (!arg || strcmp(arg, "none") == 0)
		return 0;
	if (sbx_policy_new(&p) < 0 || sbx_policy_set_image(p, arg) < 0) {
		cli_print_error(o, SBX_EINVALID, "serve: --e2b-image '%.128s': %s", arg,
				sbx_error_last()->message);
		rc = CLI_EXIT_FAIL;
	}
	sbx_policy_free(p);
	return rc;
}

/* --e2b-image once the engine is open: none (or absent) is NULL in *out;
 * an image must be present, since it is never built or pulled here. */
static int e2b_image(const struct cli_opts *o, const char *arg, sbx_backend *b, const char **out)
{
	int rc;

	*out = NULL;
	if (!arg || strcmp(arg, "none") == 0)
		return 0;
	rc = sbx_backend_image_exists(b, arg);
	if (rc < 0) {
		cli_print_lib_error(o);
		return CLI_EXIT_FAIL;
	}
	if (rc == 0) {
		cli_print_error(o, SBX_ENOTFOUND,
				"serve: --e2b-image %.128s is not an image of this host's engine: "
				"build it with 'sandboxio image build --recipe e2b%s%.128s'",
				arg, strcmp(arg, CLI_E2B_IMAGE) == 0 ? "" : " --ref ",
				strcmp(arg, CLI_E2B_IMAGE) == 0 ? "" : arg);
		return CLI_EXIT_FAIL;
	}
	*out = arg;
	return 0;
}

/*
 * One function on purpose (some 150 lines): the command's steps in order,
 * from its options to the server's stop, with one cleanup path (out:) that
 * undoes them in reverse.
 */
int cmd_serve(struct cli_opts *o, int argc, char **argv, int i)
{
	struct serve_args a = {.listen = SERVE_DEFAULT_LISTEN};
	struct sbxs_config ec = {0};
	struct cli_opts as_create;
	struct sbxs_server *srv = NULL;
	struct listen_addr la;
	sbx_config *cfg = NULL;
	sbx_backend *b = NULL;
	char key[SERVE_KEY_MAX + 1] = "", err[512], *image = NULL;
	uint64_t max_ms = (uint64_t)SERVE_DEFAULT_MAX_TIMEOUT_S * 1000;
	uint64_t pause_ms = 0;
	sbx_tier tier = SBX_TIER_CONTAINER;
	unsigned max_conns = SERVE_DEFAULT_MAX_CONNS, max_client = SERVE_DEFAULT_MAX_CLIENT_CONNS;
	unsigned auth_s = SERVE_DEFAULT_AUTH_TIMEOUT_S, transfer_s = SERVE_DEFAULT_TRANSFER_S;
	unsigned port = 0;
	sigset_t set;
	int rc, fd = -1, sig;

	rc = parse_args(o, &a, argc, argv, i);
	if (rc)
		return rc;
	if (o->help) {
		cli_serve_usage(0);
		return 0;
	}
	if (!a.api) {
		cli_print_error(o, SBX_EINVALID, "serve: give --api e2b (the API to serve)");
		return CLI_EXIT_FAIL;
	}
	if (strcmp(a.api, "e2b") != 0) {
		cli_print_error(o, SBX_EUNSUPPORTED,
				"serve: --api '%.32s' is not served (only e2b)", a.api);
		return CLI_EXIT_FAIL;
	}
	if (a.max_timeout && (sbx_parse_duration_ms(&max_ms, a.max_timeout) < 0 || max_ms < 1000 ||
			      max_ms > SBX_MAX_TIMEOUT_MS)) {
		cli_print_error(
			o, SBX_EINVALID,
			"serve: --max-timeout '%.32s': expected a duration from 1 s to 24 h",
			a.max_timeout);
		return CLI_EXIT_FAIL;
	}
	if (a.pause_max && (sbx_parse_duration_ms(&pause_ms, a.pause_max) < 0 || pause_ms < 1000 ||
			    pause_ms > SBX_PAUSE_MAX_MS)) {
		cli_print_error(o, SBX_EINVALID,
				"serve: --pause-max '%.32s': expected a duration from 1 s to 24 h",
				a.pause_max);
		return CLI_EXIT_FAIL;
	}
	if (a.tier && sbx_tier_parse(&tier, a.tier) < 0) {
		cli_print_error(o, SBX_EINVALID,
				"serve: --tier '%.32s': expected container, gvisor or microvm",
				a.tier);
		return CLI_EXIT_FAIL;
	}
	if (a.max_conns && parse_count(a.max_conns, 1, 65536, &max_conns) < 0) {
		cli_print_error(
			o, SBX_EINVALID,
			"serve: --max-connections '%.32s': expected a number from 1 to 65536",
			a.max_conns);
		return CLI_EXIT_FAIL;
	}
	if (a.max_client_conns && parse_count(a.max_client_conns, 1, 65536, &max_client) < 0) {
		cli_print_error(o, SBX_EINVALID,
				"serve: --max-client-connections '%.32s': expected a number from 1 "
				"to 65536",
				a.max_client_conns);
		return CLI_EXIT_FAIL;
	}
	if (a.auth_timeout && parse_seconds_opt(a.auth_timeout, 1, 640, &auth_s) < 0) {
		cli_print_error(
			o, SBX_EINVALID,
			"serve: --auth-timeout '%.32s': expected whole seconds from 1 to 640",
			a.auth_timeout);
		return CLI_EXIT_FAIL;
	}
	if (a.transfer_timeout && parse_seconds_opt(a.transfer_timeout, 1, 3600, &transfer_s) < 0) {
		cli_print_error(
			o, SBX_EINVALID,
			"serve: --transfer-timeout '%.32s': expected whole seconds from 1 to 3600",
			a.transfer_timeout);
		return CLI_EXIT_FAIL;
	}
	if (parse_listen(a.listen, &la) < 0) {
		cli_print_error(o, SBX_EINVALID,
				"serve: --listen '%.64s': expected ADDR:PORT with an IP address "
				"(127.0.0.1:3000, [::1]:3000) or localhost",
				a.listen);
		return CLI_EXIT_FAIL;
	}
	if (!la.loopback && !a.allow_non_loopback) {
		cli_print_error(
			o, SBX_EDENIED,
			"serve: --listen %.64s is not a loopback address: anyone who reaches "
			"it with the API key would run code on this host's Docker engine, "
			"over plain HTTP; give --allow-non-loopback to accept that",
			a.listen);
		return CLI_EXIT_FAIL;
	}
	if (e2b_image_arg(o, a.e2b_image))
		return CLI_EXIT_FAIL;
	if (!la.loopback)
		cli_warn("serve: warning: listening on %s, which is not loopback: anyone who "
			 "reaches it with the API key runs code on this host's Docker engine, and "
			 "the API is plain HTTP, so the key, commands and outputs travel "
			 "unencrypted",
			 a.listen);

	/* Before any thread exists (the backend may start some). */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	rc = load_key(o, a.key_file, key, sizeof(key));
	if (rc)
		goto out;
	rc = cli_config_load(o, &cfg);
	if (rc)
		goto out;
	if (pause_ms > sbx_config_pause_ceiling_ms(cfg)) {
		uint64_t ceil = sbx_config_pause_ceiling_ms(cfg);

		cli_print_error(o, SBX_EDENIED,
				"serve: --pause-max '%.32s' is above ceilings.pause (%llu %s) in "
				"config %s",
				a.pause_max, (unsigned long long)(ceil % 1000 ? ceil : ceil / 1000),
				ceil % 1000 ? "ms" : "s",
				sbx_config_source(cfg) ? sbx_config_source(cfg) : "(built-in)");
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (!pause_ms)
		pause_ms = sbx_config_pause_ceiling_ms(cfg);
	/* serve makes sandboxes as create does: the same init lookup and
	 * orphan reaping at open (cli/backend.c decides by command). */
	as_create = *o;
	as_create.cmd = CMD_CREATE;
	rc = cli_backend_open(&as_create, cfg, &b);
	if (!rc)
		rc = default_image(o, cfg, &image);
	if (!rc)
		rc = cli_ensure_image(o, b, image);
	if (!rc)
		rc = e2b_image(o, a.e2b_image, b, &ec.e2b_image);
	if (rc)
		goto out;
	fd = sbxs_listen((const struct sockaddr *)&la.ss, la.len, la.host, &port, err, sizeof(err));
	if (fd < 0) {
		cli_print_error(o, SBX_ERROR, "serve: %s", err);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	ec.backend = b;
	ec.default_image = image;
	ec.no_root = a.no_root;
	ec.api_key = key;
	ec.max_timeout_s = max_ms / 1000;
	ec.pause_max_ms = pause_ms;
	ec.min_tier = tier;
	ec.listen_fd = fd;
	ec.ipv6 = la.family == AF_INET6;
	ec.max_connections = max_conns;
	ec.max_client_connections = max_client < max_conns ? max_client : max_conns;
	ec.auth_timeout_s = auth_s;
	ec.idle_timeout_s = SERVE_IDLE_TIMEOUT_S;
	ec.transfer_timeout_ms = (uint64_t)transfer_s * 1000;
	ec.warn = cli_warn;
	if (sbxs_start(&srv, &ec, err, sizeof(err)) < 0) {
		cli_print_error(o, SBX_ERROR, "serve: %s", err);
		close(fd);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	explicit_bzero(key, sizeof(key));
	if (printf("ready http://%s:%u\n", la.host, port) < 0 || fflush(stdout) == EOF) {
		cli_print_error(o, SBX_ERROR, "serve: cannot write the ready line: %s",
				strerror(errno));
		rc = CLI_EXIT_FAIL;
	} else {
		sig = sbxs_run(srv, &set);
		cli_warn("serve: signal %d: closing every sandbox", sig);
	}
	sbxs_stop(srv);
	sbxs_free(srv);
out:
	explicit_bzero(key, sizeof(key));
	free(image);
	sbx_backend_free(b);
	sbx_config_free(cfg);
	return rc;
}
