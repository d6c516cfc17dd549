/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* IR commands of the rlx tool: ops (the op table), check (load + verify), print (canonical text
 * or binary) and dot (Graphviz). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "rlx/rlx.h"

/* ---- rlx ops ---- */

/* Names of rlx_field_type, as written in ops.def (o* = optional). */
static const char *const field_type_names[] = {
    [RLX_FT_I64] = "i64",     [RLX_FT_U64] = "u64",       [RLX_FT_F32] = "f32",     [RLX_FT_BOOL] = "bool",
    [RLX_FT_DTYPE] = "dtype", [RLX_FT_OI64] = "oi64",     [RLX_FT_OF32] = "of32",   [RLX_FT_ODTYPE] = "odtype",
    [RLX_FT_ILIST] = "ilist", [RLX_FT_FLIST] = "flist",   [RLX_FT_STR] = "str",     [RLX_FT_BYTES] = "bytes",
    [RLX_FT_GRAPH] = "graph", [RLX_FT_OGRAPH] = "ograph", [RLX_FT_CHAIN] = "chain", [RLX_FT_ENUM] = "enum",
    [RLX_FT_OENUM] = "oenum",
};

static const char *field_type_name(rlx_field_type t) {
  size_t n = sizeof field_type_names / sizeof field_type_names[0];
  return (size_t)t < n && field_type_names[t] ? field_type_names[t] : "?";
}

/* "2", "1..4" or "1..*". */
static void format_arity(rlx_op op, char *buf, size_t cap) {
  uint32_t lo = rlx_op_min_inputs(op), hi = rlx_op_max_inputs(op);
  if (hi == RLX_ARITY_VARIADIC)
    snprintf(buf, cap, "%u..*", lo);
  else if (lo == hi)
    snprintf(buf, cap, "%u", lo);
  else
    snprintf(buf, cap, "%u..%u", lo, hi);
}

/* Does the field have a scalar default? Lists, strings, bytes, graphs and chains default to
 * empty and get no "default" key. */
static bool has_scalar_default(rlx_field_type t) {
  return t != RLX_FT_ILIST && t != RLX_FT_FLIST && t != RLX_FT_STR && t != RLX_FT_BYTES && t != RLX_FT_GRAPH &&
         t != RLX_FT_OGRAPH && t != RLX_FT_CHAIN;
}

/* Prints the shortest decimal that reads back as the same float (1e-05, not 9.99999975e-06). */
static void print_shortest_f32(float v) {
  char buf[32];
  for (int prec = 6; prec <= 9; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, (double)v);
    if (strtof(buf, NULL) == v) break; /* %.9g always reads back exactly */
  }
  printf("%s", buf);
}

/* The default of one scalar field as a JSON value (null for optional fields: none). */
static void print_json_default(const rlx_field *f) {
  switch (f->type) {
  case RLX_FT_I64: printf("%lld", (long long)f->def); break;
  case RLX_FT_U64: printf("%llu", (unsigned long long)f->def); break;
  case RLX_FT_F32:
    if (isfinite(f->def))
      print_shortest_f32((float)f->def);
    else
      printf("null");
    break;
  case RLX_FT_BOOL: printf("%s", f->def != 0 ? "true" : "false"); break;
  case RLX_FT_DTYPE:
    if (f->def >= 0 && f->def < RLX_DTYPE_COUNT)
      printf("\"%s\"", rlx_dtype_name((rlx_dtype)f->def));
    else
      printf("null");
    break;
  case RLX_FT_ENUM:
    if (f->enm && f->def >= 0 && f->def < f->enm->count)
      printf("\"%s\"", f->enm->names[(int)f->def]);
    else
      printf("null");
    break;
  default: printf("null"); break;
  }
}

