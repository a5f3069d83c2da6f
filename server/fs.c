/*
 * server/fs.c: envd's filesystem service (filesystem.Filesystem, Connect
 * unary calls, JSON codec) on the E2B-compatible server: Stat, ListDir,
 * MakeDir, Move and Remove, with envd's entries (name, type, path, size,
 * mode, permissions, owner, group, modified time, symlink target) and its
 * error codes (not_found, already_exists, invalid_argument,
 * permission_denied).
 *
 * Each call is one run of a small Python program in the sandbox (python3
 * -I -S, so neither the environment nor a site directory changes it), in
 * the box's busy slot within the transfer's deadline, like a file
 * transfer: it runs as the sandbox user under the sandbox's own rules, and
 * a path is an argument of a process inside the sandbox, never a path
 * here. The program answers with one JSON object on stdout; that answer
 * comes from inside the sandbox, so it is untrusted: every field is checked
 * here (fs_answer(), fuzzed by tests/fuzz/fuzz_serve.c) and the reply is
 * built from the checked values. Errors are an errno the server words
 * itself, never the sandbox's text. A listing stops at FS_ENTRIES_MAX
 * entries (resource_exhausted: list a narrower directory or depth).
 *
 * The answer may be as large as the output cap of a run (16 MiB by
 * default), and jansson spends some 16 bytes of heap a byte on an answer of
 * tiny values ("[0,0,0,...]": 256 MiB). So before it is parsed, a small
 * hand-written scan (fs_answer_values(): it only counts, outside strings,
 * the bytes that separate or open values) refuses an answer of more values
 * than FS_VALUES_MAX, which the program's largest honest answer stays far
 * under.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"

#define FS_ENTRIES_MAX 10000
#define FS_DEPTH_MAX 512
/* Values of an answer: an entry is one object of at most nine fields. */
#define FS_VALUES_MAX ((size_t)FS_ENTRIES_MAX * 24 + 64)

static const char fs_py[] =
	"import os,sys,stat,json,errno,shutil\n"
	"try:\n"
	" import pwd,grp\n"
	"except ImportError:\n"
	" pwd=grp=None\n"
	"def t(s):return s.encode('utf-8','surrogateescape').decode('utf-8','replace')\n"
	"C={}\n"
	"def nm(f,i):\n"
	" k=(f,i)\n"
	" if k not in C:\n"
	"  try:C[k]=(pwd.getpwuid if f else grp.getgrgid)(i)[0]\n"
	"  except Exception:C[k]=str(i)\n"
	" return C[k]\n"
	"def ent(p):\n"
	" s=os.lstat(p)\n"
	" e={'name':t(os.path.basename(p) or '/'),'path':t(p),'size':s.st_size,"
	"'mode':s.st_mode,'owner':nm(1,s.st_uid),'group':nm(0,s.st_gid),'mtime':s.st_mtime_ns}\n"
	" if stat.S_ISLNK(s.st_mode):e['target']=t(os.path.realpath(p))\n"
	" return e\n"
	"def out(o):\n"
	" sys.stdout.write(json.dumps(o,separators=(',',':')));sys.stdout.flush();os._exit(0)\n"
	"W='path'\n"
	"try:\n"
	" a=sys.argv[1:];op=a[0];p=a[1]\n"
	" if op=='stat':out({'entry':ent(p)})\n"
	" if op=='list':\n"
	"  d=int(a[2]);m=int(a[3]);r=[]\n"
	"  if not os.path.isdir(p):\n"
	"   os.stat(p);out({'notdir':1})\n"
	"  def walk(q,l):\n"
	"   try:ns=sorted(os.listdir(q))\n"
	"   except PermissionError:\n"
	"    if l==1:raise\n"
	"    return\n"
	"   for n in ns:\n"
	"    if len(r)>=m:out({'entries':r,'more':1})\n"
	"    c=os.path.join(q,n)\n"
	"    try:e=ent(c)\n"
	"    except FileNotFoundError:continue\n"
	"    r.append(e)\n"
	"    if l<d and stat.S_ISDIR(e['mode']):walk(c,l+1)\n"
	"  walk(p,1);out({'entries':r})\n"
	" if op=='mkdir':\n"
	"  if os.path.lexists(p):out({'exists':1 if os.path.isdir(p) else 2})\n"
	"  os.makedirs(p);out({'entry':ent(p)})\n"
	" if op=='move':\n"
	"  d=a[2];os.lstat(p);W='destination'\n"
	"  q=os.path.dirname(d)\n"
	"  if q:os.makedirs(q,exist_ok=True)\n"
	"  try:os.rename(p,d)\n"
	"  except OSError as x:\n"
	"   if x.errno!=errno.EXDEV or os.path.lexists(d):raise\n"
	"   if os.path.isdir(p) and not os.path.islink(p):"
	"shutil.copytree(p,d,symlinks=True);shutil.rmtree(p)\n"
	"   else:shutil.copy2(p,d,follow_symlinks=False);os.unlink(p)\n"
	"  out({'entry':ent(d)})\n"
	" if op=='remove':\n"
	"  if not os.path.lexists(p):out({})\n"
	"  if os.path.isdir(p) and not os.path.islink(p):shutil.rmtree(p)\n"
	"  else:os.unlink(p)\n"
	"  out({})\n"
	"except OSError as x:out({'errno':x.errno or 0,'which':W})\n";

