/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* `rlx import` (ONNX -> RLX text or binary IR, or the list of unsupported ops) and the hooks that
 * let `rlx run` / `rlx compile` take .onnx models and ONNX TensorProto (.pb) inputs. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rlx/npy.h"
#include "rlx/onnx.h"
#include "rlx/rlx.h"

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

rlx_status cli_load_tensor(const char *path, rlx_tensor *out) {
  if (ends_with(path, ".pb")) return rlx_onnx_tensor_load(path, NULL, out, NULL);
  return rlx_npy_load(path, NULL, out);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s);
  char *c = malloc(n + 1);
  if (c) memcpy(c, s, n + 1);
  return c;
}

/* Takes t (and the malloc'ed name) into in. */
static rlx_status inputs_push(cli_inputs *in, char *name, rlx_tensor t) {
  if (in->n == in->cap) {
    uint32_t cap = in->cap ? in->cap * 2 : 8;
    rlx_named_tensor *nv = realloc(in->v, cap * sizeof *nv);
    if (!nv) {
      free(name);
      rlx_npy_tensor_free(&t, NULL);
      return rlx_errorf(RLX_ERR_OOM, "out of memory");
    }
    in->v = nv;
    in->cap = cap;
  }
  in->v[in->n++] = (rlx_named_tensor){name, t};
  return RLX_OK;
}

static rlx_status inputs_seq(cli_inputs *in, const char *name, int64_t len) {
  if (in->n_seqs == in->cap_seqs) {
    uint32_t cap = in->cap_seqs ? in->cap_seqs * 2 : 4;
    const char **nn = realloc(in->seq_names, cap * sizeof *nn);
    if (nn) in->seq_names = nn;
    int64_t *nl = realloc(in->seq_lengths, cap * sizeof *nl);
    if (nl) in->seq_lengths = nl;
    if (!nn || !nl) return rlx_errorf(RLX_ERR_OOM, "out of memory");
    in->cap_seqs = cap;
  }
  char *c = dup_str(name);
  if (!c) return rlx_errorf(RLX_ERR_OOM, "out of memory");
  in->seq_names[in->n_seqs] = c;
  in->seq_lengths[in->n_seqs++] = len;
  return RLX_OK;
}

rlx_status cli_inputs_add(cli_inputs *in, const char *name, const char *path) {
  rlx_tensor t;
  rlx_status s = cli_load_tensor(path, &t);
  if (s == RLX_OK) {
    char *c = dup_str(name);
    if (!c) {
      rlx_npy_tensor_free(&t, NULL);
      return rlx_errorf(RLX_ERR_OOM, "out of memory");
    }
    return inputs_push(in, c, t);
  }
  if (!ends_with(path, ".pb")) return s;
  /* not a TensorProto: a SequenceProto? (keep the TensorProto error when it is neither) */
  char *why = dup_str(rlx_last_error());
  rlx_onnx_seq_value sv;
  if (rlx_onnx_sequence_load(path, false, NULL, &sv) != RLX_OK) {
    s = rlx_errorf(s, "%s", why ? why : "not a TensorProto or SequenceProto");
    free(why);
    return s;
  }
  free(why);
  s = inputs_seq(in, name, sv.n);
  uint32_t k = 0;
  for (; k < sv.n && s == RLX_OK; k++) {
    size_t nl = strlen(name) + 16;
    char *c = malloc(nl);
    if (!c) {
      s = rlx_errorf(RLX_ERR_OOM, "out of memory");
      break;
    }
    snprintf(c, nl, "%s.%u", name, k);
    s = inputs_push(in, c, sv.v[k]); /* takes the element either way */
    sv.v[k].data = NULL;
  }
  rlx_onnx_seq_value_free(&sv, NULL);
  return s;
}

void cli_inputs_free(cli_inputs *in) {
  for (uint32_t i = 0; i < in->n; i++) {
    free((char *)in->v[i].name);
    rlx_npy_tensor_free(&in->v[i].tensor, NULL);
  }
  for (uint32_t i = 0; i < in->n_seqs; i++) free((char *)in->seq_names[i]);
  free(in->v);
  free(in->seq_names);
  free(in->seq_lengths);
  memset(in, 0, sizeof *in);
}

/* The --input NAME=PATH and --dim NAME=SIZE arguments of argv, loaded for the importer. */
typedef struct model_args {
  cli_inputs in;
  const char **dim_names;
  char **dim_name_copies;
  int64_t *dim_values;
  uint32_t n_dims;
} model_args;

static void model_args_free(model_args *a) {
  cli_inputs_free(&a->in);
  for (uint32_t i = 0; i < a->n_dims; i++) free(a->dim_name_copies[i]);
  free(a->dim_names);
  free(a->dim_name_copies);
  free(a->dim_values);
  memset(a, 0, sizeof *a);
}

static char *dup_n(const char *s, size_t n) {
  char *c = malloc(n + 1);
  if (c) {
    memcpy(c, s, n);
    c[n] = 0;
  }
  return c;
}

