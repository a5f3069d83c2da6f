/*
 * tests/unit/cli/test_dproto.c: the local daemon's frames, requests and
 * replies (cli/dproto.c): every header rule, every request field's type,
 * and the replies the command's client accepts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/dproto.c"

static int check(const uint8_t h[5], int from_daemon, enum cli_dtype *t, size_t *n, char *err)
{
	return cli_dframe_check(h, from_daemon, t, n, err, 256);
}

static void header_rules(void **state)
{
	uint8_t h[5];
	enum cli_dtype t;
	size_t n;
	char err[256];

	(void)state;
	cli_dframe_header(h, CLI_D_REQUEST, 300);
	assert_int_equal(check(h, 0, &t, &n, err), 0);
	assert_int_equal(t, CLI_D_REQUEST);
	assert_int_equal(n, 300);
	/* a client's type from the daemon, a daemon's type from a client */
	assert_int_equal(check(h, 1, &t, &n, err), -1);
	assert_non_null(strstr(err, "not the daemon's"));
	cli_dframe_header(h, CLI_D_STDOUT, 10);
	assert_int_equal(check(h, 0, &t, &n, err), -1);
	assert_int_equal(check(h, 1, &t, &n, err), 0);
	/* unknown type */
	h[0] = 0x7f;
	assert_int_equal(check(h, 0, &t, &n, err), -1);
	assert_non_null(strstr(err, "unknown frame type 0x7f"));
	/* a huge frame is refused from its header alone */
	h[0] = CLI_D_REQUEST;
	h[1] = h[2] = h[3] = h[4] = 0xff;
	assert_int_equal(check(h, 0, &t, &n, err), -1);
	assert_non_null(strstr(err, "4294967295 bytes"));
	cli_dframe_header(h, CLI_D_REQUEST, CLI_D_JSON_MAX + 1);
	assert_int_equal(check(h, 0, &t, &n, err), -1);
	cli_dframe_header(h, CLI_D_REQUEST, 0);
	assert_int_equal(check(h, 0, &t, &n, err), -1);
	/* data: 1..65536; EOF: empty only */
	cli_dframe_header(h, CLI_D_STDIN, CLI_D_DATA_MAX);
	assert_int_equal(check(h, 0, &t, &n, err), 0);
	cli_dframe_header(h, CLI_D_STDIN, CLI_D_DATA_MAX + 1);
	assert_int_equal(check(h, 0, &t, &n, err), -1);
	cli_dframe_header(h, CLI_D_STDIN, 0);
	assert_int_equal(check(h, 0, &t, &n, err), -1);
	cli_dframe_header(h, CLI_D_STDIN_EOF, 0);
	assert_int_equal(check(h, 0, &t, &n, err), 0);
	cli_dframe_header(h, CLI_D_STDIN_EOF, 1);
	assert_int_equal(check(h, 0, &t, &n, err), -1);
}

static int parse(const char *json, struct cli_dreq *rq, char *err)
{
	return cli_dreq_parse(json, strlen(json), rq, err, 256);
}