/* ===== The program's answer ===== */

/* What the program said, checked. */
struct fs_answer {
	json_t *entry;	 /* one EntryInfo (protojson), or NULL */
	json_t *entries; /* an array of them, or NULL */
	int more;	 /* the listing stopped at its bound */
	int err_no;	 /* an errno, or 0 */
	int destination; /* the errno is of the destination (Move) */
	int notdir;	 /* ListDir of what is not a directory */
	int exists;	 /* MakeDir: 1 a directory is there, 2 something else */
};

static void fs_answer_free(struct fs_answer *a)
{
	json_decref(a->entry);
	json_decref(a->entries);
	memset(a, 0, sizeof(*a));
}

/* Go's FileMode.String() of a stat mode ("drwxr-xr-x", "Lrwxrwxrwx",
 * "dtrwxrwxrwx"), as envd gives it. */
static void go_mode_string(uint32_t m, char *out)
{
	static const char rwx[] = "rwxrwxrwx";
	uint32_t t = m & 0170000;
	char *p = out;

	if (t == 0040000)
		*p++ = 'd';
	if (t == 0120000)
		*p++ = 'L';
	if (t == 0060000 || t == 0020000)
		*p++ = 'D';
	if (t == 0010000)
		*p++ = 'p';
	if (t == 0140000)
		*p++ = 'S';
	if (m & 04000)
		*p++ = 'u';
	if (m & 02000)
		*p++ = 'g';
	if (t == 0020000)
		*p++ = 'c';
	if (m & 01000)
		*p++ = 't';
	if (p == out)
		*p++ = '-';
	for (int k = 0; k < 9; k++)
		*p++ = m & (1u << (8 - k)) ? rwx[k] : '-';
	*p = '\0';
}

/* A google.protobuf.Timestamp in protojson's RFC 3339 form; NULL when the
 * time is outside years 1 to 9999. */
static json_t *timestamp_json(json_int_t ns)
{
	json_int_t s = ns / 1000000000, frac = ns % 1000000000;
	struct tm tm;
	time_t tt;
	char buf[64];

	if (frac < 0) {
		frac += 1000000000;
		s--;
	}
	if (s < -62135596800LL || s > 253402300799LL)
		return NULL;
	tt = (time_t)s;
	if (!gmtime_r(&tt, &tm))
		return NULL;
	if (frac)
		snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, (long long)frac);
	else
		snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	return json_string(buf);
}

static int str_field(json_t *o, const char *k, const char **v)
{
	json_t *x = json_object_get(o, k);

	if (!json_is_string(x) || json_string_length(x) > PATH_MAX_LEN ||
	    strlen(json_string_value(x)) != json_string_length(x))
		return -1;
	*v = json_string_value(x);
	return 0;
}

/* One entry of the program as envd's EntryInfo (protojson: int64 as a
 * string, the zero enum and empty strings left out); NULL when malformed. */
