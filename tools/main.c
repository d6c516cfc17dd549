/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* rlx: the command-line tool. `rlx <command> [args]`; each command is one entry of the table
 * below, implemented in a tools/cmd_*.c file. This file also holds the helpers of cli.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "io/file_io.h"
#include "rlx/rlx.h"

/* ---- the command table: add a command by adding one line here ---- */
static const cli_command commands[] = {
    {"ops", cli_cmd_ops, "list the op kinds with family, arity and properties",
     "usage: rlx ops [--family F] [--json]\n"
     "\n"
     "Lists every op kind of the IR in table order, one per line:\n"
     "  name  family  arity  properties...\n"
     "Arity is `N`, `LO..HI` or `LO..*` (no upper bound).\n"
     "\n"
     "options:\n"
     "  --family F   only the op kinds of family F (leaf, elementwise, linalg, ...)\n"
     "  --json       one JSON array: name, family, min_inputs, max_inputs (null = no bound),\n"
     "               properties and attributes (name, type, enum, default)\n"},
    {"check", cli_cmd_check, "load and verify graph files (text or binary)",
     "usage: rlx check FILE...\n"
     "\n"
     "Loads each FILE (canonical text or binary IR, detected by its first bytes), verifies it and\n"
     "prints `FILE: ok (N nodes, M outputs)`. Errors go to stderr; the exit code is 1 when any\n"
     "file failed (the others are still checked). `--` ends the options (for a FILE that starts\n"
     "with `-`).\n"},
    {"print", cli_cmd_print, "print a graph file as canonical text (or convert to binary)",
     "usage: rlx print FILE [-o OUT] [--binary]\n"
     "\n"
     "Loads and verifies FILE (text or binary) and writes it as canonical text.\n"
     "\n"
     "options:\n"
     "  -o OUT, --output OUT   write to OUT instead of stdout (`-` = stdout)\n"
     "  --binary               write the binary format instead of text (needs -o)\n"
     "  --                     ends the options (for a FILE that starts with `-`)\n"},
    {"dot", cli_cmd_dot, "render a graph file as Graphviz dot",
     "usage: rlx dot FILE [-o OUT]\n"
     "\n"
     "Loads and verifies FILE and writes a Graphviz rendering of it (bodies of control-flow\n"
     "nodes as clusters). Render it with e.g. `rlx dot model.rlx | dot -Tsvg > model.svg`.\n"
     "\n"
     "options:\n"
     "  -o OUT, --output OUT   write to OUT instead of stdout (`-` = stdout)\n"
     "  --                     ends the options (for a FILE that starts with `-`)\n"},
    {"run", cli_cmd_run, "compile a graph and run it on .npy inputs, writing .npy outputs",
     "usage: rlx run FILE --input NAME=X.npy ... [--param NAME=W.npy ...] [--params DIR]\n"
     "               --output-dir DIR [--dim NAME=SIZE ...] [--backend B] [--seed N] [--threads N]\n"
     "\n"
     "Compiles FILE (text or binary IR, or an .onnx model, imported as `rlx import` does) for\n"
     "backend B (default cpu), sets every Param, runs it once and writes one DIR/<output>.npy per\n"
     "graph output: <output> is the output node's name, or output<i> when it has none (a sequence\n"
     "output y of an ONNX model: y.0.npy, y.1.npy, ...). Inputs and params must match the graph's\n"
     "dtype and shape exactly; symbolic dims must be bound (--dim, or for an .onnx model also\n"
     "from the --input shapes).\n"
     "\n"
     "options:\n"
     "  --input NAME=X.npy   value of the Input named NAME (every Input is required); X.pb: an\n"
     "                       ONNX TensorProto, or a SequenceProto for a sequence input\n"
     "  --param NAME=W.npy   value of the Param named NAME\n"
     "  --params DIR         DIR/NAME.npy for every Param not given with --param\n"
     "  --output-dir DIR     where the outputs go (created if missing)\n"
     "  --dim NAME=SIZE      binds a symbolic dim: the dim_param NAME of an .onnx model, or the\n"
     "                       symbol ?K of an RLX IR graph (NAME = ?K or K)\n"
     "  --backend B          registered backend to compile for (default cpu; an unknown one is a\n"
     "                       usage error that lists the registered backends)\n"
     "  --seed N             seed of RngNormal/RngUniform (default 0)\n"
     "  --threads N          CPU worker threads (default 0 = all cores)\n"},
    {"compile", cli_cmd_compile, "compile a graph and summarize (or report) how it runs",
     "usage: rlx compile FILE [--report] [--backend B] [--dim NAME=SIZE ...]\n"
     "\n"
     "Compiles FILE (text or binary IR, or an .onnx model) for backend B (default cpu) and prints\n"
     "node counts and the arena size. With --report prints the dispatch report instead: per op\n"
     "kind its node count and path (native, decomposed, host-staged, unsupported), node counts\n"
     "before and after compilation and the arena size against the sum of all tensor sizes. The\n"
     "exit code is 1 when compilation fails (the report still lists the unsupported op kinds).\n"
     "Every dim must be static: bind symbolic ones with --dim.\n"
     "\n"
     "options:\n"
     "  --report          print the dispatch report\n"
     "  --backend B       registered backend to compile for (default cpu; an unknown one is a\n"
     "                    usage error that lists the registered backends)\n"
     "  --dim NAME=SIZE   binds a symbolic dim: the dim_param NAME of an .onnx model, or the\n"
     "                    symbol ?K of an RLX IR graph (NAME = ?K or K)\n"},
    {"import", cli_cmd_import, "import an ONNX model as RLX IR (or list what it lacks)",
     "usage: rlx import MODEL.onnx [-o OUT] [--binary] [--report] [--input NAME=X.npy|X.pb ...]\n"
     "                  [--dim NAME=SIZE ...]\n"
     "\n"
     "Imports MODEL.onnx (external data is read from its folder) and writes the graph as canonical\n"
     "text, or lists every unsupported op / opset / dtype with --report (exit code 1 when there\n"
     "is any). `rlx run MODEL.onnx ...` and `rlx compile MODEL.onnx` import the same way.\n"
     "\n"
     "options:\n"
     "  -o OUT              write to OUT instead of stdout (`-` = stdout)\n"
     "  --binary            write the binary format (needs -o)\n"
     "  --report            list every gap instead of writing the graph\n"
     "  --input NAME=FILE   a value of graph input NAME: binds its symbolic dims and serves ops that\n"
     "                      need the value while importing (Reshape's shape, ...)\n"
     "  --dim NAME=SIZE     binds the symbolic dim (dim_param) NAME\n"},
    {"onnx-conformance", cli_cmd_onnx_conformance,
     "run the ONNX backend test suite, report passed / failed / unsupported", cli_onnx_conformance_usage},
    {"train", cli_cmd_train, "train a CNN/MLP on Fashion-MNIST (autodiff + Adam), report test accuracy",
     cli_train_usage},
    {"splat-render", cli_cmd_splat_render, "render a 3D Gaussian splatting scene to a PNG (GaussianSplatRender)",
     cli_splat_usage},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
  fprintf(f,
          "rlx %s: the RLX in C command-line tool\n"
          "\n"
          "usage: rlx <command> [args]\n"
          "       rlx <command> --help\n"
          "       rlx --help | --version\n"
          "\n"
          "commands:\n",
          RLX_VERSION_STRING);
  int width = 0;
  for (size_t i = 0; i < N_COMMANDS; i++) {
    int n = (int)strlen(commands[i].name);
    if (n > width) width = n;
  }
  for (size_t i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-*s  %s\n", width, commands[i].name, commands[i].summary);
}

static const cli_command *find_command(const char *name) {
  for (size_t i = 0; i < N_COMMANDS; i++)
    if (strcmp(commands[i].name, name) == 0) return &commands[i];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return CLI_USAGE;
  }
  const char *name = argv[1];
  if (cli_is_help(name)) {
    usage(stdout);
    return CLI_OK;
  }
  if (strcmp(name, "--version") == 0) {
    printf("rlx %s\n", RLX_VERSION_STRING);
    return CLI_OK;
  }
  if (strcmp(name, "help") == 0) { /* `rlx help [COMMAND]` */
    if (argc < 3) {
      usage(stdout);
      return CLI_OK;
    }
    const cli_command *c = find_command(argv[2]);
    if (c) return cli_help(c);
    fprintf(stderr, "rlx: unknown command '%s'\n\n", argv[2]);
    usage(stderr);
    return CLI_USAGE;
  }
  const cli_command *c = find_command(name);
  if (!c) {
    fprintf(stderr, "rlx: unknown command '%s'\n\n", name);
    usage(stderr);
    return CLI_USAGE;
  }
  return c->run(c, argc - 1, argv + 1);
}