static void requests(void **state)
{
	struct cli_dreq rq;
	char err[256];

	(void)state;
	assert_int_equal(parse("{\"op\":\"exec\",\"id\":\"abc\",\"argv\":[\"echo\",\"hi\"],"
			       "\"env\":[\"A=1\"],\"workdir\":\"/tmp\",\"timeout_ms\":5000,"
			       "\"stdin\":true,\"raw_output\":false}",
			       &rq, err),
			 0);
	assert_int_equal(rq.op, CLI_DOP_EXEC);
	assert_string_equal(rq.id, "abc");
	assert_string_equal(rq.argv[1], "hi");
	assert_null(rq.argv[2]);
	assert_string_equal(rq.env[0], "A=1");
	assert_int_equal(rq.timeout_ms, 5000);
	assert_int_equal(rq.want_stdin, 1);
	cli_dreq_free(&rq);

	assert_int_equal(parse("{\"op\":\"create\",\"image\":\"x\",\"limits\":{\"memory\":\"256m\","
			       "\"max-output\":\"1m\"},\"allow\":[{\"cidr\":true,\"spec\":"
			       "\"198.51.100.0/24:443\"}],\"tenant\":\"t\"}",
			       &rq, err),
			 0);
	assert_string_equal(rq.limit[SBX_LIMIT_MEMORY], "256m");
	assert_string_equal(rq.limit[SBX_LIMIT_OUTPUT], "1m");
	assert_int_equal(rq.allow_n, 1);
	assert_int_equal(rq.allow[0].cidr, 1);
	assert_int_equal(rq.allow[0].preset, 0);
	cli_dreq_free(&rq);
	assert_int_equal(parse("{\"op\":\"create\",\"allow\":[{\"cidr\":false,\"spec\":\"pypi\","
			       "\"preset\":true}]}",
			       &rq, err),
			 0);
	assert_int_equal(rq.allow[0].preset, 1);
	assert_int_equal(rq.allow[0].cidr, 0);
	cli_dreq_free(&rq);

	assert_int_equal(parse("{\"op\":\"list\"}", &rq, err), 0);
	cli_dreq_free(&rq);
	assert_int_equal(parse("{\"op\":\"kill\",\"id\":\"abc\"}", &rq, err), 0);
	cli_dreq_free(&rq);
	/* pause: its bound, in ms (none: 0, the ceiling); only a pause has one */
	assert_int_equal(parse("{\"op\":\"pause\",\"id\":\"abc\",\"max_ms\":7200000}", &rq, err),
			 0);
	assert_int_equal(rq.max_ms, 7200000);
	cli_dreq_free(&rq);
	assert_int_equal(parse("{\"op\":\"pause\",\"id\":\"abc\"}", &rq, err), 0);
	assert_int_equal(rq.max_ms, 0);
	cli_dreq_free(&rq);
	assert_int_equal(parse("{\"op\":\"pause\",\"id\":\"a\",\"max_ms\":-1}", &rq, err), -1);
	assert_non_null(strstr(err, "\"max_ms\""));
	assert_int_equal(parse("{\"op\":\"pause\",\"id\":\"a\",\"max_ms\":\"1h\"}", &rq, err), -1);
	assert_int_equal(parse("{\"op\":\"resume\",\"id\":\"a\",\"max_ms\":1000}", &rq, err), -1);
	assert_non_null(strstr(err, "\"max_ms\""));

	/* refusals, each naming the problem */
	assert_int_equal(parse("[]", &rq, err), -1);
	assert_non_null(strstr(err, "not a JSON object"));
	assert_int_equal(parse("{\"op\":\"exec\"", &rq, err), -1);
	assert_int_equal(parse("{\"op\":\"format\"}", &rq, err), -1);
	assert_non_null(strstr(err, "\"op\""));
	assert_int_equal(parse("{\"op\":\"kill\"}", &rq, err), -1);
	assert_non_null(strstr(err, "missing"));
	assert_int_equal(parse("{\"op\":\"exec\",\"id\":\"a\",\"argv\":[]}", &rq, err), -1);
	assert_non_null(strstr(err, "argv"));
	assert_int_equal(parse("{\"op\":\"exec\",\"id\":\"a\",\"argv\":[1]}", &rq, err), -1);
	assert_int_equal(parse("{\"op\":\"exec\",\"id\":\"a\\u0000b\",\"argv\":[\"x\"]}", &rq, err),
			 -1);
	assert_int_equal(parse("{\"op\":\"exec\",\"id\":\"a\",\"argv\":[\"x\"],\"timeout_ms\":-1}",
			       &rq, err),
			 -1);
	/* a field of another op, an unknown field, a duplicate key */
	assert_int_equal(parse("{\"op\":\"list\",\"image\":\"x\"}", &rq, err), -1);
	assert_non_null(strstr(err, "\"image\""));
	assert_int_equal(parse("{\"op\":\"list\",\"privileged\":true}", &rq, err), -1);
	assert_int_equal(parse("{\"op\":\"list\",\"op\":\"kill\"}", &rq, err), -1);
	assert_int_equal(parse("{\"op\":\"create\",\"limits\":{\"swap\":\"1g\"}}", &rq, err), -1);
	assert_int_equal(parse("{\"op\":\"create\",\"allow\":[{\"spec\":\"x\"}]}", &rq, err), -1);
	assert_int_equal(
		parse("{\"op\":\"create\",\"allow\":[{\"cidr\":1,\"spec\":\"x\",\"z\":1}]}", &rq,
		      err),
		-1);
	/* "preset": a boolean, never with "cidr": true */
	assert_int_equal(parse("{\"op\":\"create\",\"allow\":[{\"cidr\":false,\"spec\":\"x\","
			       "\"preset\":1}]}",
			       &rq, err),
			 -1);
	assert_int_equal(parse("{\"op\":\"create\",\"allow\":[{\"cidr\":true,\"spec\":\"x\","
			       "\"preset\":true}]}",
			       &rq, err),
			 -1);
}

