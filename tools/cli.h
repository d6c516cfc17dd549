/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Shared pieces of the rlx command-line tool: the command table entry, the exit codes and small
 * helpers for argument errors and output files. Each command lives in its own tools/cmd_*.c file
 * and is listed once in the table of tools/main.c. */
#ifndef RLX_CLI_H
#define RLX_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "rlx/session.h"

/* Exit codes of every command. */
enum {
  CLI_OK = 0,
  CLI_FAILED = 1, /* the input was read but something about it failed (bad file, bad graph) */
  CLI_USAGE = 2   /* wrong arguments or options */
};

typedef struct cli_command {
  const char *name;
  /* argv[0] is the command name; the rest are its arguments. Returns an exit code. */
  int (*run)(const struct cli_command *self, int argc, char **argv);
  const char *summary; /* one line for `rlx --help` */
  const char *usage;   /* full help text printed by `rlx NAME --help` */
} cli_command;

/* Commands of tools/cmd_ir.c. */
int cli_cmd_ops(const cli_command *self, int argc, char **argv);
int cli_cmd_check(const cli_command *self, int argc, char **argv);
int cli_cmd_print(const cli_command *self, int argc, char **argv);
int cli_cmd_dot(const cli_command *self, int argc, char **argv);
/* Commands of tools/cmd_run.c. */
int cli_cmd_run(const cli_command *self, int argc, char **argv);
int cli_cmd_compile(const cli_command *self, int argc, char **argv);
/* Command of tools/cmd_train.c (its usage text is cli_train_usage). */
int cli_cmd_train(const cli_command *self, int argc, char **argv);
extern const char cli_train_usage[];

/* Command of tools/cmd_splat.c (its usage text is cli_splat_usage). */
int cli_cmd_splat_render(const cli_command *self, int argc, char **argv);
extern const char cli_splat_usage[];

/* Command of tools/cmd_onnx_conformance.c (its usage text is cli_onnx_conformance_usage). */
int cli_cmd_onnx_conformance(const cli_command *self, int argc, char **argv);
extern const char cli_onnx_conformance_usage[];

/* Commands and hooks of tools/cmd_onnx.c. */
int cli_cmd_import(const cli_command *self, int argc, char **argv);
/* Loads FILE for `rlx run` / `rlx compile`: a .onnx model is imported (its symbolic dims bound from
 * the --input NAME=PATH tensors and --dim NAME=SIZE arguments in argv); any other file goes
 * through rlx_load_graph_file. */
rlx_status cli_load_graph(const char *file, int argc, char **argv, rlx_graph **out);
/* Loads a tensor file: ONNX TensorProto when PATH ends in .pb, else .npy (free the data with
 * rlx_npy_tensor_free(t, NULL)). */
rlx_status cli_load_tensor(const char *path, rlx_tensor *out);

/* The tensors of --input NAME=PATH arguments. A .pb file holding an ONNX SequenceProto (a sequence
 * graph input) gives one entry per element, named NAME.0, NAME.1, ... as the importer names the
 * Inputs of a sequence, and a length entry (seq_names / seq_lengths, for rlx_onnx_options). */
typedef struct cli_inputs {
  rlx_named_tensor *v; /* names and data owned here */
  uint32_t n, cap;
  const char **seq_names;
  int64_t *seq_lengths;
  uint32_t n_seqs, cap_seqs;
} cli_inputs;
rlx_status cli_inputs_add(cli_inputs *in, const char *name, const char *path);
void cli_inputs_free(cli_inputs *in);

/* CLI_OK when NAME is a registered backend, else a usage error listing the registered ones
 * ("unknown backend 'x' (registered: cpu, ...)") and CLI_USAGE. */
int cli_check_backend(const cli_command *self, const char *name);

/* True for "-h" and "--help". */
bool cli_is_help(const char *arg);

/* Prints `self->usage` to stdout and returns CLI_OK (for --help). */
int cli_help(const cli_command *self);

/* Prints "rlx NAME: <message>" and a hint to use --help to stderr; returns CLI_USAGE. */
int cli_usage_error(const cli_command *self, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints "rlx NAME: <message>" to stderr; returns CLI_FAILED. */
int cli_fail(const cli_command *self, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Takes the value of an option that needs one (argv[*i] is the option): advances *i and stores
 * the value in *out. Returns false, after reporting a usage error, when the value is missing. */
bool cli_option_value(const cli_command *self, int argc, char **argv, int *i, const char **out);

/* Writes `len` bytes to `path`, or to stdout when `path` is NULL or "-". Returns CLI_OK or
 * CLI_FAILED after reporting the error (naming the file and the system's reason). */
int cli_write_output(const cli_command *self, const char *path, const void *data, size_t len);

/* Reports the last librlx error about `path` ("path: message", without repeating the path when
 * the library's message already starts with it); returns CLI_FAILED. */
int cli_fail_rlx(const cli_command *self, const char *path);

#endif
