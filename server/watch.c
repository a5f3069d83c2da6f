/*
 * server/watch.c: envd's filesystem.Filesystem/WatchDir on the
 * E2B-compatible server: a server stream of the create, write, remove,
 * rename and chmod events of a directory (recursive on request), as the
 * SDKs' watchDir() reads them.
 *
 * A watch is a program in the sandbox (python3 with inotify through
 * ctypes), run as the sandbox user, on a handle of its own
 * (sbx_sandbox_open(), so docker exec): it does not take the box's busy
 * slot, and commands and file calls go on beside it. The program prints
 * one JSON line per event ({"n": name relative to the directory, "t":
 * envd's EventType}) and a heartbeat line each second, so that the server
 * looks at the watch at least that often. The lines come from inside the
 * sandbox: each is checked (watch_line(), fuzzed by tests/fuzz/fuzz_serve.c)
 * and the frame built from the checked values.
 *
 * Bounds: at most WATCHES_MAX watches per sandbox; a recursive watch adds at
 * most DIRS_MAX directories; and one watch's queue of events waiting for
 * its client holds at most QUEUE_EVENTS_MAX events and QUEUE_BYTES_MAX
 * bytes (a command's stream holds 1 MiB): past either (or when the kernel's
 * own inotify queue overflows) the stream ends with resource_exhausted, and
 * the watch stops, rather than events being lost in silence. The library
 * keeps a run's output up to the sandbox's output cap (and calls on_output
 * no more past it): a watch whose program's output nears that cap ends the
 * same way, and is stopped, rather than going silent with its program left
 * running. The program sends its stderr to /dev/null. A directory
 * made inside a recursive watch is watched as soon as its event is read,
 * and what it already holds by then is reported as created, so that
 * nothing made before its watch began is lost (it may come twice).
 *
 * A watch lasts until its client's deadline (Connect-Timeout-Ms), the
 * sandbox's run timeout or its end, whichever comes first, and the client
 * going away stops it: the content reader looks at the client's socket
 * each second while nothing is sent (as a command's stream does), so an
 * idle watch notices it too, and the program is told by a stop file that it
 * looks for each second, made through one more handle. A sandbox that ends (killed, or its timeout)
 * ends the watch with unavailable.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <microhttpd.h>

#include "server/server-int.h"

#define WATCHES_MAX 8
#define DIRS_MAX "4096"
#define QUEUE_EVENTS_MAX 4096
#define QUEUE_BYTES_MAX (1u << 20)
#define LINE_MAX_LEN 8192

static const char watch_py[] =
	"import ctypes,os,sys,select,struct,json\n"
	"os.dup2(os.open(os.devnull,os.O_WRONLY),2)\n"
	"def t(s):return s.encode('utf-8','surrogateescape').decode('utf-8','replace')\n"
	"def out(o):sys.stdout.write(json.dumps(o,separators=(',',':'))+'\\n');sys.stdout.flush()\n"
	"root,rec,stop,mx=sys.argv[1],sys.argv[2]=='1',sys.argv[3],int(sys.argv[4])\n"
	"L=ctypes.CDLL(None,use_errno=True)\n"
	"fd=L.inotify_init1(0o4000|0o2000000)\n"
	"if fd<0:out({'errno':ctypes.get_errno()});sys.exit(0)\n"
	"M=0x2|0x4|0x40|0x80|0x100|0x200|0x400|0x800\n"
	"W={}\n"
	"def add(p,top=False):\n"
	" if len(W)>=mx:\n"
	"  if top:return 0\n"
	"  out({'toomany':1});sys.exit(0)\n"
	" wd=L.inotify_add_watch(fd,os.fsencode(p),M|(0x1000000 if top else 0))\n"
	" if wd<0:return ctypes.get_errno()\n"
	" W[wd]=p;return 0\n"
	"def tree(p,ev=False):\n"
	" for dp,dn,fn in os.walk(p):\n"
	"  for d in dn:\n"
	"   add(os.path.join(dp,d))\n"
	"   if ev:out({'n':t(os.path.relpath(os.path.join(dp,d),root)),'t':1})\n"
	"  if ev:\n"
	"   for x in fn:out({'n':t(os.path.relpath(os.path.join(dp,x),root)),'t':1})\n"
	"e=add(root,True)\n"
	"if e:out({'errno':e});sys.exit(0)\n"
	"if rec:tree(root)\n"
	"out({'start':1})\n"
	"try:\n"
	" while not os.path.exists(stop):\n"
	"  r,_,_=select.select([fd],[],[],1.0)\n"
	"  if not r:out({'k':1});continue\n"
	"  b=os.read(fd,65536);i=0\n"
	"  while i+16<=len(b):\n"
	"   wd,m,ck,n=struct.unpack_from('iIII',b,i);nm=b[i+16:i+16+n].rstrip(b'\\0');i+=16+n\n"
	"   if m&0x4000:out({'overflow':1});sys.exit(0)\n"
	"   if m&0x8000:W.pop(wd,None);continue\n"
	"   base=W.get(wd)\n"
	"   if base is None:continue\n"
	"   f=os.path.join(base,os.fsdecode(nm)) if nm else base\n"
	"   k=1 if m&0x180 else 3 if m&0x600 else 4 if m&0x840 else 2 if m&0x2 else 5\n"
	"   out({'n':t(os.path.relpath(f,root)),'t':k})\n"
	"   if rec and m&0x40000000 and m&0x180:\n"
	"    add(f);tree(f,True)\n"
	"finally:\n"
	" try:os.unlink(stop)\n"
	" except OSError:pass\n";

/* What a line of the program said. */
enum wline { WL_EVENT, WL_BEAT, WL_START, WL_ERRNO, WL_TOOMANY, WL_OVERFLOW, WL_BAD };

