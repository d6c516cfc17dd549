/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* `rlx onnx-conformance`: runs the ONNX backend test suite (Debian's libonnx-testdata) through the
 * importer and the CPU backend. Each test folder holds model.onnx and test_data_set_N/ folders of
 * input_K.pb / output_K.pb TensorProto files (SequenceProto / OptionalProto for values of those
 * types, flattened to NAME.0, NAME.1, ... as the importer does). Every test runs in its own forked
 * child process with a time limit, so a crash or a hang is a result ("crashed", "timeout") and
 * never stops the suite.
 * Outcomes: passed, failed (with the largest errors), unsupported (with the importer's or the
 * backend's reason), crashed, timeout. Optionally writes a JSON report and the Markdown document
 * docs/onnx-conformance.md, and checks a minimum pass count (the CI ratchet). */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "onnx_conformance.h"
#include "rlx/cpu.h"
#include "rlx/onnx.h"
#include "rlx/rlx.h"
#include "rlx/session.h"
#include "core/elem.h"

/* ONNX backend test defaults (onnx/backend/test/runner): numpy.testing.assert_allclose. */
#define CONF_RTOL 1e-3
#define CONF_ATOL 1e-7
#define MAX_TENSORS 64      /* input_K.pb / output_K.pb files read per data set */
#define MAX_DATA_SETS 64    /* test_data_set_N folders per test */
#define MAX_MSG 2000        /* bytes of a result message kept */
#define MAX_CHILD_ERR 16384 /* bytes of a child's stderr kept */

const char cli_onnx_conformance_usage[] =
    "usage: rlx onnx-conformance DIR... [--json] [--doc FILE] [--min-passed N] [--jobs N]\n"
    "                            [--timeout S] [--filter TEXT] [--backend B] [-v | -q]\n"
    "\n"
    "Runs ONNX backend tests (e.g. /usr/include/onnx/backend/test/data/node). DIR is a suite folder\n"
    "of test_* folders (the suite is named after DIR) or one test folder holding model.onnx. Each\n"
    "test is imported (symbolic dims bound from the input .pb shapes), compiled for the CPU backend (or --backend)\n"
    "and run on every test_data_set_N; its outputs are compared with output_K.pb (floats:\n"
    "|got - expected| <= 1e-7 + 1e-3 |expected|, NaN equals NaN; integers and bools exactly).\n"
    "Each test runs in its own process: a crash or a timeout is a result, not the end of the run.\n"
    "Prints one line per test that did not pass (stderr) and per-suite totals (stdout).\n"
    "\n"
    "options:\n"
    "  --json          write every result as JSON to stdout (the totals go to stderr)\n"
    "  --doc FILE      write the Markdown report (docs/onnx-conformance.md): the node totals\n"
    "                  line, totals per suite, every failing and unsupported test by ONNX op\n"
    "  --min-passed N  exit with 1 when fewer than N tests of suite `node` passed (of all\n"
    "                  tests when no suite is named node)\n"
    "  --jobs N, -j N  tests run at the same time (default 1)\n"
    "  --timeout S     time limit of one test in seconds (default 60)\n"
    "  --filter TEXT   only the tests whose name contains TEXT\n"
    "  --backend B     compile the tests for backend B instead of cpu (e.g. mlx)\n"
    "  -v, --verbose   also print passed tests\n"
    "  -q, --quiet     print only the totals\n";

/* The backend the tests compile for (--backend; the tests run in forked children, which see it). */
static const char *conf_backend = "cpu";

/* ======================================================================================
 * Small string helpers
 * ====================================================================================== */

static char *path_join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", a, b);
  return p;
}

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted names of the sub-folders of `dir` starting with `prefix`; NULL on error. */
static char **list_dirs(const char *dir, const char *prefix, size_t *n_out) {
  *n_out = 0;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  size_t n = 0, cap = 16;
  char **v = malloc(cap * sizeof *v);
  struct dirent *e;
  while (v && (e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    char *full = path_join(dir, e->d_name);
    bool ok = full && is_dir(full);
    free(full);
    if (!ok) continue;
    if (n == cap) {
      char **nv = realloc(v, 2 * cap * sizeof *v);
      if (!nv) break;
      v = nv;
      cap *= 2;
    }
    if (!(v[n] = conf_strdup(e->d_name))) break;
    n++;
  }
  closedir(d);
  if (!v) return NULL;
  qsort(v, n, sizeof *v, cmp_str);
  *n_out = n;
  return v;
}

static void free_list(char **v, size_t n) {
  for (size_t i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

/* ======================================================================================
 * model.onnx: graph input names and op types (a minimal protobuf wire-format reader)
 * ====================================================================================== */

typedef struct pbr {
  const uint8_t *p, *end;
} pbr;

static bool pb_varint(pbr *r, uint64_t *v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (r->p >= r->end) return false;
    uint8_t b = *r->p++;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return true;
    }
  }
  return false;
}

/* Next field: its number, its value for varint fields, its payload for length-delimited ones. */
static bool pb_next(pbr *r, uint32_t *field, uint64_t *value, pbr *payload) {
  uint64_t key, v = 0;
  if (!pb_varint(r, &key)) return false;
  *field = (uint32_t)(key >> 3);
  payload->p = payload->end = NULL;
  *value = 0;
  switch (key & 7) {
  case 0:
    if (!pb_varint(r, &v)) return false;
    *value = v;
    return true;
  case 1:
    if (r->end - r->p < 8) return false;
    r->p += 8;
    return true;
  case 5:
    if (r->end - r->p < 4) return false;
    r->p += 4;
    return true;
  case 2:
    if (!pb_varint(r, &v) || v > (uint64_t)(r->end - r->p)) return false;
    payload->p = r->p;
    payload->end = r->p + v;
    r->p += v;
    return true;
  default: return false; /* groups are not used by onnx.proto */
  }
}

/* The last occurrence of length-delimited field `want` of a message ({NULL, NULL} when absent). */
static pbr pb_sub(pbr msg, uint32_t want) {
  pbr found = {NULL, NULL}, pl;
  uint32_t f;
  uint64_t v;
  while (msg.p < msg.end && pb_next(&msg, &f, &v, &pl))
    if (f == want && pl.p) found = pl;
  return found;
}

/* The string field `want` of a message ("" when absent); false when malformed. */
static bool pb_string(pbr msg, uint32_t want, char *out, size_t cap) {
  uint32_t f;
  uint64_t v;
  pbr pl;
  out[0] = 0;
  while (msg.p < msg.end) {
    if (!pb_next(&msg, &f, &v, &pl)) return false;
    if (f == want && pl.p) {
      size_t n = (size_t)(pl.end - pl.p);
      if (n >= cap) n = cap - 1;
      memcpy(out, pl.p, n);
      out[n] = 0;
      return true;
    }
  }
  return true;
}

/* The whole file in a malloc'ed buffer (NULL on error). */
static uint8_t *read_file(const char *path, size_t *len_out) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  uint8_t *data = NULL;
  size_t len = 0, cap = 0;
  bool ok = true;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 65536;
      uint8_t *nd = realloc(data, cap);
      if (!nd) {
        ok = false;
        break;
      }
      data = nd;
    }
    size_t k = fread(data + len, 1, cap - len, f);
    len += k;
    if (k == 0) break;
  }
  ok = ok && !ferror(f);
  fclose(f);
  if (!ok) {
    free(data);
    return NULL;
  }
  *len_out = len;
  return data;
}