static json_t *entry_json(json_t *e)
{
	const char *name, *path, *owner, *group, *target = NULL;
	json_t *size = json_object_get(e, "size"), *mode = json_object_get(e, "mode"),
	       *mt = json_object_get(e, "mtime"), *out, *ts;
	const char *type = NULL;
	char perm[24], num[32];
	uint32_t m;

	if (!json_is_object(e) || str_field(e, "name", &name) < 0 ||
	    str_field(e, "path", &path) < 0 || str_field(e, "owner", &owner) < 0 ||
	    str_field(e, "group", &group) < 0 || !json_is_integer(size) ||
	    json_integer_value(size) < 0 || !json_is_integer(mode) ||
	    json_integer_value(mode) < 0 || json_integer_value(mode) > 0xffffffffLL ||
	    !json_is_integer(mt) ||
	    (json_object_get(e, "target") && str_field(e, "target", &target) < 0) || path[0] != '/')
		return NULL;
	m = (uint32_t)json_integer_value(mode);
	switch (m & 0170000) {
	case 0100000:
		type = "FILE_TYPE_FILE";
		break;
	case 0040000:
		type = "FILE_TYPE_DIRECTORY";
		break;
	case 0120000:
		type = "FILE_TYPE_SYMLINK";
		break;
	}
	go_mode_string(m, perm);
	snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(size));
	out = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s}", "name", name, "path", path, "size",
			num, "mode", (int)(m & 0777), "permissions", perm, "owner", owner, "group",
			group);
	if (!out)
		return NULL;
	if (type)
		json_object_set_new(out, "type", json_string(type));
	if (!(m & 0777))
		json_object_del(out, "mode"); /* protojson leaves a zero out */
	ts = timestamp_json(json_integer_value(mt));
	if (ts)
		json_object_set_new(out, "modifiedTime", ts);
	if (target)
		json_object_set_new(out, "symlinkTarget", json_string(target));
	return out;
}

/* How many values the JSON text out[0..len) holds at most: the commas,
 * colons and opening brackets outside its strings, plus one. */
static size_t fs_answer_values(const char *out, size_t len)
{
	size_t n = 1;
	int in_str = 0;

	for (size_t k = 0; k < len; k++) {
		char ch = out[k];

		if (in_str) {
			if (ch == '\\')
				k++;
			else if (ch == '"')
				in_str = 0;
		} else if (ch == '"') {
			in_str = 1;
		} else if (ch == ',' || ch == ':' || ch == '[' || ch == '{') {
			n++;
		}
	}
	return n;
}

/*
 * The program's stdout (len bytes, untrusted) into a; -1 with err when it
 * is not one of the answers the program gives.
 */
static int fs_answer(const char *out, size_t len, struct fs_answer *a, char *err, size_t esize)
{
	json_t *j, *v;
	size_t i;

	memset(a, 0, sizeof(*a));
	if (fs_answer_values(out, len) > FS_VALUES_MAX) {
		snprintf(err, esize, "the filesystem program's answer holds too many values");
		return -1;
	}
	j = json_loadb(out, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		snprintf(err, esize, "the filesystem program gave no answer");
		return -1;
	}
	if ((v = json_object_get(j, "errno"))) {
		json_t *w = json_object_get(j, "which");

		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 4095)
			goto bad;
		a->err_no = (int)json_integer_value(v);
		a->destination =
			json_is_string(w) && strcmp(json_string_value(w), "destination") == 0;
	} else if ((v = json_object_get(j, "exists"))) {
		if (!json_is_integer(v) ||
		    (json_integer_value(v) != 1 && json_integer_value(v) != 2))
			goto bad;
		a->exists = (int)json_integer_value(v);
	} else if (json_object_get(j, "notdir")) {
		a->notdir = 1;
	} else if ((v = json_object_get(j, "entry"))) {
		if (!(a->entry = entry_json(v)))
			goto bad;
	} else if ((v = json_object_get(j, "entries"))) {
		json_t *e;

		if (!json_is_array(v) || json_array_size(v) > FS_ENTRIES_MAX)
			goto bad;
		a->entries = json_array();
		json_array_foreach(v, i, e)
		{
			json_t *x = entry_json(e);

			if (!x)
				goto bad;
			json_array_append_new(a->entries, x);
		}
		a->more = json_is_true(json_object_get(j, "more")) ||
			  json_integer_value(json_object_get(j, "more")) == 1;
	} else if (json_object_size(j) != 0) {
		goto bad;
	}
	json_decref(j);
	return 0;
