/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* `rlx run` (compile a graph file, bind .npy inputs and params, write .npy outputs) and
 * `rlx compile` (compile and print the dispatch report), with --dim bindings of symbolic dims
 * (ONNX dim_params by name, the ?K symbols of an RLX IR graph by number) and --backend. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "passes/decompose/decompose.h" /* rlx_pass_copy_node */
#include "passes/passes.h"
#include "rlx/cpu.h"
#include "rlx/npy.h"
#include "rlx/rlx.h"
#include "rlx/session.h"

/* A NAME=PATH argument. */
typedef struct binding {
  const char *arg; /* as given, for messages */
  char *name;      /* owned copy of NAME */
  const char *path;
} binding;

static bool parse_binding(const cli_command *self, const char *opt, const char *arg, binding *b) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg || !eq[1]) {
    cli_usage_error(self, "%s expects NAME=FILE.npy, got '%s'", opt, arg);
    return false;
  }
  size_t n = (size_t)(eq - arg);
  b->name = malloc(n + 1);
  if (!b->name) {
    cli_fail(self, "out of memory");
    return false;
  }
  memcpy(b->name, arg, n);
  b->name[n] = 0;
  b->arg = arg;
  b->path = eq + 1;
  return true;
}

static void free_bindings(binding *v, int n) {
  for (int i = 0; i < n; i++) free(v[i].name);
  free(v);
}

/* Output file stem: the output node's name when it is a plain file name, else output<i>; a stem
 * already taken by an earlier output also falls back to output<i>. */
static void output_stem(const rlx_graph *g, uint32_t i, char stems[][128], char *out, size_t cap) {
  const rlx_node *n = rlx_graph_node(g, rlx_graph_outputs(g)[i]);
  const char *name = n ? n->name : NULL;
  bool ok = name && name[0] && strlen(name) < 120 && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
            !strchr(name, '/') && !strchr(name, '\\');
  if (ok) {
    for (const char *c = name; *c && ok; c++) ok = (unsigned char)*c >= 0x20 && *c != 0x7f;
    for (uint32_t k = 0; k < i && ok; k++) ok = strcmp(stems[k], name) != 0;
  }
  if (ok)
    snprintf(out, cap, "%s", name);
  else
    snprintf(out, cap, "output%u", i);
  /* "output<i>" of a later output can still collide with an earlier node named "output<i>": then
   * append the index once more, which no earlier stem can equal. */
  for (uint32_t k = 0; k < i; k++)
    if (strcmp(stems[k], out) == 0) {
      snprintf(out, cap, "output%u_%u", i, i);
      break;
    }
}

static int ensure_dir(const cli_command *self, const char *dir) {
  struct stat st;
  if (stat(dir, &st) == 0) {
    if (S_ISDIR(st.st_mode)) return CLI_OK;
    return cli_fail(self, "%s exists and is not a directory", dir);
  }
  if (mkdir(dir, 0777) != 0) return cli_fail(self, "cannot create directory %s: %s", dir, strerror(errno));
  return CLI_OK;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Checks a --dim NAME=SIZE value (a usage error when malformed). */
static bool dim_arg_ok(const cli_command *self, const char *v) {
  const char *eq = strchr(v, '=');
  char *end;
  errno = 0;
  long long x = eq ? strtoll(eq + 1, &end, 10) : -1;
  if (!eq || eq == v || !eq[1] || errno || *end || x < 0 || eq[1] == '-' || eq[1] == '+') {
    cli_usage_error(self, "--dim expects NAME=SIZE with a non-negative integer SIZE, got '%s'", v);
    return false;
  }
  return true;
}

/* The symbol number of a --dim NAME of an RLX IR graph: "?K" or "K". */
static bool symbol_of(const char *name, size_t len, uint32_t *k) {
  if (len && name[0] == '?') name++, len--;
  if (!len || len > 10) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (name[i] < '0' || name[i] > '9') return false;
    v = v * 10 + (uint64_t)(name[i] - '0');
  }
  if (v > UINT32_MAX) return false;
  *k = (uint32_t)v;
  return true;
}

typedef struct sym_binding {
  uint32_t sym;
  int64_t size;
  const char *arg;
  bool used;
} sym_binding;

static rlx_shape bind_shape(rlx_shape sh, sym_binding *b, uint32_t nb) {
  for (uint32_t d = 0; d < sh.rank; d++)
    if (!rlx_dim_is_static(sh.dims[d]))
      for (uint32_t i = 0; i < nb; i++)
        if (rlx_dim_symbol(sh.dims[d]) == b[i].sym) {
          sh.dims[d] = b[i].size;
          b[i].used = true;
        }
  return sh;
}

