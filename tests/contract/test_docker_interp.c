/*
 * tests/contract/test_docker_interp.c: code contexts (sandboxio/interp.h)
 * against the real dockerd, in the default image (python3-matplotlib and
 * python3-pandas are part of it). SBX_TEST_INTERP_IMAGE names another image
 * built by the same recipe (`sandboxio image build --ref REF`).
 *
 * State persists from cell to cell; a matplotlib figure comes back as PNG
 * and SVG, a DataFrame as HTML and text; two contexts do not share names; a
 * cell past its deadline is interrupted and the context goes on; a cell that
 * ignores the interrupt gets its context restarted, and says so; an
 * interrupt from another thread stops a cell; bash keeps its variables and
 * cwd; a secret is redacted from every part of a result; and a cell that
 * writes garbage to the context's socket (what the host parses) gets a
 * result that counts it, and the context still works. The context's
 * process has the uid, no_new_privs, seccomp mode and capability sets of
 * a run.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "support/engine.h"

struct fx {
	sbx_backend *b;
	sbx_policy *p;
	sbx_sandbox *s;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	const char *img = getenv("SBX_TEST_INTERP_IMAGE");

	if (!f || !t_engine_ready())
		return -1;
	f->b = t_backend();
	f->p = t_policy();
	if ((img && *img && sbx_policy_set_image(f->p, img) != 0) ||
	    sbx_sandbox_create(&f->s, f->b, f->p) != 0) {
		fprintf(stderr, "setup: %s\n", sbx_error_last()->message);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (!f)
		return 0;
	sbx_sandbox_close(f->s);
	sbx_policy_free(f->p);
	sbx_backend_free(f->b);
	free(f);
	return 0;
}

static sbx_sandbox *S(void **state)
{
	return ((struct fx *)*state)->s;
}

static sbx_context *ctx(void **state, const char *lang)
{
	sbx_context_options o = SBX_CONTEXT_OPTIONS_INIT;
	sbx_context *c = NULL;

	o.language = lang;
	if (sbx_context_create(&c, S(state), &o) != 0)
		fail_msg("context: %s", sbx_error_last()->message);
	return c;
}

static sbx_code_result *cell_opts(sbx_context *c, const char *code, const sbx_code_options *o)
{
	sbx_code_result *r = NULL;

	if (sbx_context_run(&r, c, code, strlen(code), o) != 0)
		fail_msg("cell '%s': %s", code, sbx_error_last()->message);
	return r;
}

static sbx_code_result *cell(sbx_context *c, const char *code)
{
	return cell_opts(c, code, NULL);
}

static void assert_ok(const sbx_code_result *r)
{
	if (r->status != SBX_CODE_OK)
		fail_msg("status %s: %s: %s\n%s", sbx_code_status_name(r->status),
			 r->error_name ? r->error_name : "", r->error_value ? r->error_value : "",
			 r->error_traceback ? r->error_traceback : "");
}

static const sbx_display_item *item(const sbx_code_result *r, const char *mime)
{
	for (size_t i = 0; i < r->n_items; i++)
		if (strcmp(r->items[i].mime, mime) == 0)
			return &r->items[i];
	return NULL;
}

static void test_interp__state_persists(void **state)
{
	sbx_context *c = ctx(state, "python");
	sbx_code_result *r = cell(c, "x = 41");

	assert_ok(r);
	assert_null(r->text);
	sbx_code_result_free(r);
	r = cell(c, "print('hello')\nx + 1");
	assert_ok(r);
	assert_non_null(r->text);
	assert_string_equal(r->text, "42");
	assert_string_equal(r->stdout_data, "hello\n");
	assert_non_null(item(r, "text/plain"));
	assert_true(item(r, "text/plain")->is_result);
	assert_int_equal(r->execution_count, 2);
	sbx_code_result_free(r);
	r = cell(c, "1 / 0");
	assert_int_equal(r->status, SBX_CODE_ERROR);
	assert_string_equal(r->error_name, "ZeroDivisionError");
	assert_string_equal(r->error_value, "division by zero");
	assert_non_null(strstr(r->error_traceback, "<cell-3>"));
	sbx_code_result_free(r);
	assert_int_equal(sbx_context_close(c), 0);
}

static void test_interp__matplotlib_png_and_svg(void **state)
{
	sbx_context *c = ctx(state, "python");
	sbx_code_result *r = cell(c, "import matplotlib.pyplot as plt\n"
				     "plt.plot([1, 2, 3], [1, 4, 9])\n"
				     "plt.title('squares')\n"
				     "None");
	const sbx_display_item *png, *svg;

	assert_ok(r);
	png = item(r, "image/png");
	svg = item(r, "image/svg+xml");
	assert_non_null(png);
	assert_non_null(svg);
	assert_true(png->len > 8);
	assert_memory_equal(png->data, "\x89PNG\r\n\x1a\n", 8);
	assert_non_null(strstr((const char *)svg->data, "<svg"));
	sbx_code_result_free(r);
	sbx_context_close(c);
}

static void test_interp__pandas_html_and_text(void **state)
{
	sbx_context *c = ctx(state, "python");
	sbx_code_result *r = cell(c, "import pandas as pd\n"
				     "df = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})\n"
				     "df");
	const sbx_display_item *html;

	assert_ok(r);
	html = item(r, "text/html");
	assert_non_null(html);
	assert_non_null(strstr((const char *)html->data, "<table"));
	assert_non_null(r->text);
	assert_non_null(strstr(r->text, "a  b"));
	sbx_code_result_free(r);
	r = cell(c, "{'k': [1, 2]}");
	assert_ok(r);
	assert_non_null(item(r, "application/json"));
	assert_string_equal((const char *)item(r, "application/json")->data, "{\"k\": [1, 2]}");
	sbx_code_result_free(r);
	sbx_context_close(c);
}

struct seen {
	const char *a, *b;
	int n;
};

/* Counts the listed contexts that are a or b (other tests' may be there). */
static int count_cb(const char *name, const char *lang, void *payload)
{
	struct seen *s = payload;

	assert_string_equal(lang, "python");
	s->n += strcmp(name, s->a) == 0 || strcmp(name, s->b) == 0;
	return 0;
}

