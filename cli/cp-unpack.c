/*
 * cli/cp-unpack.c: a copy out of a sandbox (cli/cp.c) unpacked on this
 * host. The tar stream comes from the sandbox, whose code may have forged
 * it, so it is read as hostile, by libarchive with its secure extraction
 * flags: every entry must lie under the stream's first name, which becomes
 * LOCAL (or LOCAL/NAME when LOCAL is a directory); no entry may name "..",
 * an absolute path, or a path through a symlink; only regular files,
 * directories, symlinks and hard links (within the copy) are made; modes
 * are kept without the set-id and sticky bits, owners are not restored.
 * tests/unit/cli/test_cp_unpack.c and tests/fuzz/fuzz_cp.c feed it forged
 * streams.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "cli/cli.h"

/* name with its first component replaced by top; NULL: not under the
 * stream's one top name. */
static char *rename_entry(const char *name, const char *first, const char *top)
{
	size_t fl = strlen(first);
	char *out;

	while (name[0] == '.' && name[1] == '/')
		name += 2;
	if (strncmp(name, first, fl) != 0 || (name[fl] && name[fl] != '/'))
		return NULL;
	if (asprintf(&out, "%s%s", top, name + fl) < 0)
		return NULL;
	return out;
}

static int copy_data(struct archive *in, struct archive *out)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;

	while ((r = archive_read_data_block(in, &buf, &len, &off)) == ARCHIVE_OK)
		if (archive_write_data_block(out, buf, len, off) != ARCHIVE_OK)
			return -1;
	if (r != ARCHIVE_EOF) {
		archive_copy_error(out, in);
		return -1;
	}
	return 0;
}

int cli_cp_unpack(int fd, const char *path, const char *local, char *fail, size_t fsize)
{
	struct archive *in = archive_read_new(), *disk = archive_write_disk_new();
	struct archive_entry *e;
	char first[PATH_MAX] = "", top[PATH_MAX], drain[65536];
	const char *base;
	struct stat st;
	int r;

	/* The top name here: LOCAL itself, or inside it when it is a
	 * directory; the entries are made relative to the current directory,
	 * which cmd_cp() set to LOCAL's folder. */
	base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (stat(local, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(top, sizeof(top), "%s/%s", local, *base ? base : "copy");
	else
		snprintf(top, sizeof(top), "%s", local);
	if (!in || !disk) {
		snprintf(fail, fsize, "out of memory");
		goto drain;
	}
	archive_read_support_format_tar(in);
	archive_write_disk_set_options(
		disk, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
			      ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
			      ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_UNLINK);
	if (archive_read_open_fd(in, fd, 65536) != ARCHIVE_OK) {
		snprintf(fail, fsize, "%s", archive_error_string(in));
		goto drain;
	}
	while ((r = archive_read_next_header(in, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e), *link = archive_entry_hardlink(e);
		mode_t type = archive_entry_filetype(e);
		char *to = NULL, *lto = NULL;

		if (!name) {
			snprintf(fail, fsize, "an entry without a name");
			break;
		}
		if (!first[0]) {
			const char *n = name;

			while (n[0] == '.' && n[1] == '/')
				n += 2;
			snprintf(first, sizeof(first), "%.*s", (int)strcspn(n, "/"), n);
			if (!first[0] || strcmp(first, ".") == 0 || strcmp(first, "..") == 0) {
				snprintf(fail, fsize,
					 "the sandbox sent '%.200s', which names no file", name);
				break;
			}
		}
		to = rename_entry(name, first, top);
		if (link)
			lto = rename_entry(link, first, top);
		if (!to || (link && !lto) ||
		    (!link && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)) {
			snprintf(fail, fsize,
				 "the sandbox sent '%.200s', which is not part of the copy", name);
			free(to);
			free(lto);
			break;
		}
		archive_entry_set_pathname(e, to);
		if (lto)
			archive_entry_set_hardlink(e, lto);
		archive_entry_set_perm(e, archive_entry_perm(e) & 0777);
		free(to);
		free(lto);
		if (archive_write_header(disk, e) != ARCHIVE_OK || copy_data(in, disk) < 0) {
			snprintf(fail, fsize, "%s", archive_error_string(disk));
			break;
		}
		if (archive_write_finish_entry(disk) != ARCHIVE_OK) {
			snprintf(fail, fsize, "%s", archive_error_string(disk));
			break;
		}
	}
	if (!fail[0] && r != ARCHIVE_EOF && r != ARCHIVE_OK)
		snprintf(fail, fsize, "%s", archive_error_string(in));
drain:
	if (disk)
		archive_write_close(disk);
	archive_write_free(disk);
	archive_read_free(in);
	while (read(fd, drain, sizeof(drain)) > 0)
		;
	return fail[0] ? -1 : 0;
}