/* `--dim ?K=N` on an RLX IR graph: a copy of *g with symbol ?K replaced by N in every leaf and
 * declared shape of the top-level graph, every other shape inferred again (so an inconsistent
 * binding is an error naming the node). Every --dim must name a symbol the graph uses. */
static int bind_ir_dims(const cli_command *self, const char *file, int argc, char **argv, rlx_graph **g) {
  sym_binding *b = calloc((size_t)argc + 1, sizeof *b);
  uint32_t nb = 0;
  if (!b) return cli_fail(self, "out of memory");
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "--dim") != 0) continue;
    const char *v = argv[++i], *eq = strchr(v, '=');
    if (!symbol_of(v, (size_t)(eq - v), &b[nb].sym)) {
      free(b);
      return cli_usage_error(self, "--dim %s: an RLX IR graph's symbolic dims are ?0, ?1, ...: write --dim ?K=SIZE", v);
    }
    b[nb].size = strtoll(eq + 1, NULL, 10);
    b[nb++].arg = v;
  }
  if (nb == 0) {
    free(b);
    return CLI_OK;
  }
  rlx_rebuild rb;
  rlx_status st = rlx_rebuild_begin(*g, &rb);
  for (uint32_t id = 0; st == RLX_OK && id < rlx_graph_node_count(*g); id++) {
    rlx_node n = *rlx_graph_node(*g, id);
    rlx_id in[64];
    if (n.n_inputs > 64) {
      st = rlx_errorf(RLX_ERR_UNSUPPORTED, "node %%%u has %u operands: --dim handles up to 64", id, n.n_inputs);
      break;
    }
    for (uint32_t k = 0; k < n.n_inputs; k++) in[k] = rb.map[n.inputs[k]];
    n.shape = bind_shape(n.shape, b, nb);
    st = rlx_pass_copy_node(rb.dst, &n, in, !rlx_op_has(n.op, RLX_PROP_LEAF), &rb.map[id]);
  }
  rlx_graph *bound = NULL;
  if (st == RLX_OK)
    st = rlx_rebuild_finish(&rb, &bound);
  else
    rlx_rebuild_abort(&rb);
  if (st == RLX_OK) st = rlx_verify(bound);
  int rc = CLI_OK;
  if (st != RLX_OK) {
    rc = cli_fail(self, "%s: binding the --dim sizes: %s", file, rlx_last_error());
    rlx_graph_free(bound);
  } else {
    for (uint32_t i = 0; i < nb && rc == CLI_OK; i++)
      if (!b[i].used) rc = cli_fail(self, "%s: --dim %s: the graph has no symbolic dim ?%u", file, b[i].arg, b[i].sym);
    if (rc == CLI_OK) {
      rlx_graph_free(*g);
      *g = bound;
    } else {
      rlx_graph_free(bound);
    }
  }
  free(b);
  return rc;
}

/* Loads FILE (an .onnx model takes the --dim and --input arguments while importing) and binds
 * the --dim sizes of an RLX IR graph. On failure *g may still hold the loaded graph: the caller
 * frees it. */
static int load_for_compile(const cli_command *self, const char *file, int argc, char **argv, rlx_graph **g) {
  if (cli_load_graph(file, argc, argv, g) != RLX_OK) return cli_fail_rlx(self, file);
  if (ends_with(file, ".onnx")) return CLI_OK;
  return bind_ir_dims(self, file, argc, argv, g);
}

static bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int cli_cmd_run(const cli_command *self, int argc, char **argv) {
  const char *file = NULL, *out_dir = NULL, *params_dir = NULL, *backend = "cpu";
  rlx_compile_options opt;
  rlx_compile_options_init(&opt);
  rlx_cpu_options cpu;
  rlx_cpu_options_init(&cpu);
  binding *inputs = calloc((size_t)argc, sizeof *inputs), *params = calloc((size_t)argc, sizeof *params);
  int n_in = 0, n_par = 0, rc = CLI_OK;
  rlx_graph *g = NULL;
  rlx_executable *e = NULL;
  cli_inputs fed = {0};
  rlx_tensor *loaded = NULL;
  int n_loaded = 0;
  if (!inputs || !params) {
    rc = cli_fail(self, "out of memory");
    goto done;
  }
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (cli_is_help(a)) {
      rc = cli_help(self);
      goto done;
    } else if (strcmp(a, "--input") == 0 || strcmp(a, "--param") == 0) {
      if (!cli_option_value(self, argc, argv, &i, &v)) {
        rc = CLI_USAGE;
        goto done;
      }
      bool is_in = a[2] == 'i';
      if (!parse_binding(self, a, v, is_in ? &inputs[n_in] : &params[n_par])) {
        rc = CLI_USAGE;
        goto done;
      }
      if (is_in)
        n_in++;
      else
        n_par++;
    } else if (strcmp(a, "--dim") == 0) {
      if (!cli_option_value(self, argc, argv, &i, &v) || !dim_arg_ok(self, v)) {
        rc = CLI_USAGE;
        goto done;
      }
    } else if (strcmp(a, "--params") == 0 || strcmp(a, "--output-dir") == 0 || strcmp(a, "--backend") == 0 ||
               strcmp(a, "--seed") == 0 || strcmp(a, "--threads") == 0) {
      if (!cli_option_value(self, argc, argv, &i, &v)) {
        rc = CLI_USAGE;
        goto done;
      }
      if (strcmp(a, "--params") == 0)
        params_dir = v;
      else if (strcmp(a, "--output-dir") == 0)
        out_dir = v;
      else if (strcmp(a, "--backend") == 0)
        backend = v;
      else {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || end == v || *end || v[0] == '-' || (a[2] == 't' && x > 4096)) {
          rc = cli_usage_error(self, "%s expects a non-negative integer%s, got '%s'", a,
                               a[2] == 't' ? " up to 4096" : "", v);
          goto done;
        }
        if (a[2] == 's')
          opt.rng_seed = x;
        else
          cpu.threads = (int)x;
      }
    } else if (a[0] == '-' && a[1]) {
      rc = cli_usage_error(self, "unknown option '%s'", a);
      goto done;
    } else if (file) {
      rc = cli_usage_error(self, "more than one FILE given ('%s' and '%s')", file, a);
      goto done;
    } else {
      file = a;
    }
  }
  if (!file) {
    rc = cli_usage_error(self, "no FILE given");
    goto done;
  }
  if (!out_dir) {
    rc = cli_usage_error(self, "--output-dir DIR is required");
    goto done;
  }
  if ((rc = cli_check_backend(self, backend)) != CLI_OK) goto done;

  if ((rc = load_for_compile(self, file, argc, argv, &g)) != CLI_OK) goto done;
  if (strcmp(backend, "cpu") == 0) opt.backend_options = &cpu; /* --threads */
  if (rlx_compile(g, backend, &opt, &e) != RLX_OK) {
    rc = cli_fail_rlx(self, file);
    goto done;
  }

  loaded = calloc((size_t)(n_in + n_par) + rlx_executable_param_count(e) + 1, sizeof *loaded);
  if (!loaded) {
    rc = cli_fail(self, "out of memory");
    goto done;
  }
  /* Params: explicit --param first, then --params DIR for the rest. */
  uint32_t np = rlx_executable_param_count(e);
  bool *given = calloc(np + 1, sizeof *given);
  if (!given) {
    rc = cli_fail(self, "out of memory");
    goto done;
  }
  for (int i = 0; i < n_par && rc == CLI_OK; i++) {
    rlx_tensor *t = &loaded[n_loaded];
    if (rlx_npy_load(params[i].path, NULL, t) != RLX_OK) {
      rc = cli_fail(self, "param '%s': %s", params[i].name, rlx_last_error());
      break;
    }
    n_loaded++;
    if (rlx_executable_set_param(e, params[i].name, t) != RLX_OK) {
      rc = cli_fail(self, "%s (from %s)", rlx_last_error(), params[i].path);
      break;
    }
    for (uint32_t k = 0; k < np; k++)
      if (strcmp(rlx_executable_param_name(e, k), params[i].name) == 0) given[k] = true;
  }
  for (uint32_t k = 0; k < np && rc == CLI_OK && params_dir; k++) {
    if (given[k]) continue;
    const char *name = rlx_executable_param_name(e, k);
    size_t len = strlen(params_dir) + strlen(name) + 6;
    char *path = malloc(len);
    if (!path) {
      rc = cli_fail(self, "out of memory");
      break;
    }
    snprintf(path, len, "%s/%s.npy", params_dir, name);
    if (!file_exists(path)) {
      rc = cli_fail(self, "param '%s': %s does not exist (--params needs one NAME.npy per param)", name, path);
    } else if (rlx_npy_load(path, NULL, &loaded[n_loaded]) != RLX_OK) {
      rc = cli_fail(self, "param '%s': %s", name, rlx_last_error());
    } else {
      n_loaded++;
      if (rlx_executable_set_param(e, name, &loaded[n_loaded - 1]) != RLX_OK)
        rc = cli_fail(self, "%s (from %s)", rlx_last_error(), path);
    }
    free(path);
  }
  free(given);
  if (rc != CLI_OK) goto done;
  /* Tensors are copied by set_param: release them before loading the inputs. */
  for (int i = 0; i < n_loaded; i++) rlx_npy_tensor_free(&loaded[i], NULL);
  n_loaded = 0;

  for (int i = 0; i < n_in; i++) /* a SequenceProto .pb gives NAME.0, NAME.1, ... */
    if (cli_inputs_add(&fed, inputs[i].name, inputs[i].path) != RLX_OK) {
      rc = cli_fail(self, "input '%s': %s", inputs[i].name, rlx_last_error());
      goto done;
    }
  const rlx_tensor *outs;
  uint32_t n_outs;
  if (rlx_executable_run(e, fed.v, fed.n, &outs, &n_outs) != RLX_OK) {
    rc = cli_fail(self, "%s: %s", file, rlx_last_error());
    goto done;
  }
  if ((rc = ensure_dir(self, out_dir)) != CLI_OK) goto done;
  char(*stems)[128] = calloc(n_outs + 1, sizeof *stems);
  if (!stems) {
    rc = cli_fail(self, "out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < n_outs && rc == CLI_OK; i++) {
    output_stem(g, i, stems, stems[i], sizeof stems[i]);
    size_t len = strlen(out_dir) + strlen(stems[i]) + 6;
    char *path = malloc(len);
    if (!path) {
      rc = cli_fail(self, "out of memory");
      break;
    }
    snprintf(path, len, "%s/%s.npy", out_dir, stems[i]);
    if (rlx_npy_save(path, &outs[i]) != RLX_OK) {
      rc = cli_fail(self, "output %u: %s", i, rlx_last_error());
    } else {
      char shape[96];
      rlx_shape_format(&outs[i].shape, shape, sizeof shape);
      printf("%s: %s -> %s\n", stems[i], shape, path);
    }
    free(path);
  }
  free(stems);

done:
  for (int i = 0; i < n_loaded; i++) rlx_npy_tensor_free(&loaded[i], NULL);
  free(loaded);
  cli_inputs_free(&fed);
  rlx_executable_free(e);
  rlx_graph_free(g);
  if (inputs) free_bindings(inputs, n_in);
  if (params) free_bindings(params, n_par);
  return rc;
}

