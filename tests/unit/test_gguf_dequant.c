/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* GGUF dequantization bit for bit against the PyPI gguf package, and the scaled FP8/FP6/FP4 codecs
 * against PyPI ml_dtypes. tests/reference/gguf_vectors.py (run in the venv of scripts/setup.sh,
 * RLX_GGUF_VENV, default ~/.cache/rlx/gguf-0.19.0) writes random, quantizer-made and edge-case
 * blocks with the values gguf decodes them to; every f32 our decoder (ref/quant_formats.c) gives
 * must have exactly gguf's bits (NaN payloads included), and our reference quantizers (Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0, TQ1_0, TQ2_0, MXFP4) must write exactly the bytes gguf's quantizers write. A missing
 * venv is a failure. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cpu/ref/quant_formats.h"
#include "rlx_test.h"

static char dir[256];

static void *slurp(const char *name, size_t *len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(n > 0 ? (size_t)n : 1);
  if (p && n > 0 && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *len = n > 0 ? (size_t)n : 0;
  return p;
}

static int scheme_by_name(const char *name) {
  for (int i = 0; i < RLX_QUANT_SCHEME_COUNT; i++)
    if (strcmp(rlx_enum_quant_scheme.names[i], name) == 0) return i;
  return -1;
}
static int format_by_name(const char *name) {
  for (int i = 0; i < RLX_SCALED_FORMAT_COUNT; i++)
    if (strcmp(rlx_enum_scaled_format.names[i], name) == 0) return i;
  return -1;
}

static void check_gguf(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/gguf.txt", dir);
  FILE *f = fopen(path, "r");
  CHECK_MSG(f != NULL, "no manifest %s", path);
  if (!f) return;
  char name[64];
  size_t be, bb, nblk;
  int formats = 0;
  while (fscanf(f, "%63s %zu %zu %zu", name, &be, &bb, &nblk) == 4) {
    int sc = scheme_by_name(name);
    size_t ours_e = 0, ours_b = 0;
    CHECK_MSG(sc >= 0 && rq_gguf_block(sc, &ours_e, &ours_b) && ours_e == be && ours_b == bb,
              "%s: block geometry %zu/%zu differs from ours (%zu/%zu)", name, be, bb, ours_e, ours_b);
    if (sc < 0 || ours_e != be || ours_b != bb) continue;
    char fn[128];
    size_t lb = 0, lv = 0;
    snprintf(fn, sizeof fn, "%s.blocks", name);
    uint8_t *blocks = slurp(fn, &lb);
    snprintf(fn, sizeof fn, "%s.values", name);
    float *want = slurp(fn, &lv);
    CHECK_MSG(blocks && want && lb == nblk * bb && lv == nblk * be * 4, "%s: vector files missing or short", name);
    if (blocks && want && lb == nblk * bb && lv == nblk * be * 4) {
      float *got = malloc(nblk * be * sizeof *got);
      rq_gguf_decode_rows(sc, blocks, nblk, be, got);
      size_t bad = 0, nan = 0;
      for (size_t i = 0; i < nblk * be; i++) {
        uint32_t a, b;
        memcpy(&a, &got[i], 4);
        memcpy(&b, &want[i], 4);
        nan += isnan(want[i]);
        if (a != b) {
          if (bad < 3)
            fprintf(stderr, "  %s block %zu element %zu: got %a (0x%08x), gguf %a (0x%08x)\n", name, i / be, i % be,
                    (double)got[i], a, (double)want[i], b);
          bad++;
        }
      }
      CHECK_MSG(bad == 0, "%s: %zu of %zu values differ from gguf", name, bad, nblk * be);
      printf("gguf %-11s %4zu blocks, %6zu values (%zu NaN): %s\n", name, nblk, nblk * be, nan,
             bad ? "DIFFERS" : "bit-exact");
      free(got);
      formats++;
    }
    free(blocks);
    free(want);
  }
  fclose(f);
  CHECK_MSG(formats >= 23, "only %d GGUF formats were checked", formats);
}

/* Our reference quantizers against gguf's, byte for byte. */
static void check_quantizers(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/quant.txt", dir);
  FILE *f = fopen(path, "r");
  CHECK_MSG(f != NULL, "no manifest %s", path);
  if (!f) return;
  char name[64];
  size_t be, bb, nblk;
  int formats = 0;
  while (fscanf(f, "%63s %zu %zu %zu", name, &be, &bb, &nblk) == 4) {
    int sc = scheme_by_name(name);
    char fn[128];
    size_t li = 0, lo = 0;
    snprintf(fn, sizeof fn, "%s.qin", name);
    float *x = slurp(fn, &li);
    snprintf(fn, sizeof fn, "%s.qout", name);
    uint8_t *want = slurp(fn, &lo);
    CHECK_MSG(sc >= 0 && x && want && li == nblk * be * 4 && lo == nblk * bb, "%s: quantizer vectors missing", name);
    if (sc >= 0 && x && want && li == nblk * be * 4 && lo == nblk * bb) {
      uint8_t *got = malloc(bb);
      size_t bad = 0;
      for (size_t b = 0; b < nblk; b++) {
        bool ok = rq_gguf_encode(sc, x + b * be, got);
        CHECK_MSG(ok, "%s: no quantizer", name);
        if (ok && memcmp(got, want + b * bb, bb) != 0) {
          if (bad < 3) {
            size_t k = 0;
            while (got[k] == want[b * bb + k]) k++;
            fprintf(stderr, "  %s block %zu: byte %zu is 0x%02x, gguf 0x%02x\n", name, b, k, got[k], want[b * bb + k]);
          }
          bad++;
        }
      }
      CHECK_MSG(bad == 0, "%s: %zu of %zu quantized blocks differ from gguf", name, bad, nblk);
      printf("gguf quantizer %-9s %3zu blocks: %s\n", name, nblk, bad ? "DIFFERS" : "byte-exact");
      free(got);
      formats++;
    }
    free(x);
    free(want);
  }
  fclose(f);
  CHECK_MSG(formats == 8, "%d GGUF quantizers checked, expected 8", formats);
}

static void check_formats(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/fmt.txt", dir);
  FILE *f = fopen(path, "r");
  CHECK_MSG(f != NULL, "no manifest %s", path);
  if (!f) return;
  char name[64];
  size_t ncodes, nenc;
  while (fscanf(f, "%63s %zu %zu", name, &ncodes, &nenc) == 3) {
    int k = format_by_name(name);
    CHECK_MSG(k >= 0, "unknown format %s", name);
    if (k < 0) continue;
    rq_fmt fm = rq_fmt_of(k, 0, 0, 0);
    char fn[128];
    size_t ld = 0, li = 0, lo = 0;
    snprintf(fn, sizeof fn, "%s.decode", name);
    float *dec = slurp(fn, &ld);
    snprintf(fn, sizeof fn, "%s.enc_in", name);
    float *xin = slurp(fn, &li);
    snprintf(fn, sizeof fn, "%s.enc_out", name);
    uint8_t *cout = slurp(fn, &lo);
    size_t bad_dec = 0, bad_enc = 0;
    if (dec && xin && cout && ld == ncodes * 4 && li == nenc * 4 && lo == nenc) {
      for (size_t c = 0; c < ncodes; c++) {
        double v = rq_fmt_decode(&fm, (uint8_t)c);
        bool ok = isnan(dec[c]) ? isnan(v) : (v == (double)dec[c] && !signbit(v) == !signbit(dec[c]));
        if (!ok && bad_dec++ < 3)
          fprintf(stderr, "  %s decode 0x%02zx: got %g, ml_dtypes %g\n", name, c, v, (double)dec[c]);
      }
      for (size_t i = 0; i < nenc; i++) {
        uint8_t c = rq_fmt_encode(&fm, (double)xin[i]);
        if (c != cout[i] && bad_enc++ < 3)
          fprintf(stderr, "  %s encode %a: got 0x%02x, ml_dtypes 0x%02x\n", name, (double)xin[i], c, cout[i]);
      }
    } else {
      CHECK_MSG(false, "%s: vector files missing or short", name);
    }
    CHECK_MSG(bad_dec == 0 && bad_enc == 0, "%s: %zu decodes and %zu encodes differ from ml_dtypes", name, bad_dec,
              bad_enc);
    printf("ml_dtypes %-10s %3zu codes decoded, %5zu values encoded: %s\n", name, ncodes, nenc,
           bad_dec || bad_enc ? "DIFFERS" : "identical");
    free(dec);
    free(xin);
    free(cout);
  }
  fclose(f);
}

int main(void) {
  const char *venv = getenv("RLX_GGUF_VENV"), *home = getenv("HOME"), *src = getenv("RLX_SOURCE_DIR");
  char py[512], cmd[2048];
  if (venv)
    snprintf(py, sizeof py, "%s/bin/python", venv);
  else
    snprintf(py, sizeof py, "%s/.cache/rlx/gguf-0.19.0/bin/python", home ? home : "");
  snprintf(dir, sizeof dir, "/tmp/rlx_gguf_vectors_XXXXXX");
  CHECK(mkdtemp(dir) != NULL);
  snprintf(cmd, sizeof cmd, "'%s' '%s/tests/reference/gguf_vectors.py' '%s'", py, src ? src : ".", dir);
  int rc = system(cmd);
  CHECK_MSG(rc == 0,
            "could not write the test vectors with %s (PyPI gguf 0.19.0 + ml_dtypes 0.6.0): run scripts/setup.sh, "
            "or point RLX_GGUF_VENV at a venv holding them",
            py);
  if (rc == 0) {
    check_gguf();
    check_quantizers();
    check_formats();
  }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", dir);
  return rlx_test_finish("gguf_dequant");
}