/* What a graph input or output holds: its test-data file is a TensorProto, a SequenceProto or
 * an OptionalProto. */
enum { KIND_TENSOR, KIND_SEQUENCE, KIND_OPTIONAL };

/* Names with the ONNX elem_type of each (0 when not a tensor) and their kind. */
typedef struct name_list {
  char **v;
  int64_t *elem;
  int *kind;
  size_t n, cap;
} name_list;

static bool nl_push(name_list *l, const char *name, int64_t elem, int kind) {
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 16;
    char **nv = realloc(l->v, nc * sizeof *nv);
    if (!nv) return false;
    l->v = nv;
    int64_t *ne = realloc(l->elem, nc * sizeof *ne);
    if (!ne) return false;
    l->elem = ne;
    int *nk = realloc(l->kind, nc * sizeof *nk);
    if (!nk) return false;
    l->kind = nk;
    l->cap = nc;
  }
  if (!(l->v[l->n] = conf_strdup(name))) return false;
  l->elem[l->n] = elem;
  l->kind[l->n++] = kind;
  return true;
}

static bool nl_has(const name_list *l, const char *name) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->v[i], name) == 0) return true;
  return false;
}

static void nl_free(name_list *l) {
  free_list(l->v, l->n);
  free(l->elem);
  free(l->kind);
  memset(l, 0, sizeof *l);
}

typedef struct model_info {
  name_list inputs;  /* graph inputs that are not initializers, in order */
  name_list outputs; /* graph outputs, in order */
  char ops[1024];    /* distinct op types, comma-separated, in first-use order */
} model_info;

static void model_info_free(model_info *m) {
  nl_free(&m->inputs);
  nl_free(&m->outputs);
  memset(m, 0, sizeof *m);
}

static void add_op(char *ops, size_t cap, const char *op) {
  size_t n = strlen(op), len = strlen(ops);
  for (const char *p = ops; *p;) { /* already listed? */
    const char *comma = strchr(p, ',');
    size_t k = comma ? (size_t)(comma - p) : strlen(p);
    if (k == n && memcmp(p, op, n) == 0) return;
    p += k + (comma ? 1 : 0);
  }
  if (len + n + 2 > cap) return;
  if (len) ops[len++] = ',';
  memcpy(ops + len, op, n + 1);
}

/* ValueInfoProto.type (2) .tensor_type (1) .elem_type (1); 0 when absent. */
static int64_t value_elem_type(pbr vi) {
  pbr tensor = pb_sub(pb_sub(vi, 2), 1);
  uint32_t f;
  uint64_t v, elem = 0;
  pbr pl;
  while (tensor.p && tensor.p < tensor.end && pb_next(&tensor, &f, &v, &pl))
    if (f == 1 && !pl.p) elem = v;
  return (int64_t)elem;
}

/* ValueInfoProto.type (2): sequence_type (4) and optional_type (9) hold containers. */
static int value_kind(pbr vi) {
  pbr type = pb_sub(vi, 2);
  if (!type.p) return KIND_TENSOR;
  if (pb_sub(type, 4).p) return KIND_SEQUENCE;
  if (pb_sub(type, 9).p) return KIND_OPTIONAL;
  return KIND_TENSOR;
}

/* Reads ModelProto.graph (7): nodes (1; op_type 4), initializers (5; name 8), sparse initializers
 * (15; values 1, name 8), inputs (11) and outputs (12) (ValueInfoProto; name 1). */
static bool model_info_read(const char *path, model_info *mi) {
  memset(mi, 0, sizeof *mi);
  size_t len = 0;
  uint8_t *data = read_file(path, &len);
  if (!data) return false;
  pbr graph = pb_sub((pbr){data, data + len}, 7), pl;
  name_list inits = {0}, ins = {0};
  uint32_t fld;
  uint64_t val;
  char name[512];
  bool ok = graph.p != NULL;
  while (ok && graph.p < graph.end) {
    if (!pb_next(&graph, &fld, &val, &pl))
      ok = false;
    else if (!pl.p)
      continue;
    else if (fld == 1) {
      ok = pb_string(pl, 4, name, sizeof name);
      add_op(mi->ops, sizeof mi->ops, name[0] ? name : "?");
    } else if (fld == 5 || fld == 15) {
      pbr t = fld == 15 ? pb_sub(pl, 1) : pl; /* SparseTensorProto.values (1) holds the name */
      ok = t.p && pb_string(t, 8, name, sizeof name) && nl_push(&inits, name, 0, KIND_TENSOR);
    } else if (fld == 11 || fld == 12) {
      ok = pb_string(pl, 1, name, sizeof name) &&
           nl_push(fld == 11 ? &ins : &mi->outputs, name, value_elem_type(pl), value_kind(pl));
    }
  }
  free(data);
  for (size_t i = 0; ok && i < ins.n; i++) /* keep the inputs that are not initializers */
    if (!nl_has(&inits, ins.v[i])) ok = nl_push(&mi->inputs, ins.v[i], ins.elem[i], ins.kind[i]);
  nl_free(&inits);
  nl_free(&ins);
  if (!ok) model_info_free(mi);
  return ok;
}