static const char *const event_names[] = {NULL,
					  "EVENT_TYPE_CREATE",
					  "EVENT_TYPE_WRITE",
					  "EVENT_TYPE_REMOVE",
					  "EVENT_TYPE_RENAME",
					  "EVENT_TYPE_CHMOD"};

/*
 * One line of the program (untrusted): an event as envd's FilesystemEvent
 * in *ev (protojson), or what else it says (*err_no for WL_ERRNO).
 */
static enum wline watch_line(const char *line, size_t len, json_t **ev, int *err_no)
{
	json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL), *n, *t, *e;
	enum wline w = WL_BAD;

	*ev = NULL;
	*err_no = 0;
	if (!json_is_object(j))
		goto out;
	n = json_object_get(j, "n");
	t = json_object_get(j, "t");
	if (n || t) {
		if (json_is_string(n) && json_string_length(n) <= PATH_MAX_LEN &&
		    strlen(json_string_value(n)) == json_string_length(n) && json_is_integer(t) &&
		    json_integer_value(t) >= 1 && json_integer_value(t) <= 5) {
			*ev = json_pack("{s:{s:s, s:s}}", "filesystem", "name",
					json_string_value(n), "type",
					event_names[json_integer_value(t)]);
			w = *ev ? WL_EVENT : WL_BAD;
		}
	} else if (json_object_get(j, "k")) {
		w = WL_BEAT;
	} else if (json_object_get(j, "start")) {
		w = WL_START;
	} else if ((e = json_object_get(j, "errno"))) {
		if (json_is_integer(e) && json_integer_value(e) >= 0 &&
		    json_integer_value(e) < 4096) {
			*err_no = (int)json_integer_value(e);
			w = WL_ERRNO;
		}
	} else if (json_object_get(j, "toomany")) {
		w = WL_TOOMANY;
	} else if (json_object_get(j, "overflow")) {
		w = WL_OVERFLOW;
	}
out:
	json_decref(j);
	return w;
}

/* ===== A watch and its stream ===== */

struct watch {
	struct sbxs_box *box; /* a reference */
	int refs;	      /* the thread's and the response's */
	char path[PATH_MAX_LEN + 16];
	char stop[64]; /* the stop file in the sandbox */
	int recursive;
	uint64_t deadline, keepalive_ms, last_sent;
	uint64_t out_total, out_cap; /* the program's stdout so far; its bound */
	pthread_cond_t cv;
	struct sbxs_frame *qh, *qt, *cur;
	size_t qn, qbytes, cur_off;
	char line[LINE_MAX_LEN];
	size_t line_len;
	int started, eos, reader_done, stopping, failed;
	int fd; /* the client's socket, to notice it going away */
};