bad:
	json_decref(j);
	fs_answer_free(a);
	snprintf(err, esize, "the filesystem program's answer is malformed");
	return -1;
}

/* ===== The calls ===== */

/* The reply to an errno of the program about path (the server's words). */
static enum MHD_Result fs_errno(struct MHD_Connection *c, int e, const char *path, int dest)
{
	const char *what = dest ? "destination" : "path";

	switch (e) {
	case ENOENT:
		return sbxs_connect_error(c, "not_found", "%s '%.512s' does not exist", what, path);
	case EACCES:
	case EPERM:
		return sbxs_connect_error(c, "permission_denied",
					  "%s '%.512s' is not permitted to the sandbox user", what,
					  path);
	case EROFS:
		return sbxs_connect_error(
			c, "permission_denied",
			"%s '%.512s' is on a read-only file system (only /workspace "
			"and /tmp are writable)",
			what, path);
	case ENOTDIR:
		return sbxs_connect_error(c, "invalid_argument",
					  "a component of %s '%.512s' is not a directory", what,
					  path);
	case EISDIR:
		return sbxs_connect_error(c, "invalid_argument", "%s '%.512s' is a directory", what,
					  path);
	case ENOTEMPTY:
	case EEXIST:
		return sbxs_connect_error(c, "invalid_argument",
					  "%s '%.512s' is a directory that is not empty", what,
					  path);
	case EINVAL:
		return sbxs_connect_error(c, "invalid_argument",
					  "cannot move a directory into itself ('%.512s')", path);
	case ELOOP:
		return sbxs_connect_error(c, "invalid_argument",
					  "%s '%.512s' has too many levels of symbolic links", what,
					  path);
	case ENAMETOOLONG:
		return sbxs_connect_error(c, "invalid_argument", "%s '%.512s' is too long", what,
					  path);
	case ENOSPC:
	case EDQUOT:
		return sbxs_connect_error(c, "resource_exhausted",
					  "no space left in the sandbox for '%.512s'", path);
	default:
		return sbxs_connect_error(c, "internal", "%s '%.512s': %s (errno %d)", what, path,
					  strerror(e), e);
	}
}

/*
 * Runs the program with args in the box's slot within the transfer's
 * deadline. Returns MHD_YES with *a filled (and *replied 0), or the reply
 * already queued (*replied 1).
 */
