/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Corpus replay: a main() for the fuzz targets when they are not built with libFuzzer. It feeds
 * every regular file under the given folders (or the given files) to LLVMFuzzerTestOneInput, one
 * at a time, exactly as the fuzzer would; a target signals a broken property by aborting, and the
 * sanitizers of an ASan build report memory errors. CI runs it over tests/fuzz/corpus/<target>/
 * (tests/fuzz/replay.cmake), so every crash the fuzzers ever found stays fixed. Fails when it
 * finds no input at all, so a missing corpus is not a pass. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return -1;
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) break;
    if (n == cap) {
      uint8_t *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t k = fread(buf + n, 1, cap - n, f);
    n += k;
    if (k == 0) break;
  }
  fclose(f);
  if (!buf) {
    fprintf(stderr, "replay: out of memory reading %s\n", path);
    return -1;
  }
  /* an exact-size copy, so that ASan sees a read one past the input */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 1;
}

/* Replays `path` (a file, or every file of a folder in name order, one level deep). Returns the
 * number of inputs replayed, or -1 on an I/O error. */
static long replay_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "replay: %s does not exist\n", path);
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) return replay_file(path);
  DIR *d = opendir(path);
  if (!d) {
    fprintf(stderr, "replay: cannot open folder %s\n", path);
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) break;
      names = nn;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_names);
  long done = 0;
  for (size_t i = 0; i < n; i++) {
    char full[4096];
    snprintf(full, sizeof full, "%s/%s", path, names[i]);
    struct stat fs;
    if (names[i] && stat(full, &fs) == 0 && S_ISREG(fs.st_mode)) {
      if (replay_file(full) < 0)
        done = -1;
      else if (done >= 0)
        done++;
    }
    free(names[i]);
  }
  free(names);
  return done;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  long total = 0;
  for (int i = 1; i < argc; i++) {
    long k = replay_path(argv[i]);
    if (k < 0) return 1;
    total += k;
  }
  if (total == 0) {
    fprintf(stderr, "replay: no input found in the given paths\n");
    return 1;
  }
  printf("replayed %ld inputs without a failure\n", total);
  return 0;
}