/* ======================================================================================
 * One test (runs inside the child process)
 * ====================================================================================== */

typedef struct test_result {
  conf_status status;
  double max_abs, max_rel;
  bool needs_values;
  char msg[MAX_MSG];
} test_result;

static void set_result(test_result *r, conf_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void set_result(test_result *r, conf_status st, const char *fmt, ...) {
  r->status = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->msg, sizeof r->msg, fmt, ap);
  va_end(ap);
}

/* The library's last message without the test folder's path (messages name model.onnx by path). */
static const char *last_error_in(const char *dir, char *buf, size_t cap) {
  const char *m = rlx_last_error();
  size_t dn = strlen(dir), n = 0;
  for (const char *p = m; *p && n + 1 < cap;) {
    if (strncmp(p, dir, dn) == 0 && p[dn] == '/') {
      p += dn + 1;
      if (strncmp(p, "model.onnx: ", 12) == 0) p += 12;
      continue;
    }
    buf[n++] = *p++;
  }
  buf[n] = 0;
  return buf[0] ? buf : "failed without a message";
}

/* An error status as a result: a gap is "unsupported", anything else "failed". */
static conf_status status_of(rlx_status s) { return s == RLX_ERR_UNSUPPORTED ? ST_UNSUPPORTED : ST_FAILED; }

static bool is_exact(rlx_dtype t) { return rlx_dtype_is_int(t) || t == RLX_BOOL; }

/* Compares one output against the expected tensor with assert_allclose semantics. */
static bool compare(const rlx_tensor *got, const rlx_tensor *want, uint32_t k, test_result *r) {
  char gs[128], ws[128];
  rlx_shape_format(&got->shape, gs, sizeof gs);
  rlx_shape_format(&want->shape, ws, sizeof ws);
  bool same_dims = got->shape.rank == want->shape.rank;
  for (uint32_t i = 0; same_dims && i < got->shape.rank; i++) same_dims = got->shape.dims[i] == want->shape.dims[i];
  if (got->shape.dtype != want->shape.dtype || !same_dims) {
    set_result(r, ST_FAILED, "output %u: got %s, expected %s", k, gs, ws);
    return false;
  }
  size_t n = 0;
  if (rlx_shape_numel(&want->shape, &n) != RLX_OK) {
    set_result(r, ST_FAILED, "output %u: bad expected shape %s", k, ws);
    return false;
  }
  rlx_dtype t = (rlx_dtype)want->shape.dtype;
  bool cplx = rlx_dtype_class_of(t) == RLX_CLASS_COMPLEX;
  size_t bad = 0, first = 0;
  double first_got = 0, first_want = 0;
  for (size_t i = 0; i < n; i++) {
    if (is_exact(t)) {
      int64_t a = rlx_elem_get_i64(got->data, t, i), b = rlx_elem_get_i64(want->data, t, i);
      if (a != b) {
        double d = fabs((double)a - (double)b);
        if (d > r->max_abs) r->max_abs = d;
        if (b != 0 && d / fabs((double)b) > r->max_rel) r->max_rel = d / fabs((double)b);
        if (!bad++) first = i, first_got = (double)a, first_want = (double)b;
      }
      continue;
    }
    for (int part = 0; part < (cplx ? 2 : 1); part++) {
      double a, b, ai, bi;
      rlx_elem_get_c(got->data, t, i, &a, &ai);
      rlx_elem_get_c(want->data, t, i, &b, &bi);
      if (part) a = ai, b = bi;
      bool ok;
      if (isnan(a) || isnan(b))
        ok = isnan(a) && isnan(b);
      else if (isinf(a) || isinf(b))
        ok = a == b;
      else {
        double d = fabs(a - b);
        if (d > r->max_abs) r->max_abs = d;
        if (b != 0 && d / fabs(b) > r->max_rel) r->max_rel = d / fabs(b);
        ok = d <= CONF_ATOL + CONF_RTOL * fabs(b);
      }
      if (!ok && !bad++) first = i, first_got = a, first_want = b;
    }
  }
  if (!bad) return true;
  set_result(
      r, ST_FAILED,
      "output %u (%s): %zu of %zu values %s; max abs err %.3g, max rel err %.3g (first at flat index %zu: got %.9g, "
      "expected %.9g)",
      k, ws, bad, n, is_exact(t) ? "differ" : "outside rtol 1e-3 / atol 1e-7", r->max_abs, r->max_rel, first, first_got,
      first_want);
  return false;
}

/* TensorProto.data_type (field 2) of a serialized tensor: when it is UINT16 (4) and `want` is
 * BFLOAT16 (16), rewrites it to BFLOAT16 in place. The ONNX test generator stores bfloat16 test
 * data as its uint16 bit patterns (numpy has no bfloat16); the bits are the same in both. */
static void bf16_from_uint16(uint8_t *data, size_t len, int64_t want) {
  if (want != 16) return;
  pbr r = {data, data + len};
  while (r.p < r.end) {
    pbr at = r;
    uint64_t key, v;
    if (!pb_varint(&at, &key)) return;
    if (key == (2u << 3)) { /* field 2 as a varint */
      if (at.p < at.end && *at.p == 4) data[at.p - data] = 16;
      return;
    }
    uint32_t f;
    pbr pl;
    if (!pb_next(&r, &f, &v, &pl)) return;
  }
}

/* The tensors of one data set's inputs or outputs, flattened: a sequence NAME of N elements
 * gives N entries NAME.0 ... NAME.<N-1> (and a length entry), an absent optional none. */