static void watch_free(struct watch *w)
{
	struct sbxs_frame *f, *next;

	for (f = w->qh; f; f = next) {
		next = f->next;
		free(f);
	}
	free(w->cur);
	pthread_cond_destroy(&w->cv);
	sbxs_box_unref(w->box);
	free(w);
}

static void watch_unref(struct watch *w)
{
	struct sbxs_server *srv = w->box->srv;
	int last;

	pthread_mutex_lock(&srv->mu);
	last = --w->refs == 0;
	pthread_mutex_unlock(&srv->mu);
	if (last)
		watch_free(w);
}

/* Queues a frame (mu held); a frame nobody will read is dropped. */
static void watch_push_locked(struct watch *w, struct sbxs_frame *f)
{
	if (!f)
		return;
	if (w->reader_done || w->eos) {
		free(f);
		return;
	}
	if (w->qt)
		w->qt->next = f;
	else
		w->qh = f;
	w->qt = f;
	w->qn++;
	w->qbytes += f->len;
	pthread_cond_broadcast(&w->cv);
}

/* Ends the stream with an error frame (mu held). */
static void watch_end_locked(struct watch *w, const char *code, const char *msg)
{
	watch_push_locked(w, sbxs_frame_eos(code, msg));
	w->eos = 1;
	w->failed = code != NULL;
	pthread_cond_broadcast(&w->cv);
}

/* Makes the stop file through a handle of its own (mu not held). */
static void watch_stop(struct watch *w)
{
	struct sbxs_server *srv = w->box->srv;
	const char *argv[] = {"sh", "-c", ": >\"$1\"", "sbx-watch-stop", w->stop, NULL};
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	sbx_sandbox *h = NULL;
	sbx_result *r = NULL;

	ro.timeout_ms = srv->transfer_ms;
	if (sbx_sandbox_open(&h, srv->b, sbx_sandbox_id(w->box->s)) < 0)
		return; /* the sandbox is gone, and the watch with it */
	if (sbx_sandbox_run(&r, h, argv, &ro) == 0)
		sbx_result_free(r);
	sbx_sandbox_detach(h);
}

static const char *errno_words(int e)
{
	switch (e) {
	case 2:
		return "does not exist";
	case 13:
	case 1:
		return "is not permitted to the sandbox user";
	case 20:
		return "is not a directory";
	case 24:
	case 28:
		return "cannot be watched: the sandbox's inotify limit is reached";
	default:
		return "cannot be watched";
	}
}

/* The program's output: whole lines become frames; a watch that must stop
 * (its client gone, the box gone) is told to. Returns non-zero to cancel
 * the run, which ends the sandbox: only when it is ending anyway. */
static int on_watch_output(int stream, const char *data, size_t len, void *payload)
{
	struct watch *w = payload;
	struct sbxs_server *srv = w->box->srv;
	int stop = 0, gone = 0;

	if (stream != SBX_STREAM_STDOUT)
		return 0;
	pthread_mutex_lock(&srv->mu);
	w->out_total += len;
	if (!w->eos && w->out_total > w->out_cap) {
		char msg[160];

		snprintf(msg, sizeof(msg),
			 "the watch's events reached the output cap of the sandbox's runs "
			 "(%llu bytes so far); the watch was stopped",
			 (unsigned long long)w->out_total);
		watch_end_locked(w, "resource_exhausted", msg);
	}
	for (size_t k = 0; k < len && !w->eos; k++) {
		json_t *ev;
		int e;
		char msg[PATH_MAX_LEN + 128];

		if (data[k] != '\n') {
			if (w->line_len == sizeof(w->line)) {
				watch_end_locked(w, "internal",
						 "the watch program's line is too long");
				break;
			}
			w->line[w->line_len++] = data[k];
			continue;
		}
		switch (watch_line(w->line, w->line_len, &ev, &e)) {
		case WL_EVENT:
			if (w->qn >= QUEUE_EVENTS_MAX || w->qbytes >= QUEUE_BYTES_MAX) {
				json_decref(ev);
				snprintf(msg, sizeof(msg),
					 "more than %d events or 1 MiB of the watch waited for its "
					 "client; the watch was stopped",
					 QUEUE_EVENTS_MAX);
				watch_end_locked(w, "resource_exhausted", msg);
				break;
			}
			watch_push_locked(w, sbxs_frame_json(0, ev));
			break;
		case WL_BEAT:
			break;
		case WL_START:
			w->started = 1;
			watch_push_locked(w, sbxs_frame_raw(0, "{\"start\":{}}", 12));
			pthread_cond_broadcast(&w->cv);
			break;
		case WL_ERRNO:
			snprintf(msg, sizeof(msg), "path '%.512s' %s", w->path, errno_words(e));
			watch_end_locked(w,
					 e == 2		     ? "not_found"
					 : e == 20	     ? "invalid_argument"
					 : e == 13 || e == 1 ? "permission_denied"
							     : "resource_exhausted",
					 msg);
			break;
		case WL_TOOMANY:
			watch_end_locked(
				w, "resource_exhausted",
				"the recursive watch holds more than " DIRS_MAX
				" directories (this server's bound); watch a narrower one");
			break;
		case WL_OVERFLOW:
			watch_end_locked(w, "resource_exhausted",
					 "the sandbox's inotify queue overflowed; the watch was "
					 "stopped");
			break;
		case WL_BAD:
			watch_end_locked(w, "internal", "the watch program's answer is malformed");
			break;
		}
		w->line_len = 0;
	}
	gone = w->box->retired || srv->stopping;
	if ((w->eos || w->reader_done) && !w->stopping && !gone) {
		w->stopping = 1;
		stop = 1;
	}
	pthread_mutex_unlock(&srv->mu);
	if (stop)
		watch_stop(w);
	return gone;
}

