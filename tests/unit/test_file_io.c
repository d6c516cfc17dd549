/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Whole-file reads and atomic writes (src/io/file_io.c): content round trip, the size limit,
 * and that a failed write leaves what was there untouched and no temporary file behind. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/file_io.h"
#include "rlx_test.h"

static char dir[] = "/tmp/rlx_file_io_XXXXXX";

static int entries(void) { /* files in dir, . and .. excluded */
  DIR *d = opendir(dir);
  int k = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) k++;
  if (d) closedir(d);
  return k;
}

static void test_round_trip(void) {
  char path[256];
  snprintf(path, sizeof path, "%s/a.bin", dir);
  uint8_t data[1000];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 3);
  CHECK_OK(rlx_file_write(path, data, sizeof data));
  uint8_t *got = NULL;
  size_t len = 0;
  CHECK_OK(rlx_file_read(path, sizeof data, NULL, &got, &len));
  CHECK(len == sizeof data && got && memcmp(got, data, len) == 0);
  free(got);
  /* overwrite with something shorter: the file is replaced, not partly rewritten */
  CHECK_OK(rlx_file_write(path, "xy", 2));
  CHECK_OK(rlx_file_read(path, 100, NULL, &got, &len));
  CHECK(len == 2 && memcmp(got, "xy", 2) == 0);
  free(got);
  /* an empty file reads as a valid, non-NULL buffer of length 0 */
  CHECK_OK(rlx_file_write(path, "", 0));
  CHECK_OK(rlx_file_read(path, 0, NULL, &got, &len));
  CHECK(len == 0 && got != NULL);
  free(got);
  CHECK(entries() == 1);
  unlink(path);
}

static void test_errors(void) {
  char path[256];
  snprintf(path, sizeof path, "%s/b.bin", dir);
  CHECK_OK(rlx_file_write(path, "0123456789", 10));
  uint8_t *got = (uint8_t *)1;
  size_t len = 7;
  CHECK_ERR(rlx_file_read(path, 9, NULL, &got, &len), RLX_ERR_FORMAT, "10 bytes exceed the limit of 9");
  CHECK(got == NULL && len == 0);
  CHECK_ERR(rlx_file_read(dir, 100, NULL, &got, &len), RLX_ERR_IO, "not a regular file");
  char missing[300];
  snprintf(missing, sizeof missing, "%s/nope/c.bin", dir);
  CHECK_ERR(rlx_file_read(missing, 100, NULL, &got, &len), RLX_ERR_IO, "nope/c.bin: cannot open");
  CHECK_ERR(rlx_file_write(missing, "z", 1), RLX_ERR_IO, "nope/c.bin: cannot open for writing");
  /* writing over a directory fails (it is opened in place, not renamed over): the directory
   * stays, no temporary is left */
  char sub[300];
  snprintf(sub, sizeof sub, "%s/sub", dir);
  CHECK(mkdir(sub, 0755) == 0);
  CHECK_ERR(rlx_file_write(sub, "new", 3), RLX_ERR_IO, "sub: cannot open for writing: Is a directory");
  struct stat st;
  CHECK(stat(sub, &st) == 0 && S_ISDIR(st.st_mode));
  CHECK(entries() == 2); /* b.bin and sub */
  /* b.bin still holds its old content */
  CHECK_OK(rlx_file_read(path, 100, NULL, &got, &len));
  CHECK(len == 10 && memcmp(got, "0123456789", 10) == 0);
  free(got);
  rmdir(sub);
  unlink(path);
}

/* A symlink stays a link: the file it points at is rewritten in place. */
static void test_symlink(void) {
  char target[256], link[256];
  snprintf(target, sizeof target, "%s/target.bin", dir);
  snprintf(link, sizeof link, "%s/link.bin", dir);
  CHECK_OK(rlx_file_write(target, "old", 3));
  CHECK(symlink(target, link) == 0);
  CHECK_OK(rlx_file_write(link, "newer", 5));
  struct stat st;
  CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
  uint8_t *got = NULL;
  size_t len = 0;
  CHECK_OK(rlx_file_read(target, 100, NULL, &got, &len));
  CHECK(len == 5 && memcmp(got, "newer", 5) == 0);
  free(got);
  CHECK(entries() == 2);
  unlink(link);
  unlink(target);
}

int main(void) {
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_round_trip();
  test_errors();
  test_symlink();
  rmdir(dir);
  return rlx_test_finish("file_io");
}