#define MAX_FLAT 1024
typedef struct value_set {
  rlx_named_tensor v[MAX_FLAT];
  char *owned[MAX_FLAT]; /* names allocated here (NAME.J) */
  uint32_t n, n_files;
  const char *seq_names[MAX_TENSORS];
  int64_t seq_lengths[MAX_TENSORS];
  uint32_t n_seqs;
} value_set;

static void value_set_free(value_set *vs) {
  for (uint32_t i = 0; i < vs->n; i++) {
    rlx_onnx_tensor_free(&vs->v[i].tensor, NULL);
    free(vs->owned[i]);
  }
  vs->n = 0;
}

static bool vs_push(value_set *vs, const char *name, char *owned, rlx_tensor t) {
  if (vs->n == MAX_FLAT) {
    free(owned);
    rlx_onnx_tensor_free(&t, NULL);
    return false;
  }
  vs->owned[vs->n] = owned;
  vs->v[vs->n++] = (rlx_named_tensor){owned ? owned : name, t};
  return true;
}

/* File K (data, len) of a sequence / optional value named `name`. */
static rlx_status load_container(const uint8_t *data, size_t len, const char *name, bool optional, value_set *vs) {
  rlx_onnx_seq_value sv;
  RLX_TRY(rlx_onnx_sequence_read(data, len, optional, NULL, &sv));
  rlx_status s = RLX_OK;
  if (sv.absent || sv.is_sequence) {
    vs->seq_names[vs->n_seqs] = name;
    vs->seq_lengths[vs->n_seqs++] = sv.absent ? RLX_ONNX_ABSENT : (int64_t)sv.n;
  }
  uint32_t taken = 0;
  for (; taken < sv.n && s == RLX_OK; taken++) {
    char *nm = NULL;
    if (sv.is_sequence) {
      size_t nl = strlen(name) + 16;
      if ((nm = malloc(nl)))
        snprintf(nm, nl, "%s.%u", name, taken);
      else
        s = rlx_errorf(RLX_ERR_OOM, "out of memory");
    }
    if (s != RLX_OK) break;
    if (!vs_push(vs, name, nm, sv.v[taken])) /* takes the tensor (and nm) either way */
      s = rlx_errorf(RLX_ERR_UNSUPPORTED, "more than %d tensors in one data set", MAX_FLAT);
    sv.v[taken].data = NULL;
  }
  for (uint32_t i = 0; i < sv.n; i++) free(sv.v[i].data);
  free(sv.v);
  return s;
}

/* Loads dir/SET/PREFIX_K.pb for K = 0, 1, ... while they exist; `decl` gives the model's dtypes
 * and whether each file holds a tensor, a sequence or an optional. */
static bool load_tensors(const char *tdir, const char *set, const char *prefix, const name_list *decl, value_set *vs,
                         test_result *r, rlx_status *why) {
  vs->n = vs->n_files = vs->n_seqs = 0;
  for (uint32_t k = 0; k < MAX_TENSORS; k++) {
    char rel[256];
    snprintf(rel, sizeof rel, "%s/%s_%u.pb", set, prefix, k);
    char *p = path_join(tdir, rel);
    if (!p) {
      set_result(r, ST_FAILED, "out of memory");
      *why = RLX_ERR_OOM;
      return false;
    }
    if (!is_file(p)) {
      free(p);
      return true;
    }
    size_t len = 0;
    uint8_t *data = read_file(p, &len);
    free(p);
    int kind = k < decl->n ? decl->kind[k] : KIND_TENSOR;
    const char *name = k < decl->n ? decl->v[k] : prefix;
    rlx_status s;
    if (!data)
      s = rlx_errorf(RLX_ERR_IO, "cannot read the file");
    else if (kind != KIND_TENSOR)
      s = load_container(data, len, name, kind == KIND_OPTIONAL, vs);
    else {
      rlx_tensor t;
      bf16_from_uint16(data, len, k < decl->n ? decl->elem[k] : 0);
      s = rlx_onnx_tensor_read(data, len, NULL, &t, NULL);
      if (s == RLX_OK && !vs_push(vs, name, NULL, t))
        s = rlx_errorf(RLX_ERR_UNSUPPORTED, "more than %d tensors in one data set", MAX_FLAT);
    }
    free(data);
    if (s) {
      set_result(r, status_of(s), "test data %s: %s", rel, rlx_last_error());
      *why = s;
      return false;
    }
    vs->n_files++;
  }
  return true;
}

static void set_container_options(rlx_onnx_options *o, const value_set *in) {
  o->seq_names = in->seq_names;
  o->seq_lengths = in->seq_lengths;
  o->n_seqs = in->n_seqs;
}