static void print_op_json(rlx_op op, bool first) {
  uint32_t props = rlx_op_props(op), hi = rlx_op_max_inputs(op);
  printf("%s\n  {\"name\": \"%s\", \"family\": \"%s\", \"min_inputs\": %u, \"max_inputs\": ", first ? "" : ",",
         rlx_op_name(op), rlx_family_name(rlx_op_family(op)), rlx_op_min_inputs(op));
  if (hi == RLX_ARITY_VARIADIC)
    printf("null");
  else
    printf("%u", hi);
  printf(", \"properties\": [");
  bool any = false;
  for (uint32_t b = 0; b < RLX_PROP_BIT_COUNT; b++) {
    if (!(props & (1u << b))) continue;
    printf("%s\"%s\"", any ? ", " : "", rlx_prop_name(b));
    any = true;
  }
  printf("], \"attributes\": [");
  uint32_t nf = 0;
  const rlx_field *fields = rlx_op_fields(op, &nf);
  for (uint32_t k = 0; k < nf; k++) {
    const rlx_field *f = &fields[k];
    printf("%s{\"name\": \"%s\", \"type\": \"%s\"", k ? ", " : "", f->name, field_type_name(f->type));
    if (f->enm) printf(", \"enum\": \"%s\"", f->enm->type_name);
    if (has_scalar_default(f->type)) {
      printf(", \"default\": ");
      print_json_default(f);
    }
    printf("}");
  }
  printf("]}");
}

static void print_op_line(rlx_op op, int name_w, int fam_w) {
  char arity[32];
  format_arity(op, arity, sizeof arity);
  uint32_t props = rlx_op_props(op);
  printf("%-*s  %-*s  %-*s", name_w, rlx_op_name(op), fam_w, rlx_family_name(rlx_op_family(op)), props ? 6 : 0, arity);
  for (uint32_t b = 0; b < RLX_PROP_BIT_COUNT; b++)
    if (props & (1u << b)) printf(" %s", rlx_prop_name(b));
  printf("\n");
}

int cli_cmd_ops(const cli_command *self, int argc, char **argv) {
  bool json = false;
  const char *family_arg = NULL;
  for (int i = 1; i < argc; i++) {
    if (cli_is_help(argv[i])) return cli_help(self);
    if (strcmp(argv[i], "--json") == 0)
      json = true;
    else if (strcmp(argv[i], "--family") == 0) {
      if (!cli_option_value(self, argc, argv, &i, &family_arg)) return CLI_USAGE;
    } else if (argv[i][0] == '-')
      return cli_usage_error(self, "unknown option '%s'", argv[i]);
    else
      return cli_usage_error(self, "unexpected argument '%s'", argv[i]);
  }

  int family = -1; /* -1 = every family */
  if (family_arg) {
    for (int f = 0; f < RLX_FAMILY_COUNT; f++)
      if (strcmp(rlx_family_name((rlx_family)f), family_arg) == 0) family = f;
    if (family < 0) {
      fprintf(stderr, "rlx ops: unknown family '%s'; the families are:", family_arg);
      for (int f = 0; f < RLX_FAMILY_COUNT; f++) fprintf(stderr, " %s", rlx_family_name((rlx_family)f));
      fputc('\n', stderr);
      return CLI_USAGE;
    }
  }

  int name_w = 0, fam_w = 0;
  for (int op = 0; op < RLX_OP_COUNT; op++) {
    int n = (int)strlen(rlx_op_name((rlx_op)op));
    int m = (int)strlen(rlx_family_name(rlx_op_family((rlx_op)op)));
    if (n > name_w) name_w = n;
    if (m > fam_w) fam_w = m;
  }

  bool first = true;
  if (json) printf("[");
  for (int op = 0; op < RLX_OP_COUNT; op++) {
    if (family >= 0 && (int)rlx_op_family((rlx_op)op) != family) continue;
    if (json)
      print_op_json((rlx_op)op, first);
    else
      print_op_line((rlx_op)op, name_w, fam_w);
    first = false;
  }
  if (json) printf("\n]\n");
  if (fflush(stdout) != 0) return cli_fail(self, "cannot write to standard output");
  return CLI_OK;
}

/* ---- rlx check ---- */

/* Is argv[i] an option (before any "--")? */
static bool is_option(const char *a, bool options_done) { return !options_done && a[0] == '-' && a[1] != '\0'; }