static void test_interp__contexts_are_independent(void **state)
{
	sbx_context *a = ctx(state, "python"), *b = ctx(state, "python"), *again = NULL;
	sbx_code_result *r;
	struct seen n = {sbx_context_name(a), sbx_context_name(b), 0};

	assert_string_not_equal(sbx_context_name(a), sbx_context_name(b));
	r = cell(a, "y = 'in a'");
	assert_ok(r);
	sbx_code_result_free(r);
	r = cell(b, "y");
	assert_int_equal(r->status, SBX_CODE_ERROR);
	assert_string_equal(r->error_name, "NameError");
	sbx_code_result_free(r);
	assert_int_equal(sbx_context_list(S(state), count_cb, &n), 0);
	assert_int_equal(n.n, 2);
	/* A handle from the name finds the same state. */
	assert_int_equal(sbx_context_open(&again, S(state), sbx_context_name(a)), 0);
	assert_string_equal(sbx_context_language(again), "python");
	r = cell(again, "y");
	assert_ok(r);
	assert_string_equal(r->text, "'in a'");
	sbx_code_result_free(r);
	sbx_context_free(again);
	r = cell(b, "y = 'in b'");
	sbx_code_result_free(r);
	r = cell(a, "y");
	assert_string_equal(r->text, "'in a'");
	sbx_code_result_free(r);
	assert_int_equal(sbx_context_close(b), 0);
	n.n = 0;
	assert_int_equal(sbx_context_list(S(state), count_cb, &n), 0);
	assert_int_equal(n.n, 1);
	assert_int_equal(sbx_context_close(a), 0);
}

static void test_interp__deadline_interrupts_and_context_lives(void **state)
{
	sbx_code_options o = SBX_CODE_OPTIONS_INIT;
	sbx_context *c = ctx(state, "python");
	sbx_code_result *r = cell(c, "kept = 7");

	assert_ok(r);
	sbx_code_result_free(r);
	/* Generous: a warm cell takes a small fraction of this. */
	o.timeout_ms = 8000;
	r = cell_opts(c, "while True:\n    pass", &o);
	assert_int_equal(r->status, SBX_CODE_TIMEOUT);
	assert_string_equal(r->error_name, "KeyboardInterrupt");
	sbx_code_result_free(r);
	r = cell(c, "kept + 1");
	assert_ok(r);
	assert_string_equal(r->text, "8");
	sbx_code_result_free(r);
	sbx_context_close(c);
}