static void *watch_main(void *arg)
{
	struct watch *w = arg;
	struct sbxs_box *b = w->box;
	struct sbxs_server *srv = b->srv;
	const char *argv[] = {
		"python3", "-I",     "-S", "-c", watch_py, w->path, w->recursive ? "1" : "0",
		w->stop,   DIRS_MAX, NULL};
	sbx_run_options ro = SBX_RUN_OPTIONS_INIT;
	sbx_sandbox *h = NULL;
	sbx_result *r = NULL;
	uint64_t now = sbx__mono_ms(), t = b->run_timeout_ms;
	int rc, by_client = 0;

	if (w->deadline && (t == 0 || w->deadline - now < t)) {
		t = w->deadline > now ? w->deadline - now : 1;
		by_client = 1;
	}
	if (b->end_mono > now && (t == 0 || b->end_mono - now < t)) {
		t = b->end_mono - now;
		by_client = 0;
	}
	ro.timeout_ms = t;
	ro.on_output = on_watch_output;
	ro.payload = w;
	rc = sbx_sandbox_open(&h, srv->b, sbx_sandbox_id(b->s));
	if (rc == 0) {
		rc = sbx_sandbox_run(&r, h, argv, &ro);
		sbx_sandbox_detach(h);
	}
	pthread_mutex_lock(&srv->mu);
	if (!w->eos) {
		if (b->retired || srv->stopping || rc < 0)
			watch_end_locked(
				w, "unavailable",
				"The sandbox was killed or reached its end of life while the "
				"watch ran");
		else if (r->status == SBX_RUN_EXITED && r->exit_code == 0 && !w->started)
			watch_end_locked(w, "internal",
					 "the watch program ended before it started");
		else if (r->status == SBX_RUN_EXITED &&
			 (r->exit_code == 127 || r->exit_code == 126))
			watch_end_locked(
				w, "failed_precondition",
				"the sandbox's image lacks python3, which watches run through");
		else if (r->status == SBX_RUN_TIMEOUT)
			watch_end_locked(w, "deadline_exceeded",
					 by_client ? "the watch's deadline passed"
						   : "the watch reached the sandbox's run timeout");
		else if (w->stopping)
			watch_end_locked(w, NULL, NULL);
		else
			watch_end_locked(w, "internal", "the watch program ended");
	}
	pthread_cond_broadcast(&w->cv);
	b->watches--; /* before the box's reference may go with the watch */
	pthread_mutex_unlock(&srv->mu);
	sbx_result_free(r);
	watch_unref(w);
	pthread_mutex_lock(&srv->mu);
	srv->workers--;
	pthread_cond_broadcast(&srv->cv);
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

/* libmicrohttpd's content reader of a WatchDir response: the queued
 * frames, and envd's keepalive after the idle interval. */
static ssize_t watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	static const char keepalive[] = "{\"keepalive\":{}}";
	struct watch *w = cls;
	struct sbxs_server *srv = w->box->srv;

	(void)pos;
	pthread_mutex_lock(&srv->mu);
	for (;;) {
		uint64_t now, until;

		if (!w->cur && w->qh) {
			w->cur = w->qh;
			w->qh = w->qh->next;
			if (!w->qh)
				w->qt = NULL;
			w->qn--;
			w->qbytes -= w->cur->len;
			w->cur_off = 0;
		}
		if (w->cur) {
			size_t left = w->cur->len - w->cur_off, k = left < max ? left : max;

			memcpy(buf, w->cur->data + w->cur_off, k);
			w->cur_off += k;
			if (w->cur_off == w->cur->len) {
				free(w->cur);
				w->cur = NULL;
			}
			w->last_sent = sbx__mono_ms();
			pthread_mutex_unlock(&srv->mu);
			return (ssize_t)k;
		}
		if (w->eos) {
			pthread_mutex_unlock(&srv->mu);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		now = sbx__mono_ms();
		if (w->started && now >= w->last_sent + w->keepalive_ms) {
			struct sbxs_frame *f = sbxs_frame_raw(0, keepalive, sizeof(keepalive) - 1);

			if (f) {
				f->next = w->qh;
				w->qh = f;
				if (!w->qt)
					w->qt = f;
				w->qn++;
				w->qbytes += f->len;
			}
			w->last_sent = now;
			continue;
		}
		until = now + 1000;
		sbxs_wait_until(&w->cv, &srv->mu, until);
		if (w->qh || w->eos)
			continue;
		switch (sbxs_client_gone(w->fd)) {
		case 2:
			pthread_mutex_unlock(&srv->mu);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		case 1: /* a write tells a half-close from a client gone */
			w->last_sent = 0;
			break;
		}
	}
}

static void watch_done(void *cls)
{
	struct watch *w = cls;
	struct sbxs_server *srv = w->box->srv;

	pthread_mutex_lock(&srv->mu);
	w->reader_done = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&srv->mu);
	/* The program sees the stop file within a second (its heartbeat
	 * reaches on_watch_output, which makes it). */
	watch_unref(w);
}