int cli_cmd_check(const cli_command *self, int argc, char **argv) {
  /* Validate every option before loading anything, so a typo never half-runs. */
  int n_files = 0;
  bool options_done = false;
  for (int i = 1; i < argc; i++) {
    if (!is_option(argv[i], options_done))
      n_files++;
    else if (strcmp(argv[i], "--") == 0)
      options_done = true;
    else if (cli_is_help(argv[i]))
      return cli_help(self);
    else
      return cli_usage_error(self, "unknown option '%s'", argv[i]);
  }
  if (n_files == 0) return cli_usage_error(self, "no FILE given");

  int failed = 0;
  options_done = false;
  for (int i = 1; i < argc; i++) {
    if (is_option(argv[i], options_done)) {
      options_done = true; /* the only option left after validation is "--" */
      continue;
    }
    rlx_graph *g = NULL;
    if (rlx_load_graph_file(argv[i], NULL, &g) != RLX_OK) {
      cli_fail_rlx(self, argv[i]);
      failed++;
      continue;
    }
    printf("%s: ok (%u nodes, %u outputs)\n", argv[i], rlx_graph_node_count(g), rlx_graph_output_count(g));
    fflush(stdout); /* keep ok lines and error lines in order when both go to a terminal */
    rlx_graph_free(g);
  }
  return failed ? CLI_FAILED : CLI_OK;
}

/* ---- rlx print / rlx dot ---- */

typedef struct render_args {
  const char *file, *out;
  bool binary;
} render_args;

/* Parses `FILE [-o OUT] [--binary]` (--binary only when allowed). Returns -1 to go on, or the
 * exit code to return (help printed or usage error). */
static int parse_render_args(const cli_command *self, int argc, char **argv, bool allow_binary, render_args *r) {
  bool options_done = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (is_option(a, options_done)) {
      if (strcmp(a, "--") == 0)
        options_done = true;
      else if (cli_is_help(a))
        return cli_help(self);
      else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
        if (r->out) return cli_usage_error(self, "-o given twice");
        if (!cli_option_value(self, argc, argv, &i, &r->out)) return CLI_USAGE;
      } else if (allow_binary && strcmp(a, "--binary") == 0)
        r->binary = true;
      else
        return cli_usage_error(self, "unknown option '%s'", a);
    } else if (!r->file)
      r->file = a;
    else
      return cli_usage_error(self, "unexpected argument '%s' (one FILE at a time)", a);
  }
  if (!r->file) return cli_usage_error(self, "no FILE given");
  if (r->binary && (!r->out || strcmp(r->out, "-") == 0))
    return cli_usage_error(self, "--binary needs -o OUT (binary output is not written to a terminal)");
  return -1;
}

int cli_cmd_print(const cli_command *self, int argc, char **argv) {
  render_args r = {0};
  int rc = parse_render_args(self, argc, argv, true, &r);
  if (rc >= 0) return rc;

  rlx_graph *g = NULL;
  if (rlx_load_graph_file(r.file, NULL, &g) != RLX_OK) return cli_fail_rlx(self, r.file);
  const rlx_allocator *al = rlx_default_allocator();
  void *buf = NULL;
  size_t len = 0;
  rlx_status s =
      r.binary ? rlx_binary_write(g, al, (uint8_t **)&buf, &len) : rlx_text_print(g, al, (char **)&buf, &len);
  if (s != RLX_OK)
    rc = cli_fail_rlx(self, r.file);
  else
    rc = cli_write_output(self, r.out, buf, len);
  al->free(al->ctx, buf);
  rlx_graph_free(g);
  return rc;
}

int cli_cmd_dot(const cli_command *self, int argc, char **argv) {
  render_args r = {0};
  int rc = parse_render_args(self, argc, argv, false, &r);
  if (rc >= 0) return rc;

  rlx_graph *g = NULL;
  if (rlx_load_graph_file(r.file, NULL, &g) != RLX_OK) return cli_fail_rlx(self, r.file);
  const rlx_allocator *al = rlx_default_allocator();
  char *buf = NULL;
  size_t len = 0;
  if (rlx_graph_to_dot(g, al, &buf, &len) != RLX_OK)
    rc = cli_fail_rlx(self, r.file);
  else
    rc = cli_write_output(self, r.out, buf, len);
  al->free(al->ctx, buf);
  rlx_graph_free(g);
  return rc;
}