static enum MHD_Result fs_run(struct MHD_Connection *c,
			      struct sbxs_box *b,
			      const char *const *args,
			      size_t nargs,
			      struct fs_answer *a,
			      int *replied)
{
	struct sbxs_server *srv = b->srv;
	const char *argv[12] = {"python3", "-I", "-S", "-c", fs_py};
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	uint64_t deadline = sbx__mono_ms() + srv->transfer_ms, now, t;
	sbx_result *r = NULL;
	char err[256];
	int rc;

	*replied = 1;
	for (size_t k = 0; k < nargs && k < 6; k++)
		argv[5 + k] = args[k];
	rc = sbxs_box_acquire(b, deadline);
	if (rc == -2)
		return sbxs_connect_error(c, "deadline_exceeded",
					  "the sandbox stayed busy with another command past the "
					  "transfer's deadline (%llu s)",
					  (unsigned long long)(srv->transfer_ms / 1000));
	if (rc < 0)
		return sbxs_connect_error(c, "unavailable", "The sandbox was not found");
	now = sbx__mono_ms();
	t = deadline > now ? deadline - now : 1;
	if (b->run_timeout_ms && t > b->run_timeout_ms)
		t = b->run_timeout_ms;
	if (b->end_mono <= now) {
		sbxs_box_release(b, 0);
		return sbxs_connect_error(c, "unavailable", "The sandbox was not found");
	}
	if (t > b->end_mono - now)
		t = b->end_mono - now;
	ro.timeout_ms = t;
	rc = sbx_sandbox_run(&r, b->s, argv, &ro);
	sbxs_box_release(b, rc);
	if (rc < 0)
		return sbxs_connect_error(
			c, rc == SBX_ECANCELED || rc == SBX_ETIMEOUT ? "unavailable" : "internal",
			"the sandbox could not run the filesystem call (%s)", sbx_strerror(rc));
	if (r->status == SBX_RUN_TIMEOUT) {
		sbx_result_free(r);
		return sbxs_connect_error(
			c, "deadline_exceeded",
			"the filesystem call did not finish within the transfer's "
			"deadline (%llu s); it was stopped",
			(unsigned long long)(srv->transfer_ms / 1000));
	}
	if (r->status != SBX_RUN_EXITED || r->exit_code != 0) {
		int code = r->exit_code, st = r->status;

		sbx_result_free(r);
		if (st == SBX_RUN_ERROR || code == 127 || code == 126)
			return sbxs_connect_error(c, "failed_precondition",
						  "the sandbox's image lacks python3, which the "
						  "filesystem calls of this server run through");
		return sbxs_connect_error(c, "internal", "the filesystem call failed (%s, exit %d)",
					  sbx_run_status_name(st), code);
	}
	if (r->stdout_truncated) {
		sbx_result_free(r);
		return sbxs_connect_error(
			c, "resource_exhausted",
			"the answer is larger than the sandbox's output cap; list a "
			"narrower directory or a smaller depth");
	}
	/* The answer passed the redactor: a changed byte count means a name
	 * holds a secret value, which is never given out. */
	if (r->stdout_total != r->stdout_len) {
		sbx_result_free(r);
		return sbxs_connect_error(
			c, "permission_denied",
			"the answer holds a secret value, which is never given out");
	}
	if (fs_answer(r->stdout_data, r->stdout_len, a, err, sizeof(err)) < 0) {
		sbx_result_free(r);
		return sbxs_connect_error(c, "internal", "%s", err);
	}
	sbx_result_free(r);
	*replied = 0;
	return MHD_YES;
}

/* A path field of a request, mapped; -1 with the reply queued. */
static int fs_path(struct MHD_Connection *c,
		   json_t *j,
		   const char *key,
		   char *out,
		   size_t size,
		   enum MHD_Result *ret)
{
	json_t *v = json_object_get(j, key);

	if (!json_is_string(v) || !json_string_length(v) ||
	    strlen(json_string_value(v)) != json_string_length(v) ||
	    sbxs_map_path(json_string_value(v), out, size) < 0) {
		*ret = sbxs_connect_error(c, "invalid_argument", "invalid %s '%.512s'", key,
					  json_is_string(v) ? json_string_value(v) : "");
		return -1;
	}
	return 0;
}

/*
 * One function on purpose (some 120 lines): the five unary calls share
 * the parsing of the body, the user and the paths, the one run of the
 * program and the mapping of its answer to the reply.
 */