static void test_interp__stubborn_cell_restarts_context(void **state)
{
	sbx_code_options o = SBX_CODE_OPTIONS_INIT;
	sbx_context *c = ctx(state, "python");
	sbx_code_result *r = cell(c, "kept = 7");

	sbx_code_result_free(r);
	o.timeout_ms = 8000;
	r = cell_opts(c,
		      "import signal, time\n"
		      "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
		      "while True:\n    time.sleep(0.05)",
		      &o);
	assert_int_equal(r->status, SBX_CODE_RESTARTED);
	sbx_code_result_free(r);
	/* A new process: the state is gone, and it works. */
	r = cell(c, "kept");
	assert_int_equal(r->status, SBX_CODE_ERROR);
	assert_string_equal(r->error_name, "NameError");
	sbx_code_result_free(r);
	r = cell(c, "2 + 2");
	assert_ok(r);
	assert_string_equal(r->text, "4");
	sbx_code_result_free(r);
	sbx_context_close(c);
}

struct irq {
	sbx_context *c;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int started;
};

static int irq_out(int stream, const char *data, size_t len, void *payload)
{
	struct irq *q = payload;

	if (stream == SBX_STREAM_STDOUT && memmem(data, len, "started", 7)) {
		pthread_mutex_lock(&q->mu);
		q->started = 1;
		pthread_cond_signal(&q->cv);
		pthread_mutex_unlock(&q->mu);
	}
	return 0;
}

static void *irq_thread(void *arg)
{
	struct irq *q = arg;

	pthread_mutex_lock(&q->mu);
	while (!q->started)
		pthread_cond_wait(&q->cv, &q->mu);
	pthread_mutex_unlock(&q->mu);
	return (void *)(intptr_t)sbx_context_interrupt(q->c);
}

static void test_interp__interrupt_from_another_thread(void **state)
{
	struct irq q = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	sbx_code_options o = SBX_CODE_OPTIONS_INIT;
	sbx_code_result *r;
	pthread_t t;
	void *trc;

	q.c = ctx(state, "python");
	o.on_output = irq_out;
	o.payload = &q;
	assert_int_equal(pthread_create(&t, NULL, irq_thread, &q), 0);
	r = cell_opts(
		q.c, "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.05)",
		&o);
	pthread_join(t, &trc);
	assert_int_equal((int)(intptr_t)trc, 0);
	assert_int_equal(r->status, SBX_CODE_INTERRUPTED);
	assert_string_equal(r->error_name, "KeyboardInterrupt");
	sbx_code_result_free(r);
	r = cell(q.c, "'alive'");
	assert_ok(r);
	sbx_code_result_free(r);
	sbx_context_close(q.c);
}

static void test_interp__bash_keeps_variables_and_cwd(void **state)
{
	sbx_code_options o = SBX_CODE_OPTIONS_INIT;
	sbx_context *c = ctx(state, "bash");
	sbx_code_result *r = cell(c, "cd /tmp && V=7");

	assert_ok(r);
	sbx_code_result_free(r);
	r = cell(c, "echo \"$V\"; pwd");
	assert_ok(r);
	assert_string_equal(r->stdout_data, "7\n/tmp\n");
	sbx_code_result_free(r);
	r = cell(c, "false");
	assert_int_equal(r->status, SBX_CODE_ERROR);
	assert_string_equal(r->error_value, "1");
	sbx_code_result_free(r);
	/* Interrupted twice, in a child and then in bash itself: once a trap
	 * has returned from a cell whose child died of SIGINT, bash runs it
	 * again only when it is set again for each cell. */
	o.timeout_ms = 5000;
	for (int i = 0; i < 2; i++) {
		r = cell_opts(c, i ? "while :; do :; done; echo never" : "sleep 1000; echo never",
			      &o);
		assert_int_equal(r->status, SBX_CODE_TIMEOUT);
		assert_string_equal(r->stdout_data, "");
		sbx_code_result_free(r);
	}
	r = cell(c, "echo \"$V\"");
	assert_ok(r);
	assert_string_equal(r->stdout_data, "7\n");
	sbx_code_result_free(r);
	sbx_context_close(c);
}

static void assert_no(const char *where, const void *hay, size_t n, const char *value)
{
	if (hay && memmem(hay, n, value, strlen(value)))
		fail_msg("the secret's value is in %s", where);
}