static void replies(void **state)
{
	const char *ok = "{\"ok\":true,\"status\":0,\"exit_code\":3,\"signal\":0,"
			 "\"stdout_truncated\":false,\"stderr_truncated\":true,"
			 "\"stdout_bytes\":5,\"stderr_bytes\":7,\"duration_ms\":1,"
			 "\"cpu_user_us\":2,\"cpu_system_us\":3,\"max_rss_kb\":4,"
			 "\"limits_hit\":4,\"path\":1,\"backend\":\"docker\",\"tier\":"
			 "\"container\",\"memory_cap\":100,\"output_cap\":200,"
			 "\"timeout_ms\":300,\"spans_dropped\":0}";
	struct cli_dexec_info info;
	sbx_result r;
	const char *msg = NULL;
	json_t *root = NULL, *rows = NULL;
	char err[256];
	int code = 0;

	(void)state;
	assert_int_equal(cli_dreply_parse(ok, strlen(ok), &root, &code, &msg, err, 256), 0);
	memset(&r, 0, sizeof(r));
	assert_int_equal(cli_dreply_exec(root, &r, &info, err, 256), 0);
	assert_int_equal(r.exit_code, 3);
	assert_int_equal(r.stderr_truncated, 1);
	assert_int_equal(r.limits_hit, 4);
	assert_int_equal(info.output_cap, 200);
	assert_string_equal(info.tier, "container");
	json_decref(root);

	msg = "{\"ok\":false,\"code\":-4,\"error\":\"no such\"}";
	assert_int_equal(cli_dreply_parse(msg, strlen(msg), &root, &code, &msg, err, 256), 1);
	assert_int_equal(code, -4);
	assert_string_equal(msg, "no such");
	json_decref(root);
	/* an error without a valid code, a reply without ok */
	msg = "{\"ok\":false,\"code\":3,\"error\":\"x\"}";
	assert_int_equal(cli_dreply_parse(msg, strlen(msg), &root, &code, &msg, err, 256), -1);
	assert_int_equal(cli_dreply_parse("{}", 2, &root, &code, &msg, err, 256), -1);
	/* an exec reply with a status out of range */
	root = json_loads(ok, 0, NULL);
	json_object_set_new(root, "status", json_integer(9));
	assert_int_equal(cli_dreply_exec(root, &r, &info, err, 256), -1);
	json_decref(root);
	/* list rows: every field typed */
	root = json_loads("{\"ok\":true,\"sandboxes\":[{\"id\":\"a\",\"tenant\":\"t\",\"image\":"
			  "\"i\",\"state\":\"running\",\"created\":1,\"deadline\":2}]}",
			  0, NULL);
	assert_int_equal(cli_dreply_rows(root, &rows, err, 256), 0);
	assert_int_equal(json_array_size(rows), 1);
	json_decref(rows);
	json_object_del(json_array_get(json_object_get(root, "sandboxes"), 0), "state");
	assert_int_equal(cli_dreply_rows(root, &rows, err, 256), -1);
	json_decref(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(header_rules),
		cmocka_unit_test(requests),
		cmocka_unit_test(replies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