static rlx_status model_args_load(int argc, char **argv, model_args *a) {
  memset(a, 0, sizeof *a);
  size_t cap = (size_t)argc + 1;
  a->dim_names = calloc(cap, sizeof *a->dim_names);
  a->dim_name_copies = calloc(cap, sizeof *a->dim_name_copies);
  a->dim_values = calloc(cap, sizeof *a->dim_values);
  if (!a->dim_names || !a->dim_name_copies || !a->dim_values) return rlx_errorf(RLX_ERR_OOM, "out of memory");
  for (int i = 1; i + 1 < argc; i++) {
    bool is_in = strcmp(argv[i], "--input") == 0, is_dim = strcmp(argv[i], "--dim") == 0;
    if (!is_in && !is_dim) continue;
    const char *v = argv[++i], *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) continue; /* the command reports malformed arguments itself */
    char *name = dup_n(v, (size_t)(eq - v));
    if (!name) return rlx_errorf(RLX_ERR_OOM, "out of memory");
    if (is_dim) {
      char *end;
      errno = 0;
      long long x = strtoll(eq + 1, &end, 10);
      if (errno || *end || x < 0) {
        free(name);
        return rlx_errorf(RLX_ERR_INVALID_ARG, "--dim %s: the size must be a non-negative integer", v);
      }
      a->dim_name_copies[a->n_dims] = name;
      a->dim_names[a->n_dims] = name;
      a->dim_values[a->n_dims++] = x;
      continue;
    }
    rlx_status s = cli_inputs_add(&a->in, name, eq + 1);
    free(name);
    if (s) return rlx_error_context(s, "input '%s'", v);
  }
  return RLX_OK;
}

static void options_from(const model_args *a, rlx_onnx_options *o) {
  rlx_onnx_options_init(o);
  o->inputs = a->in.v;
  o->n_inputs = a->in.n;
  o->seq_names = a->in.seq_names;
  o->seq_lengths = a->in.seq_lengths;
  o->n_seqs = a->in.n_seqs;
  o->dim_names = a->dim_names;
  o->dim_values = a->dim_values;
  o->n_dims = a->n_dims;
}

rlx_status cli_load_graph(const char *file, int argc, char **argv, rlx_graph **out) {
  if (!ends_with(file, ".onnx")) return rlx_load_graph_file(file, NULL, out);
  model_args a;
  rlx_status s = model_args_load(argc, argv, &a);
  if (s == RLX_OK) {
    rlx_onnx_options o;
    options_from(&a, &o);
    s = rlx_onnx_import_file(file, &o, NULL, out);
  }
  model_args_free(&a);
  return s;
}

int cli_cmd_import(const cli_command *self, int argc, char **argv) {
  const char *file = NULL, *out = NULL;
  bool binary = false, report = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (cli_is_help(a)) return cli_help(self);
    if (strcmp(a, "--binary") == 0)
      binary = true;
    else if (strcmp(a, "--report") == 0)
      report = true;
    else if (strcmp(a, "-o") == 0) {
      if (!cli_option_value(self, argc, argv, &i, &out)) return CLI_USAGE;
    } else if (strcmp(a, "--input") == 0 || strcmp(a, "--dim") == 0) {
      if (!cli_option_value(self, argc, argv, &i, &v)) return CLI_USAGE;
      const char *eq = strchr(v, '=');
      if (!eq || eq == v || !eq[1])
        return cli_usage_error(self, "%s expects NAME=%s, got '%s'", a, a[2] == 'i' ? "FILE" : "SIZE", v);
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error(self, "unknown option '%s'", a);
    } else if (file) {
      return cli_usage_error(self, "more than one FILE given ('%s' and '%s')", file, a);
    } else {
      file = a;
    }
  }
  if (!file) return cli_usage_error(self, "no FILE given");
  if (binary && report) return cli_usage_error(self, "--binary and --report do not go together");
  if (binary && (!out || strcmp(out, "-") == 0)) return cli_usage_error(self, "--binary needs -o FILE");
  model_args ma;
  rlx_status s = model_args_load(argc, argv, &ma);
  if (s) {
    model_args_free(&ma);
    return cli_fail(self, "%s", rlx_last_error());
  }
  rlx_onnx_options o;
  options_from(&ma, &o);
  int rc = CLI_OK;
  if (report) {
    char *text = NULL;
    size_t len = 0;
    uint32_t gaps = 0;
    s = rlx_onnx_report(file, &o, NULL, &text, &len, &gaps);
    if (s)
      rc = cli_fail_rlx(self, file);
    else if (gaps == 0)
      printf("%s: every op is supported\n", file);
    else {
      printf("%s: %s", file, text);
      rc = CLI_FAILED;
    }
    free(text);
    model_args_free(&ma);
    return rc;
  }
  rlx_graph *g = NULL;
  s = rlx_onnx_import_file(file, &o, NULL, &g);
  model_args_free(&ma);
  if (s) return cli_fail_rlx(self, file);
  void *buf = NULL;
  size_t len = 0;
  if (binary)
    s = rlx_binary_write(g, NULL, (uint8_t **)&buf, &len);
  else
    s = rlx_text_print(g, NULL, (char **)&buf, &len);
  if (s)
    rc = cli_fail_rlx(self, file);
  else
    rc = cli_write_output(self, out, buf, len);
  free(buf);
  rlx_graph_free(g);
  return rc;
}