/* ---- helpers of cli.h ---- */

bool cli_is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

int cli_help(const cli_command *self) {
  fputs(self->usage, stdout);
  return CLI_OK;
}

int cli_usage_error(const cli_command *self, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "rlx %s: ", self->name);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'rlx %s --help'.\n", self->name);
  return CLI_USAGE;
}

int cli_check_backend(const cli_command *self, const char *name) {
  if (rlx_backend_find(name)) return CLI_OK;
  return cli_usage_error(self, "--backend: unknown backend '%s' (registered: %s)", name, rlx_backend_names());
}

int cli_fail(const cli_command *self, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "rlx %s: ", self->name);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return CLI_FAILED;
}

bool cli_option_value(const cli_command *self, int argc, char **argv, int *i, const char **out) {
  if (*i + 1 >= argc) {
    cli_usage_error(self, "option %s needs a value", argv[*i]);
    return false;
  }
  *i += 1;
  *out = argv[*i];
  return true;
}

int cli_write_output(const cli_command *self, const char *path, const void *data, size_t len) {
  if (!path || strcmp(path, "-") == 0) {
    if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
      return cli_fail(self, "cannot write to standard output: %s", strerror(errno));
    return CLI_OK;
  }
  if (rlx_file_write(path, data, len) != RLX_OK) return cli_fail(self, "%s", rlx_last_error());
  return CLI_OK;
}

int cli_fail_rlx(const cli_command *self, const char *path) {
  const char *msg = rlx_last_error();
  size_t n = strlen(path);
  if (strncmp(msg, path, n) == 0 && msg[n] == ':') return cli_fail(self, "%s", msg);
  return cli_fail(self, "%s: %s", path, msg[0] ? msg : "failed");
}