int cli_cmd_compile(const cli_command *self, int argc, char **argv) {
  const char *file = NULL, *backend = "cpu";
  bool report = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_is_help(a)) return cli_help(self);
    if (strcmp(a, "--report") == 0) {
      report = true;
    } else if (strcmp(a, "--backend") == 0) {
      if (!cli_option_value(self, argc, argv, &i, &backend)) return CLI_USAGE;
    } else if (strcmp(a, "--dim") == 0) {
      const char *v;
      if (!cli_option_value(self, argc, argv, &i, &v) || !dim_arg_ok(self, v)) return CLI_USAGE;
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error(self, "unknown option '%s'", a);
    } else if (file) {
      return cli_usage_error(self, "more than one FILE given ('%s' and '%s')", file, a);
    } else {
      file = a;
    }
  }
  if (!file) return cli_usage_error(self, "no FILE given");
  int rc = cli_check_backend(self, backend);
  if (rc != CLI_OK) return rc;
  rlx_graph *g = NULL;
  if ((rc = load_for_compile(self, file, argc, argv, &g)) != CLI_OK) {
    rlx_graph_free(g);
    return rc;
  }
  rlx_dispatch_report rep;
  rlx_executable *e = NULL;
  rlx_compile_options opt;
  rlx_compile_options_init(&opt);
  rlx_status st = rlx_compile_with_report(g, backend, &opt, &rep, &e);
  /* The report is worth printing on failure too when legalization ran: it shows what has no path. */
  if (report && (st == RLX_OK || rep.nodes_before > 0)) {
    char *text = NULL;
    size_t len;
    char msg[16384];
    snprintf(msg, sizeof msg, "%s", rlx_last_error()); /* formatting must not lose the compile error */
    if (rlx_dispatch_report_format(&rep, NULL, &text, &len) == RLX_OK) {
      printf("dispatch report for %s on %s\n%s", file, backend, text);
      free(text);
    }
    if (st != RLX_OK) rlx_errorf(st, "%s", msg);
  }
  if (st != RLX_OK) {
    rc = cli_fail_rlx(self, file);
  } else if (!report) {
    const rlx_dispatch_report *r = rlx_executable_report(e);
    printf("%s: compiled for %s: %u nodes -> %u nodes, arena %zu bytes (tensors %zu bytes without reuse)\n", file,
           backend, r->nodes_before, r->nodes_after, r->arena_bytes, r->tensor_bytes);
  }
  rlx_executable_free(e);
  rlx_graph_free(g);
  return rc;
}
