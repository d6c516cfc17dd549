/* SPDX-License-Identifier: MIT OR Apache-2.0 */
#define _POSIX_C_SOURCE 200809L
#include "io/file_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void *heap_alloc(void *ctx, size_t n) {
  (void)ctx;
  return malloc(n);
}
static void heap_free(void *ctx, void *p) {
  (void)ctx;
  free(p);
}

rlx_status rlx_file_read(const char *path, size_t max, const rlx_allocator *al, uint8_t **out, size_t *len) {
  static const rlx_allocator heap = {heap_alloc, heap_free, NULL};
  if (!al) al = &heap;
  *out = NULL;
  *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return rlx_errorf(RLX_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return rlx_errorf(RLX_ERR_IO, "%s: not a regular file", path);
  }
  if ((uint64_t)st.st_size > (uint64_t)max) {
    close(fd);
    return rlx_errorf(RLX_ERR_FORMAT, "%s: %lld bytes exceed the limit of %zu bytes", path, (long long)st.st_size, max);
  }
  size_t n = (size_t)st.st_size;
  uint8_t *buf = al->alloc(al->ctx, n ? n : 1);
  if (!buf) {
    close(fd);
    return rlx_errorf(RLX_ERR_OOM, "%s: out of memory reading %zu bytes", path, n);
  }
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      int e = errno;
      close(fd);
      al->free(al->ctx, buf);
      if (r == 0) return rlx_errorf(RLX_ERR_IO, "%s: file shrank while reading (%zu of %zu bytes)", path, got, n);
      return rlx_errorf(RLX_ERR_IO, "%s: read failed: %s", path, strerror(e));
    }
    got += (size_t)r;
  }
  close(fd);
  *out = buf;
  *len = n;
  return RLX_OK;
}

/* Writes everything to fd; 0 or the errno of the failure. */
static int write_all(int fd, const uint8_t *p, size_t len) {
  size_t done = 0;
  while (done < len) {
    ssize_t w = write(fd, p + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    done += (size_t)w;
  }
  return 0;
}

rlx_status rlx_file_write(const char *path, const void *data, size_t len) {
  /* A symlink or a non-regular target (/dev/null, a FIFO, a terminal) is written in place: renaming
   * a temporary over it would replace the link or the device node itself. */
  struct stat st;
  if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return rlx_errorf(RLX_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
    int e = write_all(fd, data, len);
    if (close(fd) != 0 && !e) e = errno;
    if (e) return rlx_errorf(RLX_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    return RLX_OK;
  }
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 32);
  if (!tmp) return rlx_errorf(RLX_ERR_OOM, "%s: out of memory", path);
  snprintf(tmp, plen + 32, "%s.tmp-%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    return rlx_errorf(RLX_ERR_IO, "%s: cannot open for writing: %s", path, strerror(e));
  }
  int e = write_all(fd, data, len);
  if (close(fd) != 0 && !e) e = errno;
  if (!e && rename(tmp, path) != 0) e = errno;
  if (e) {
    unlink(tmp);
    free(tmp);
    return rlx_errorf(RLX_ERR_IO, "%s: cannot write: %s", path, strerror(e));
  }
  free(tmp);
  return RLX_OK;
}