static void test_interp__secrets_redacted_everywhere(void **state)
{
	/* '"' and '\' are escaped in the context's JSON lines: the decoded
	 * parts are redacted too. */
	static const char value[] = "Sv\"1\\x9c/+QZ-interp-secret";
	sbx_code_options o = SBX_CODE_OPTIONS_INIT;
	sbx_context *c = ctx(state, "python");
	sbx_secrets *sec = NULL;
	sbx_code_result *r;

	assert_int_equal(sbx_secrets_new(&sec), 0);
	assert_int_equal(sbx_secrets_add(sec, "TOKEN", value, strlen(value)), 0);
	o.secrets = sec;
	r = cell_opts(c,
		      "import os, sys, pandas as pd\n"
		      "t = os.environ['TOKEN']\n"
		      "print(t); print(t, file=sys.stderr)\n"
		      "class P:\n"
		      "    def _repr_png_(self):\n"
		      "        return b'\\x89PNG\\r\\n\\x1a\\n' + t.encode()\n"
		      "display({'k': t}, P())\n"
		      "pd.DataFrame({'s': [t]})",
		      &o);
	assert_ok(r);
	assert_no("stdout", r->stdout_data, r->stdout_len, value);
	assert_no("stderr", r->stderr_data, r->stderr_len, value);
	assert_non_null(strstr(r->stdout_data, "<redacted>"));
	assert_no("text", r->text, r->text ? strlen(r->text) : 0, value);
	for (size_t i = 0; i < r->n_items; i++)
		assert_no(r->items[i].mime, r->items[i].data, r->items[i].len, value);
	assert_non_null(strstr((const char *)item(r, "text/html")->data, "<redacted>"));
	assert_non_null(strstr((const char *)item(r, "application/json")->data, "<redacted>"));
	/* The PNG that held it became a note. */
	assert_null(item(r, "image/png"));
	sbx_code_result_free(r);
	/* The environment stays for later cells; errors are redacted too. */
	r = cell(c, "raise ValueError(t)");
	assert_int_equal(r->status, SBX_CODE_ERROR);
	assert_no("error value", r->error_value, strlen(r->error_value), value);
	assert_no("traceback", r->error_traceback, strlen(r->error_traceback), value);
	assert_non_null(strstr(r->error_value, "<redacted>"));
	sbx_code_result_free(r);
	sbx_context_close(c);
	sbx_secrets_free(sec);
}

static void test_interp__garbage_on_the_socket(void **state)
{
	sbx_context *c = ctx(state, "python");
	/* Writes to every socket the process holds (its listening one refuses). */
	sbx_code_result *r =
		cell(c, "import os, stat\n"
			"junk = [b'\\xff\\xfe not json\\n',\n"
			"        b'{\"t\": \"out\", \"s\": 7, \"d\": \"x\"}\\n',\n"
			"        b'{\"t\": \"display\", \"data\": {\"image/png\": \"!!\"}}\\n',\n"
			"        b'{\"t\": \"display\", \"data\": {\"x/evil\": \"a\"}}\\n',\n"
			"        b'[' * 100000 + b'\\n',\n"
			"        b'{\"t\": \"out\", \"s\": 1, \"d\": \"' + b'A' * (8 << 20),\n"
			"        b'\\n{\"t\": \"err\", \"name\": 1}\\n']\n"
			"for fd in map(int, os.listdir('/proc/self/fd')):\n"
			"    try:\n"
			"        if stat.S_ISSOCK(os.fstat(fd).st_mode):\n"
			"            for j in junk:\n"
			"                os.write(fd, j)\n"
			"    except OSError:\n"
			"        pass\n"
			"'done'");

	assert_true(r->malformed >= 5);
	sbx_code_result_free(r);
	r = cell(c, "1 + 1");
	assert_ok(r);
	assert_string_equal(r->text, "2");
	sbx_code_result_free(r);
	sbx_context_close(c);
}

/* The fields of /proc/self/status that say how a process is locked down. */
static const char status_fields[] = "Uid|Gid|NoNewPrivs|Seccomp|CapInh|CapPrm|CapEff|CapBnd|CapAmb";