/* One data set: import (binding dims and input values), compile, run, compare. */
static bool run_data_set(const char *tdir, const char *model, const model_info *mi, const char *set, test_result *r) {
  static value_set in, out;
  rlx_named_tensor *feed = calloc(MAX_FLAT, sizeof *feed);
  uint32_t n_in = 0, n_out = 0;
  rlx_status why = RLX_OK;
  rlx_graph *g = NULL;
  rlx_executable *e = NULL;
  char buf[MAX_MSG];
  bool ok = feed != NULL;
  if (!ok) set_result(r, ST_FAILED, "out of memory");
  ok = ok && load_tensors(tdir, set, "input", &mi->inputs, &in, r, &why) &&
       load_tensors(tdir, set, "output", &mi->outputs, &out, r, &why);
  n_in = in.n;
  n_out = out.n;
  if (!ok && feed && why != RLX_ERR_OOM) {
    /* test data RLX cannot hold: when the model has gaps, the importer's reasons say more */
    char *text = NULL;
    size_t len = 0;
    uint32_t gaps = 0;
    if (rlx_onnx_report(model, NULL, NULL, &text, &len, &gaps) == RLX_OK && gaps)
      set_result(r, ST_UNSUPPORTED, "import: %s", text);
    free(text);
  }
  if (ok && in.n_files != mi->inputs.n) {
    set_result(r, ST_FAILED, "%s has %u input files but the model has %zu graph inputs", set, in.n_files, mi->inputs.n);
    ok = false;
  }
  if (ok) {
    rlx_onnx_options o;
    rlx_onnx_options_init(&o);
    o.inputs = in.v;
    o.n_inputs = n_in;
    set_container_options(&o, &in);
    rlx_status s = rlx_onnx_import_file(model, &o, NULL, &g);
    if (s) {
      set_result(r, status_of(s), "import: %s", last_error_in(tdir, buf, sizeof buf));
      ok = false;
    }
  }
  if (ok) {
    rlx_compile_options co;
    rlx_compile_options_init(&co);
    rlx_cpu_options cpu;
    rlx_cpu_options_init(&cpu);
    cpu.threads = 1; /* the runner parallelises over processes */
    if (strcmp(conf_backend, "cpu") == 0) co.backend_options = &cpu;
    rlx_status s = rlx_compile(g, conf_backend, &co, &e);
    if (s) {
      set_result(r, status_of(s), "compile (%s): %s", conf_backend, last_error_in(tdir, buf, sizeof buf));
      ok = false;
    }
  }
  uint32_t n_feed = 0;
  for (uint32_t i = 0; ok && e && i < rlx_executable_input_count(e); i++) {
    const char *name = rlx_executable_input_name(e, i);
    uint32_t k = 0;
    while (k < n_in && strcmp(in.v[k].name, name) != 0) k++;
    if (k == n_in) {
      set_result(r, ST_FAILED, "the compiled graph has an input \"%s\" that is not a graph input of the model", name);
      ok = false;
    } else {
      feed[n_feed++] = in.v[k];
    }
  }
  if (ok && rlx_executable_param_count(e)) {
    set_result(r, ST_FAILED, "the compiled graph has %u params (initializers should be constants), first \"%s\"",
               rlx_executable_param_count(e), rlx_executable_param_name(e, 0));
    ok = false;
  }
  const rlx_tensor *res = NULL;
  uint32_t n_res = 0;
  if (ok) {
    rlx_status s = rlx_executable_run(e, feed, n_feed, &res, &n_res);
    if (s) {
      set_result(r, status_of(s), "run: %s", last_error_in(tdir, buf, sizeof buf));
      ok = false;
    }
  }
  if (ok && n_res != n_out) {
    set_result(r, ST_FAILED, "%u outputs, expected %u (sequences count one output per element)", n_res, n_out);
    ok = false;
  }
  for (uint32_t k = 0; ok && k < n_out; k++) ok = compare(&res[k], &out.v[k].tensor, k, r);
  rlx_executable_free(e);
  rlx_graph_free(g);
  value_set_free(&in);
  value_set_free(&out);
  free(feed);
  return ok;
}

/* After a pass: the importer got the input values; does the model also import from the input
 * shapes alone, or did an op need a value at import time (Reshape's shape, Range's limits...)? */
static void check_needs_values(const char *tdir, const char *model, const model_info *mi, const char *set,
                               test_result *r) {
  static value_set in;
  static rlx_named_tensor named[MAX_FLAT];
  rlx_status why;
  static test_result scratch;
  if (!load_tensors(tdir, set, "input", &mi->inputs, &in, &scratch, &why) || in.n_files != mi->inputs.n) {
    value_set_free(&in);
    return;
  }
  uint32_t n_in = in.n;
  for (uint32_t k = 0; k < n_in; k++) named[k] = (rlx_named_tensor){in.v[k].name, {NULL, in.v[k].tensor.shape}};
  rlx_onnx_options o;
  rlx_onnx_options_init(&o);
  o.inputs = named;
  o.n_inputs = n_in;
  set_container_options(&o, &in);
  rlx_graph *g = NULL;
  if (rlx_onnx_import_file(model, &o, NULL, &g) != RLX_OK) {
    char buf[MAX_MSG];
    r->needs_values = true;
    set_result(r, ST_PASSED, "%s", last_error_in(tdir, buf, sizeof buf));
  }
  rlx_graph_free(g);
  value_set_free(&in);
}

static void run_test(const char *tdir, test_result *r, char *ops, size_t ops_cap) {
  memset(r, 0, sizeof *r);
  ops[0] = 0;
  char *model = path_join(tdir, "model.onnx");
  if (!model) {
    set_result(r, ST_FAILED, "out of memory");
    return;
  }
  model_info mi;
  if (!is_file(model)) {
    set_result(r, ST_UNSUPPORTED, "no model.onnx in the test folder (the model is downloaded separately)");
    free(model);
    return;
  }
  if (!model_info_read(model, &mi)) {
    /* malformed: let the importer say what is wrong (it must fail cleanly) */
    rlx_graph *g = NULL;
    char buf[MAX_MSG];
    rlx_status s = rlx_onnx_import_file(model, NULL, NULL, &g);
    if (s)
      set_result(r, status_of(s), "import: %s", last_error_in(tdir, buf, sizeof buf));
    else
      set_result(r, ST_FAILED, "the runner cannot read the graph inputs of model.onnx, but the importer accepts it");
    rlx_graph_free(g);
    free(model);
    return;
  }
  snprintf(ops, ops_cap, "%s", mi.ops);
  size_t n_sets = 0;
  char **sets = list_dirs(tdir, "test_data_set_", &n_sets);
  if (!sets || n_sets == 0) set_result(r, ST_FAILED, "no test_data_set_N folders");
  for (size_t i = 0; i < n_sets && i < MAX_DATA_SETS; i++)
    if (!run_data_set(tdir, model, &mi, sets[i], r)) {
      if (n_sets > 1) { /* name the data set: "test_data_set_1: ..." */
        size_t p = strlen(sets[i]) + 2, m = strlen(r->msg);
        if (p < sizeof r->msg) {
          if (m + p >= sizeof r->msg) m = sizeof r->msg - p - 1;
          memmove(r->msg + p, r->msg, m);
          r->msg[p + m] = 0;
          memcpy(r->msg, sets[i], p - 2);
          memcpy(r->msg + p - 2, ": ", 2);
        }
      }
      break;
    }
  if (n_sets && r->status == ST_PASSED) check_needs_values(tdir, model, &mi, sets[0], r);
  free_list(sets, n_sets);
  model_info_free(&mi);
  free(model);
}

/* ======================================================================================
 * Child processes
 * ====================================================================================== */