/* The WatchDir request (one Connect envelope) into w's path and
 * recursion; -1 with err. */
static int watch_request(struct sbxs_req *rq, struct watch *w, char *err, size_t esize)
{
	static const char *const keys[] = {"path", "recursive", "includeEntry",
					   "allowNetworkMounts", NULL};
	const char *bad;
	json_t *j, *v;
	uint32_t len;

	if (rq->len < 5 || (rq->body[0] & 0xff) != 0) {
		snprintf(err, esize, "malformed request envelope");
		return -1;
	}
	len = (uint32_t)(unsigned char)rq->body[1] << 24 |
	      (uint32_t)(unsigned char)rq->body[2] << 16 |
	      (uint32_t)(unsigned char)rq->body[3] << 8 | (uint32_t)(unsigned char)rq->body[4];
	if ((size_t)len != rq->len - 5) {
		snprintf(err, esize, "a server-streaming request is exactly one message");
		return -1;
	}
	j = json_loadb(rq->body + 5, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		snprintf(err, esize, "unmarshal into filesystem.WatchDirRequest: not an object");
		return -1;
	}
	bad = sbxs_unknown_key(j, keys);
	if (bad) {
		snprintf(err, esize,
			 "unmarshal into filesystem.WatchDirRequest: unknown field \"%.64s\"", bad);
		json_decref(j);
		return -1;
	}
	v = json_object_get(j, "path");
	if (!json_is_string(v) || !json_string_length(v) ||
	    strlen(json_string_value(v)) != json_string_length(v) ||
	    sbxs_map_path(json_string_value(v), w->path, sizeof(w->path)) < 0) {
		snprintf(err, esize, "invalid path '%.512s'",
			 json_is_string(v) ? json_string_value(v) : "");
		json_decref(j);
		return -1;
	}
	w->recursive = json_is_true(json_object_get(j, "recursive"));
	json_decref(j);
	return 0;
}