static void test_interp__context_locked_down_as_a_run(void **state)
{
	char line[256];
	sbx_context *c = ctx(state, "python");
	sbx_code_result *r;
	sbx_result *run;

	snprintf(line, sizeof(line), "grep -E '^(%s):' /proc/self/status", status_fields);
	run = t_run(S(state), line, NULL);
	assert_int_equal(run->exit_code, 0);
	snprintf(line, sizeof(line),
		 "import re\n"
		 "print(''.join(l for l in open('/proc/self/status') if re.match(r'(%s):', l)), "
		 "end='')",
		 status_fields);
	r = cell(c, line);
	assert_ok(r);
	assert_non_null(strstr(run->stdout_data, "NoNewPrivs:\t1"));
	assert_non_null(strstr(run->stdout_data, "CapEff:\t0000000000000000"));
	assert_string_equal(r->stdout_data, run->stdout_data);
	sbx_result_free(run);
	sbx_code_result_free(r);
	sbx_context_close(c);
}

/* A cell that prints past the output cap: what passes is cut, the cell's
 * end still arrives, and the context keeps its state. */
static void test_interp__output_past_the_cap(void **state)
{
	sbx_policy *p = t_policy();
	const char *img = getenv("SBX_TEST_INTERP_IMAGE");
	sbx_sandbox *s = NULL;
	sbx_context *c = NULL;
	sbx_code_result *r;

	assert_int_equal(sbx_policy_set_limit(p, SBX_LIMIT_OUTPUT, 65536), 0);
	if (img && *img)
		assert_int_equal(sbx_policy_set_image(p, img), 0);
	if (sbx_sandbox_create(&s, ((struct fx *)*state)->b, p) != 0 ||
	    sbx_context_create(&c, s, NULL) != 0)
		fail_msg("%s", sbx_error_last()->message);
	r = cell(c, "kept = 5\nfor i in range(5000):\n    print('x' * 100)\n"
		    "print('y' * 300000)\n'done'");
	assert_ok(r);
	assert_true(r->truncated);
	assert_non_null(r->text);
	assert_string_equal(r->text, "'done'");
	assert_true(r->stdout_len <= 65536);
	sbx_code_result_free(r);
	r = cell(c, "kept");
	assert_ok(r);
	assert_string_equal(r->text, "5");
	sbx_code_result_free(r);
	sbx_context_close(c);
	sbx_sandbox_close(s);
	sbx_policy_free(p);
}

static void test_interp__bad_arguments(void **state)
{
	sbx_context_options o = SBX_CONTEXT_OPTIONS_INIT;
	sbx_context *c = NULL;

	o.language = "ruby";
	assert_int_equal(sbx_context_create(&c, S(state), &o), SBX_EINVALID);
	assert_non_null(strstr(sbx_error_last()->message, "ruby"));
	o.language = NULL;
	o.name = "../x";
	assert_int_equal(sbx_context_create(&c, S(state), &o), SBX_EINVALID);
	o.name = NULL;
	o.cwd = "relative";
	assert_int_equal(sbx_context_create(&c, S(state), &o), SBX_EINVALID);
	assert_int_equal(sbx_context_open(&c, S(state), "nosuch"), SBX_ENOTFOUND);
	o.cwd = NULL;
	o.name = "twice";
	assert_int_equal(sbx_context_create(&c, S(state), &o), 0);
	sbx_context *d = NULL;
	assert_int_equal(sbx_context_create(&d, S(state), &o), SBX_EINVALID);
	assert_non_null(strstr(sbx_error_last()->message, "already alive"));
	sbx_context_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interp__state_persists),
		cmocka_unit_test(test_interp__matplotlib_png_and_svg),
		cmocka_unit_test(test_interp__pandas_html_and_text),
		cmocka_unit_test(test_interp__contexts_are_independent),
		cmocka_unit_test(test_interp__deadline_interrupts_and_context_lives),
		cmocka_unit_test(test_interp__stubborn_cell_restarts_context),
		cmocka_unit_test(test_interp__interrupt_from_another_thread),
		cmocka_unit_test(test_interp__bash_keeps_variables_and_cwd),
		cmocka_unit_test(test_interp__secrets_redacted_everywhere),
		cmocka_unit_test(test_interp__garbage_on_the_socket),
		cmocka_unit_test(test_interp__context_locked_down_as_a_run),
		cmocka_unit_test(test_interp__output_past_the_cap),
		cmocka_unit_test(test_interp__bad_arguments),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