typedef struct child {
  pid_t pid;
  int res_fd, err_fd; /* -1 once closed */
  size_t test;
  double start;
  conf_sbuf res, err;
  bool killed;
} child;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    p += k;
    n -= (size_t)k;
  }
}

/* Child: runs the test and writes "status\0max_abs\0max_rel\0needs_values\0ops\0message" to fd. */
static void child_main(const char *tdir, int fd, int err_fd, unsigned timeout) {
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  alarm(timeout);
  static test_result r;
  static char ops[1024];
  run_test(tdir, &r, ops, sizeof ops);
  char head[128];
  int k = snprintf(head, sizeof head, "%d%c%.17g%c%.17g%c%d%c", (int)r.status, 0, r.max_abs, 0, r.max_rel, 0,
                   (int)r.needs_values, 0);
  write_all(fd, head, (size_t)k);
  write_all(fd, ops, strlen(ops) + 1);
  write_all(fd, r.msg, strlen(r.msg));
  fflush(stderr);
  exit(0); /* not _exit: a leak checker (LeakSanitizer) then reports at exit, as a crash */
}

/* The useful lines of a crashed child's stderr: sanitizer summaries and the first frames. */
static void crash_summary(const char *err, conf_sbuf *out) {
  if (!err) return;
  int frames = 0;
  for (const char *p = err; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    char line[400];
    size_t m = n < sizeof line - 1 ? n : sizeof line - 1;
    memcpy(line, p, m);
    line[m] = 0;
    const char *t = line;
    while (*t == ' ') t++;
    bool take = strstr(t, "ERROR:") || strstr(t, "runtime error:") || strncmp(t, "SUMMARY:", 8) == 0;
    bool runtime_frame = strstr(t, "libasan") || strstr(t, "libubsan") || strstr(t, "libsanitizer");
    if (!take && t[0] == '#' && frames < 4 && strstr(t, " in ") && !runtime_frame) {
      take = true;
      frames++;
    }
    if (take) {
      conf_sb_puts(out, "; ");
      conf_sb_puts(out, t);
    }
    p += n + (nl ? 1 : 0);
  }
}

static void finish_child(child *c, conf_test *t, int wstatus) {
  t->seconds = now_s() - c->start;
  const char *r = c->res.p;
  size_t n = c->res.n;
  /* the record: five NUL-terminated fields, then the message up to the end (conf_sb_add keeps a NUL) */
  const char *f[6] = {0};
  size_t nf = 0, start = 0;
  for (size_t i = 0; r && i < n && nf < 5; i++)
    if (r[i] == 0) {
      f[nf++] = r + start;
      start = i + 1;
    }
  if (nf == 5) f[nf++] = r + start;
  bool exited_ok = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
  if (exited_ok && nf == 6) {
    int st = atoi(f[0]);
    t->status = st >= 0 && st < ST_COUNT ? (conf_status)st : ST_FAILED;
    t->max_abs = strtod(f[1], NULL);
    t->max_rel = strtod(f[2], NULL);
    t->needs_values = t->status == ST_PASSED && f[3][0] == '1';
    t->ops = conf_strdup(f[4]);
    t->message = conf_strdup(f[5]);
    return;
  }
  conf_sbuf m = {0};
  if (nf == 6 && WIFEXITED(wstatus)) { /* a result, then a failing exit: a sanitizer report at exit */
    t->status = ST_CRASHED;
    int st = atoi(f[0]);
    conf_sb_printf(&m, "finished (%s) but then exited with code %d",
                   st >= 0 && st < ST_COUNT ? conf_status_names[st] : "?", WEXITSTATUS(wstatus));
    crash_summary(c->err.p, &m);
  } else if (c->killed || (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGALRM)) {
    t->status = ST_TIMEOUT;
    conf_sb_printf(&m, "did not finish within the time limit (%.0f s)", t->seconds);
  } else {
    t->status = ST_CRASHED;
    int sig = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
    if (sig)
      conf_sb_printf(&m, "killed by signal %d (%s)", sig, strsignal(sig));
    else if (WIFEXITED(wstatus))
      conf_sb_printf(&m, "exited with code %d without a result", WEXITSTATUS(wstatus));
    else
      conf_sb_puts(&m, "ended without a result");
    crash_summary(c->err.p, &m);
  }
  t->message = m.p ? m.p : conf_strdup("");
  if (nf >= 5) t->ops = conf_strdup(f[4]);
}

/* Starts test t in a child process in slot `slot` of kids[0..n_kids). */
static bool start_child(child *kids, size_t n_kids, size_t slot, conf_test *t, size_t idx, unsigned timeout) {
  child *c = &kids[slot];
  int rp[2], ep[2];
  if (pipe(rp) != 0) return false;
  if (pipe(ep) != 0) {
    close(rp[0]);
    close(rp[1]);
    return false;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(rp[0]);
    close(rp[1]);
    close(ep[0]);
    close(ep[1]);
    return false;
  }
  if (pid == 0) {
    close(rp[0]);
    close(ep[0]);
    for (size_t i = 0; i < n_kids; i++) { /* the parent's bookkeeping: a leak checker would report it */
      free(kids[i].res.p);
      free(kids[i].err.p);
    }
    free(kids);
    child_main(t->dir, rp[1], ep[1], timeout);
  }
  close(rp[1]);
  close(ep[1]);
  memset(c, 0, sizeof *c);
  c->pid = pid;
  c->res_fd = rp[0];
  c->err_fd = ep[0];
  c->test = idx;
  c->start = now_s();
  return true;
}

