/*
 * tests/unit/cli/test_cp_unpack.c: a copy out's tar stream unpacked on the
 * host (cli/cp-unpack.c), fed streams a hostile sandbox could forge: ".."
 * entries, entries outside the copy's one top name, a write through a
 * symlink it just made, a hard link to a host file, a device node, set-uid
 * modes. Each must leave nothing outside the target, and the stream is read
 * to its end whatever happens (the run must never block on a full pipe).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cp-unpack.c"

struct ent {
	const char *name;
	mode_t type, perm;
	const char *data;     /* regular files */
	const char *symlink;  /* AE_IFLNK */
	const char *hardlink; /* a hard link entry */
};

static char dir[] = "/tmp/sbx-cp-unpack.XXXXXX";

/* The entries as a tar file; returns its fd at offset 0, *size its length. */
static int tar_of(const struct ent *v, off_t *size)
{
	char path[64];
	struct archive *a = archive_write_new();
	int fd;

	snprintf(path, sizeof(path), "/tmp/sbx-cp-tar.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	archive_write_set_format_pax_restricted(a);
	assert_int_equal(archive_write_open_fd(a, fd), ARCHIVE_OK);
	for (; v->name; v++) {
		struct archive_entry *e = archive_entry_new();

		archive_entry_set_pathname(e, v->name);
		archive_entry_set_filetype(e, v->type);
		archive_entry_set_perm(e, v->perm);
		if (v->symlink)
			archive_entry_set_symlink(e, v->symlink);
		if (v->hardlink) {
			archive_entry_set_hardlink(e, v->hardlink);
			archive_entry_set_size(e, 0);
		} else if (v->data)
			archive_entry_set_size(e, (la_int64_t)strlen(v->data));
		assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
		if (v->data && !v->hardlink)
			archive_write_data(a, v->data, strlen(v->data));
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	*size = lseek(fd, 0, SEEK_CUR);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Unpacks v as the copy out of /workspace/d to LOCAL "out" in a fresh
 * folder; returns cli_cp_unpack()'s result, with the stream read to its end. */
static int unpack(const struct ent *v, char *fail)
{
	off_t size;
	int fd = tar_of(v, &size), rc;

	rc = cli_cp_unpack(fd, "/workspace/d", "out", fail, 512);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), size);
	close(fd);
	return rc;
}

static int exists(const char *p)
{
	struct stat st;

	return lstat(p, &st) == 0;
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/sbx-cp-unpack.XXXXXX");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(chdir(dir), 0);
	assert_int_equal(mkdir("outside", 0755), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	assert_int_equal(chdir("/"), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void a_tree(void **state)
{
	const struct ent v[] = {{"d", AE_IFDIR, 0750},
				{"d/f", AE_IFREG, 0640, "hello"},
				{"d/s", AE_IFREG, 04755, "x"},
				{"d/l", AE_IFLNK, 0777, NULL, "/etc/shadow"},
				{"d/h", AE_IFREG, 0640, "", NULL, "d/f"},
				{NULL}};
	char fail[512] = "", buf[16] = "";
	struct stat st;
	FILE *f;

	(void)state;
	if (unpack(v, fail) != 0)
		fail_msg("%s", fail);
	assert_int_equal(stat("out/f", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(stat("out/s", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755); /* no set-uid here */
	assert_int_equal(stat("out", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_equal(lstat("out/l", &st), 0);
	assert_true(S_ISLNK(st.st_mode)); /* a link, never the file's bytes */
	assert_int_equal(stat("out/h", &st), 0);
	f = fopen("out/h", "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "hello");
}

static void into_a_directory(void **state)
{
	const struct ent v[] = {{"d/f", AE_IFREG, 0600, "x"}, {NULL}};
	char fail[512] = "";

	(void)state;
	assert_int_equal(mkdir("out", 0755), 0);
	assert_int_equal(unpack(v, fail), 0);
	assert_true(exists("out/d/f"));
}

static void dotdot(void **state)
{
	const struct ent v[] = {{"d", AE_IFDIR, 0755},
				{"d/../outside/pwn", AE_IFREG, 0644, "pwn"},
				{"d/f", AE_IFREG, 0644, "late"},
				{NULL}};
	char fail[512] = "";

	(void)state;
	assert_int_equal(unpack(v, fail), -1);
	assert_false(exists("outside/pwn"));
	assert_false(exists("pwn"));
	assert_true(fail[0]);
}

static void another_top(void **state)
{
	const struct ent v[] = {
		{"d/f", AE_IFREG, 0644, "x"}, {"outside/pwn", AE_IFREG, 0644, "pwn"}, {NULL}};
	char fail[512] = "";

	(void)state;
	assert_int_equal(unpack(v, fail), -1);
	assert_false(exists("outside/pwn"));
	assert_non_null(strstr(fail, "not part of the copy"));
}

static void first_names_nothing(void **state)
{
	const struct ent v1[] = {{"../outside/pwn", AE_IFREG, 0644, "pwn"}, {NULL}};
	const struct ent v2[] = {{"/outside/pwn", AE_IFREG, 0644, "pwn"}, {NULL}};
	char fail[512] = "";

	(void)state;
	assert_int_equal(unpack(v1, fail), -1);
	assert_false(exists("outside/pwn"));
	fail[0] = '\0';
	assert_int_equal(unpack(v2, fail), -1);
	assert_false(exists("outside/pwn"));
	assert_false(exists("/outside/pwn"));
}

static void through_a_symlink(void **state)
{
	char target[sizeof(dir) + 16], pwn[sizeof(dir) + 16];
	struct ent v[] = {{"d", AE_IFDIR, 0755},
			  {"d/l", AE_IFLNK, 0777, NULL, target},
			  {"d/l/pwn", AE_IFREG, 0644, "pwn"},
			  {NULL}};
	char fail[512] = "";

	(void)state;
	snprintf(target, sizeof(target), "%s/outside", dir);
	snprintf(pwn, sizeof(pwn), "%s/outside/pwn", dir);
	/* Refused, or the link replaced by a folder of the copy: never
	 * written through. */
	if (unpack(v, fail) == 0) {
		struct stat st;

		assert_int_equal(lstat("out/l", &st), 0);
		assert_true(S_ISDIR(st.st_mode));
	}
	assert_false(exists(pwn));
}

static void hardlink_out(void **state)
{
	const struct ent v[] = {
		{"d", AE_IFDIR, 0755}, {"d/h", AE_IFREG, 0644, "", NULL, "/etc/passwd"}, {NULL}};
	char fail[512] = "";

	(void)state;
	assert_int_equal(unpack(v, fail), -1);
	assert_false(exists("out/h"));
	assert_non_null(strstr(fail, "not part of the copy"));
}

static void device(void **state)
{
	const struct ent v[] = {{"d", AE_IFDIR, 0755}, {"d/null", AE_IFCHR, 0666}, {NULL}};
	char fail[512] = "";

	(void)state;
	assert_int_equal(unpack(v, fail), -1);
	assert_false(exists("out/null"));
}

static void garbage(void **state)
{
	char fail[512] = "", path[] = "/tmp/sbx-cp-garbage.XXXXXX", junk[100000];
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	memset(junk, 'A', sizeof(junk));
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	lseek(fd, 0, SEEK_SET);
	assert_int_equal(cli_cp_unpack(fd, "/workspace/d", "out", fail, sizeof(fail)), -1);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), (off_t)sizeof(junk));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_tree, setup, teardown),
		cmocka_unit_test_setup_teardown(into_a_directory, setup, teardown),
		cmocka_unit_test_setup_teardown(dotdot, setup, teardown),
		cmocka_unit_test_setup_teardown(another_top, setup, teardown),
		cmocka_unit_test_setup_teardown(first_names_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(through_a_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(hardlink_out, setup, teardown),
		cmocka_unit_test_setup_teardown(device, setup, teardown),
		cmocka_unit_test_setup_teardown(garbage, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