enum MHD_Result sbxs_envd_fs(struct sbxs_server *srv,
			     struct MHD_Connection *c,
			     struct sbxs_req *rq,
			     const char *method)
{
	static const char *const path_keys[] = {"path", NULL};
	static const char *const list_keys[] = {"path", "depth", NULL};
	static const char *const move_keys[] = {"source", "destination", NULL};
	const char *ct = sbxs_header(c, "Content-Type"), *bad, *args[4];
	char path[PATH_MAX_LEN + 16], dest[PATH_MAX_LEN + 16], user[128], depth_s[16], max_s[16];
	int is_list = strcmp(method, "ListDir") == 0, is_move = strcmp(method, "Move") == 0;
	struct fs_answer a;
	enum MHD_Result ret = MHD_NO;
	json_error_t je;
	size_t nargs = 2;
	json_t *j;
	int replied;

	(void)srv;
	if (!ct || strncasecmp(ct, "application/json", 16) != 0)
		return sbxs_connect_error(c, "invalid_argument",
					  "Content-Type must be application/json (got '%.64s')",
					  ct ? ct : "");
	if (sbxs_basic_user(c, user, sizeof(user)) < 0 || !sbxs_user_ok(user))
		return sbxs_connect_error(c, "permission_denied",
					  "user '%s' is not available on this server: files are "
					  "reached as the sandbox user",
					  user);
	j = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(j)) {
		json_decref(j);
		return sbxs_connect_error(c, "invalid_argument",
					  "unmarshal into filesystem.%sRequest: %s", method,
					  j ? "not an object" : je.text);
	}
	bad = sbxs_unknown_key(j, is_list ? list_keys : is_move ? move_keys : path_keys);
	if (bad) {
		ret = sbxs_connect_error(
			c, "invalid_argument",
			"unmarshal into filesystem.%sRequest: unknown field \"%.64s\"", method,
			bad);
		goto out;
	}
	if (fs_path(c, j, is_move ? "source" : "path", path, sizeof(path), &ret) < 0)
		goto out;
	args[1] = path;
	if (is_move) {
		if (fs_path(c, j, "destination", dest, sizeof(dest), &ret) < 0)
			goto out;
		args[0] = "move";
		args[2] = dest;
		nargs = 3;
	} else if (is_list) {
		json_t *d = json_object_get(j, "depth");
		json_int_t depth = 1;

		if (d && !json_is_null(d)) {
			if (!json_is_integer(d) || json_integer_value(d) < 0 ||
			    json_integer_value(d) > 0xffffffffLL) {
				ret = sbxs_connect_error(c, "invalid_argument",
							 "depth must be a uint32");
				goto out;
			}
			if (json_integer_value(d) > 0)
				depth = json_integer_value(d);
		}
		if (depth > FS_DEPTH_MAX) {
			ret = sbxs_connect_error(c, "invalid_argument",
						 "depth %lld is above this server's bound (%d)",
						 (long long)depth, FS_DEPTH_MAX);
			goto out;
		}
		snprintf(depth_s, sizeof(depth_s), "%lld", (long long)depth);
		snprintf(max_s, sizeof(max_s), "%d", FS_ENTRIES_MAX);
		args[0] = "list";
		args[2] = depth_s;
		args[3] = max_s;
		nargs = 4;
	} else {
		args[0] = strcmp(method, "Stat") == 0	   ? "stat"
			  : strcmp(method, "MakeDir") == 0 ? "mkdir"
							   : "remove";
	}
	if (strcmp(args[0], "stat") != 0 && strcmp(args[0], "list") != 0 &&
	    (strcmp(path, "/") == 0 || (is_move && strcmp(dest, "/") == 0))) {
		ret = sbxs_connect_error(c, "invalid_argument", "the root directory cannot be %s",
					 is_move ? "moved" : "changed");
		goto out;
	}
	ret = fs_run(c, rq->box, args, nargs, &a, &replied);
	if (replied)
		goto out;
	if (a.err_no)
		ret = fs_errno(c, a.err_no, a.destination ? dest : path, a.destination);
	else if (a.notdir)
		ret = sbxs_connect_error(c, "invalid_argument", "path '%.512s' is not a directory",
					 path);
	else if (a.exists == 1)
		ret = sbxs_connect_error(c, "already_exists", "directory '%.512s' already exists",
					 path);
	else if (a.exists == 2)
		ret = sbxs_connect_error(c, "invalid_argument",
					 "path '%.512s' already exists and is not a directory",
					 path);
	else if (a.more)
		ret = sbxs_connect_error(
			c, "resource_exhausted",
			"'%.512s' holds more than %d entries to that depth; list a "
			"narrower directory or a smaller depth",
			path, FS_ENTRIES_MAX);
	else if (is_list && a.entries)
		ret = sbxs_reply_json(c, 200, json_pack("{s:O}", "entries", a.entries));
	else if (strcmp(args[0], "remove") == 0)
		ret = sbxs_reply_json(c, 200, json_object());
	else if (a.entry && !is_list)
		ret = sbxs_reply_json(c, 200, json_pack("{s:O}", "entry", a.entry));
	else
		ret = sbxs_connect_error(c, "internal",
					 "the filesystem program's answer does not fit the call");
	fs_answer_free(&a);
out:
	json_decref(j);
	return ret;
}