/* Reads what is available on fd into b (stderr beyond `limit` bytes is dropped); closes at EOF. */
static void drain(int *fd, conf_sbuf *b, size_t limit) {
  char tmp[4096];
  ssize_t k = read(*fd, tmp, sizeof tmp);
  if (k < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (k <= 0) {
    close(*fd);
    *fd = -1;
    return;
  }
  if (b->n < limit) conf_sb_add(b, tmp, (size_t)k < limit - b->n ? (size_t)k : limit - b->n);
}

typedef struct run_opts {
  unsigned jobs, timeout;
  bool verbose, quiet;
} run_opts;

static void report_progress(const conf_test *t, const run_opts *o) {
  if (o->quiet) return;
  if (t->status == ST_PASSED && !o->verbose) return;
  char line[600];
  conf_one_line(t->message ? t->message : "", line, sizeof line);
  fprintf(stderr, "%-11s %s/%s%s%s%s\n", conf_status_names[t->status], t->suite, t->name, line[0] ? ": " : "",
          t->needs_values ? "with input values at import; from shapes alone: " : "", line);
}

/* Runs every test, up to o->jobs at a time. */
static bool run_all(conf_test *tests, size_t n, const run_opts *o) {
  child *kids = calloc(o->jobs, sizeof *kids);
  if (!kids) return false;
  size_t next = 0, running = 0;
  bool ok = true;
  while ((next < n || running) && ok) {
    while (next < n && running < o->jobs) {
      size_t slot = 0;
      while (kids[slot].pid) slot++;
      if (!start_child(kids, o->jobs, slot, &tests[next], next, o->timeout)) {
        fprintf(stderr, "rlx onnx-conformance: cannot start a child process: %s\n", strerror(errno));
        ok = false;
        break;
      }
      next++;
      running++;
    }
    struct pollfd pf[2 * 64];
    size_t np = 0, owner[2 * 64];
    for (size_t s = 0; s < o->jobs; s++) {
      if (!kids[s].pid) continue;
      if (kids[s].res_fd >= 0) pf[np] = (struct pollfd){kids[s].res_fd, POLLIN, 0}, owner[np++] = s;
      if (kids[s].err_fd >= 0) pf[np] = (struct pollfd){kids[s].err_fd, POLLIN, 0}, owner[np++] = s;
    }
    if (np) {
      int k = poll(pf, np, 200);
      for (size_t i = 0; k > 0 && i < np; i++) {
        if (!pf[i].revents) continue;
        child *c = &kids[owner[i]];
        if (pf[i].fd == c->res_fd)
          drain(&c->res_fd, &c->res, (size_t)1 << 20);
        else
          drain(&c->err_fd, &c->err, MAX_CHILD_ERR);
      }
    }
    double t = now_s();
    for (size_t s = 0; s < o->jobs; s++) {
      child *c = &kids[s];
      if (!c->pid) continue;
      /* the child's own alarm normally ends it; this is the backstop */
      if (!c->killed && t - c->start > (double)o->timeout + 10) {
        kill(c->pid, SIGKILL);
        c->killed = true;
      }
      if (c->res_fd >= 0 || c->err_fd >= 0) continue; /* still running (or still writing) */
      int ws = 0;
      pid_t w;
      do w = waitpid(c->pid, &ws, 0);
      while (w < 0 && errno == EINTR);
      finish_child(c, &tests[c->test], w == c->pid ? ws : 0);
      report_progress(&tests[c->test], o);
      free(c->res.p);
      free(c->err.p);
      memset(c, 0, sizeof *c);
      running--;
    }
  }
  free(kids);
  return ok;
}

/* ======================================================================================
 * The command
 * ====================================================================================== */

static bool parse_uint(const char *v, unsigned lo, unsigned hi, unsigned *out) {
  char *end;
  errno = 0;
  unsigned long x = strtoul(v, &end, 10);
  if (errno || end == v || *end || v[0] == '-' || x < lo || x > hi) return false;
  *out = (unsigned)x;
  return true;
}

static const char *base_name(const char *p, char *buf, size_t cap) {
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/') n--;
  size_t s = n;
  while (s > 0 && p[s - 1] != '/') s--;
  size_t len = n - s < cap - 1 ? n - s : cap - 1;
  memcpy(buf, p + s, len);
  buf[len] = 0;
  return buf;
}

static bool add_test(conf_test **v, size_t *n, size_t *cap, const char *suite, const char *name, const char *dir) {
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 256;
    conf_test *nv = realloc(*v, nc * sizeof *nv);
    if (!nv) return false;
    *v = nv;
    *cap = nc;
  }
  conf_test *t = &(*v)[*n];
  memset(t, 0, sizeof *t);
  t->suite = conf_strdup(suite);
  t->name = conf_strdup(name);
  t->dir = conf_strdup(dir);
  if (!t->suite || !t->name || !t->dir) {
    free(t->suite);
    free(t->name);
    free(t->dir);
    return false;
  }
  (*n)++;
  return true;
}

/* Collects the tests of DIR: DIR itself when it holds model.onnx (suite = its parent's name), else
 * its test_* sub-folders (suite = DIR's name). */
static bool collect(const char *dir, const char *filter, conf_test **v, size_t *n, size_t *cap) {
  char suite[256], name[256];
  char *model = path_join(dir, "model.onnx");
  bool single = model && is_file(model);
  free(model);
  if (single) {
    /* the suite is the parent folder's name ("." when DIR has no parent part) */
    char parent[4096];
    char *real = realpath(dir, NULL);
    snprintf(parent, sizeof parent, "%s", real ? real : dir);
    free(real);
    size_t k = strlen(parent);
    while (k > 1 && parent[k - 1] == '/') parent[--k] = 0;
    char *slash = strrchr(parent, '/');
    base_name(dir, name, sizeof name);
    if (slash && slash != parent) {
      *slash = 0;
      base_name(parent, suite, sizeof suite);
    } else {
      snprintf(suite, sizeof suite, "%s", slash ? "/" : ".");
    }
    if (filter && !strstr(name, filter)) return true;
    return add_test(v, n, cap, suite, name, dir);
  }
  size_t nd = 0;
  char **names = list_dirs(dir, "test_", &nd);
  if (!names) return false;
  base_name(dir, suite, sizeof suite);
  bool ok = true;
  for (size_t i = 0; i < nd && ok; i++) {
    if (filter && !strstr(names[i], filter)) continue;
    char *p = path_join(dir, names[i]);
    ok = p && add_test(v, n, cap, suite, names[i], p);
    free(p);
  }
  free_list(names, nd);
  return ok;
}

