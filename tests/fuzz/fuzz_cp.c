/*
 * tests/fuzz/fuzz_cp.c: libFuzzer target for a copy out's tar stream as
 * this host unpacks it (cli/cp-unpack.c): the bytes a sandbox, whose code
 * may forge them, sends for `sandboxio cp ID:PATH LOCAL`.
 *
 * Each input is unpacked as LOCAL "out" in a private folder made once.
 * Invariants besides the sanitizers': the folder then holds nothing but
 * "out" (no entry escaped it by "..", an absolute name or a symlink); no
 * file under "out" has a set-id or sticky bit; a refused stream says why.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/sbx-fuzz-cp.XXXXXX";

static int check_mode(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)ftw;
	if (flag != FTW_SL && flag != FTW_SLN && (st->st_mode & 07000))
		abort();
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void cleanup(void)
{
	if (chdir(dir) == 0)
		nftw("out", rm_entry, 16, FTW_PHYS | FTW_DEPTH);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready, home = -1;
	char fail[512] = "";
	struct dirent *de;
	DIR *d;
	int fd, rc;

	if (!ready) {
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
		ready = 1;
	}
	/* Unpacked in the private folder; libFuzzer's paths are relative to
	 * where it started. */
	home = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (home < 0 || chdir(dir) < 0)
		abort();
	fd = memfd_create("cp", MFD_CLOEXEC);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) ||
	    lseek(fd, 0, SEEK_SET) < 0)
		abort();
	rc = cli_cp_unpack(fd, "/workspace/d", "out", fail, sizeof(fail));
	close(fd);
	if (rc < 0 && !fail[0])
		abort();
	nftw("out", check_mode, 16, FTW_PHYS);
	d = opendir(".");
	if (!d)
		abort();
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "out"))
			abort();
	closedir(d);
	nftw("out", rm_entry, 16, FTW_PHYS | FTW_DEPTH);
	if (fchdir(home) < 0)
		abort();
	close(home);
	return 0;
}