enum MHD_Result
sbxs_envd_watch(struct sbxs_server *srv, struct MHD_Connection *c, struct sbxs_req *rq)
{
	const char *ct = sbxs_header(c, "Content-Type"),
		   *tmo = sbxs_header(c, "Connect-Timeout-Ms");
	const char *ka = sbxs_header(c, "Keepalive-Ping-Interval");
	struct sbxs_box *b = rq->box;
	char err[PATH_MAX_LEN + 128], user[128], hex[17];
	struct MHD_Response *r;
	pthread_attr_t attr;
	pthread_t th;
	struct watch *w;
	unsigned long ka_s = 90;
	int started;

	if (!ct || strncasecmp(ct, "application/connect+json", 24) != 0)
		return sbxs_connect_error(
			c, "invalid_argument",
			"Content-Type must be application/connect+json (got '%.64s')",
			ct ? ct : "");
	if (sbxs_basic_user(c, user, sizeof(user)) < 0 || !sbxs_user_ok(user))
		return sbxs_stream_error(c, "permission_denied",
					 "this user is not available on this server: files are "
					 "reached as the sandbox user");
	if (ka) {
		char *end;

		ka_s = strtoul(ka, &end, 10);
		if (end == ka || *end || ka_s < 1 || ka_s > 3600)
			return sbxs_stream_error(
				c, "invalid_argument",
				"Keepalive-Ping-Interval must be 1 to 3600 seconds");
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return sbxs_stream_error(c, "resource_exhausted", "out of memory");
	if (watch_request(rq, w, err, sizeof(err)) < 0) {
		free(w);
		return sbxs_stream_error(c, "invalid_argument", err);
	}
	if (tmo) {
		char *end;
		unsigned long long ms = strtoull(tmo, &end, 10);

		if (end == tmo || *end || strlen(tmo) > 10) {
			free(w);
			return sbxs_stream_error(c, "invalid_argument",
						 "malformed Connect-Timeout-Ms");
		}
		w->deadline = sbx__mono_ms() + ms;
	}
	if (sbxs_random_hex(hex, 8) < 0) {
		free(w);
		return sbxs_stream_error(c, "internal", "no randomness for the watch");
	}
	snprintf(w->stop, sizeof(w->stop), "/tmp/.sbx-watch-%s", hex);
	{
		/* Two lines short of the cap, so that the end is seen before the
		 * library stops showing output. */
		int64_t cap = sbx_policy_limit(sbx_sandbox_policy(b->s), SBX_LIMIT_OUTPUT);

		w->out_cap = cap <= 0		      ? UINT64_MAX /* no cap */
			     : cap > 4 * LINE_MAX_LEN ? (uint64_t)cap - 2 * LINE_MAX_LEN
						      : (uint64_t)cap / 2;
	}
	{
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		w->fd = ci ? ci->connect_fd : -1;
	}
	w->keepalive_ms = (uint64_t)ka_s * 1000;
	w->last_sent = sbx__mono_ms();
	sbxs_cond_init(&w->cv);
	w->refs = 2;

	pthread_mutex_lock(&srv->mu);
	if (b->retired || srv->stopping) {
		pthread_mutex_unlock(&srv->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
		return sbxs_stream_error(c, "unavailable", "The sandbox was not found");
	}
	if (b->watches >= WATCHES_MAX) {
		pthread_mutex_unlock(&srv->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
		snprintf(err, sizeof(err),
			 "the sandbox already has %d watches (the bound of this server)",
			 WATCHES_MAX);
		return sbxs_stream_error(c, "resource_exhausted", err);
	}
	b->refs++;
	b->watches++;
	w->box = b;
	srv->workers++;
	pthread_mutex_unlock(&srv->mu);

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	started = pthread_create(&th, &attr, watch_main, w) == 0;
	pthread_attr_destroy(&attr);
	if (!started) {
		pthread_mutex_lock(&srv->mu);
		srv->workers--;
		b->watches--;
		watch_end_locked(w, "resource_exhausted", "cannot start a thread");
		w->refs--;
		pthread_mutex_unlock(&srv->mu);
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, CHUNK_MAX, watch_read, w,
					      watch_done);
	if (!r) {
		watch_done(w);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/connect+json");
	return sbxs_queue(c, 200, r);
}