int cli_cmd_onnx_conformance(const cli_command *self, int argc, char **argv) {
  const char *doc = NULL, *filter = NULL;
  bool json = false;
  unsigned min_passed = 0;
  bool has_min = false;
  run_opts o = {1, 60, false, false};
  const char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
  size_t n_dirs = 0;
  if (!dirs) return cli_fail(self, "out of memory");
  conf_sbuf cmdline = {0};
  conf_sb_puts(&cmdline, "rlx onnx-conformance");
  int rc = CLI_OK;
  for (int i = 1; i < argc && rc == CLI_OK; i++) {
    const char *a = argv[i], *v = NULL;
    if (cli_is_help(a)) {
      free(dirs);
      free(cmdline.p);
      return cli_help(self);
    }
    if (strcmp(a, "--json") == 0) {
      json = true;
    } else if (strcmp(a, "--doc") == 0 || strcmp(a, "--min-passed") == 0 || strcmp(a, "--jobs") == 0 ||
               strcmp(a, "-j") == 0 || strcmp(a, "--timeout") == 0 || strcmp(a, "--filter") == 0 ||
               strcmp(a, "--backend") == 0) {
      if (!cli_option_value(self, argc, argv, &i, &v)) {
        rc = CLI_USAGE;
        break;
      }
      if (strcmp(a, "--doc") == 0)
        doc = v;
      else if (strcmp(a, "--filter") == 0)
        filter = v;
      else if (strcmp(a, "--backend") == 0) {
        if (!rlx_backend_find(v))
          rc = cli_usage_error(self, "--backend: no backend '%s' (registered: %s)", v, rlx_backend_names());
        conf_backend = v;
      }
      else if (strcmp(a, "--min-passed") == 0) {
        if (!parse_uint(v, 0, 1000000, &min_passed))
          rc = cli_usage_error(self, "--min-passed expects a count, got '%s'", v);
        has_min = true;
      } else if (strcmp(a, "--timeout") == 0) {
        if (!parse_uint(v, 1, 86400, &o.timeout))
          rc = cli_usage_error(self, "--timeout expects seconds (1..86400), got '%s'", v);
      } else if (!parse_uint(v, 1, 64, &o.jobs)) {
        rc = cli_usage_error(self, "%s expects 1..64, got '%s'", a, v);
      }
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
      o.verbose = true;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      o.quiet = true;
    } else if (a[0] == '-' && a[1]) {
      rc = cli_usage_error(self, "unknown option '%s'", a);
    } else {
      dirs[n_dirs++] = a;
      conf_sb_printf(&cmdline, " %s", a);
    }
  }
  if (rc == CLI_OK && !n_dirs) rc = cli_usage_error(self, "no test folder given");
  if (rc != CLI_OK) {
    free(dirs);
    free(cmdline.p);
    return rc;
  }
  if (doc) conf_sb_printf(&cmdline, " --doc %s", doc);

  conf_test *tests = NULL;
  size_t n = 0, cap = 0;
  for (size_t d = 0; d < n_dirs && rc == CLI_OK; d++)
    if (!is_dir(dirs[d]))
      rc = cli_fail(self, "%s is not a folder", dirs[d]);
    else if (!collect(dirs[d], filter, &tests, &n, &cap))
      rc = cli_fail(self, "cannot list %s: %s", dirs[d], strerror(errno));
  /* suites in the order first seen */
  char **suites = calloc(n + 1, sizeof *suites);
  size_t n_suites = 0;
  if (rc == CLI_OK && !suites) rc = cli_fail(self, "out of memory");
  for (size_t i = 0; rc == CLI_OK && i < n; i++) {
    size_t s = 0;
    while (s < n_suites && strcmp(suites[s], tests[i].suite) != 0) s++;
    if (s == n_suites) suites[n_suites++] = tests[i].suite;
  }
  if (rc == CLI_OK && !run_all(tests, n, &o)) rc = CLI_FAILED;

  if (rc == CLI_OK) {
    conf_totals all = conf_count(tests, n, NULL);
    FILE *sum = json ? stderr : stdout; /* --json: stdout holds only the JSON */
    for (size_t s = 0; s < n_suites; s++) {
      conf_totals c = conf_count(tests, n, suites[s]);
      fprintf(sum, "%s tests: %u passed, %u failed, %u unsupported of %u (crashed %u, timeout %u)\n", suites[s],
              c.n[ST_PASSED], conf_failed_of(&c), c.n[ST_UNSUPPORTED], c.total, c.n[ST_CRASHED], c.n[ST_TIMEOUT]);
    }
    if (n_suites > 1)
      fprintf(sum, "all tests: %u passed, %u failed, %u unsupported of %u\n", all.n[ST_PASSED], conf_failed_of(&all),
              all.n[ST_UNSUPPORTED], all.total);
    if (json) {
      conf_sbuf b = {0};
      conf_write_json(&b, tests, n, suites, n_suites);
      rc = b.oom ? cli_fail(self, "out of memory") : cli_write_output(self, NULL, b.p, b.n);
      free(b.p);
    }
    if (doc && rc == CLI_OK) {
      conf_sbuf b = {0};
      conf_write_doc(&b, tests, n, suites, n_suites, cmdline.p ? cmdline.p : "");
      rc = b.oom ? cli_fail(self, "out of memory") : cli_write_output(self, doc, b.p, b.n);
      free(b.p);
    }
    if (has_min && rc == CLI_OK) {
      bool has_node = false;
      for (size_t s = 0; s < n_suites; s++) has_node |= strcmp(suites[s], "node") == 0;
      conf_totals c = conf_count(tests, n, has_node ? "node" : NULL);
      if (c.n[ST_PASSED] < min_passed)
        rc = cli_fail(self, "%u %stests passed; at least %u must (--min-passed)", c.n[ST_PASSED],
                      has_node ? "node " : "", min_passed);
    }
  }
  for (size_t i = 0; i < n; i++) {
    free(tests[i].suite);
    free(tests[i].name);
    free(tests[i].dir);
    free(tests[i].ops);
    free(tests[i].message);
  }
  free(tests);
  free(suites);
  free(dirs);
  free(cmdline.p);
  return rc;
}
