/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Compiling a graph for a backend and running it: the session API. */
#ifndef RLX_SESSION_H
#define RLX_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A host tensor: dense row-major data of `shape` (static dims only). Borrowed unless said. */
typedef struct rlx_tensor {
  void *data;
  rlx_shape shape;
} rlx_tensor;

typedef struct rlx_named_tensor {
  const char *name;
  rlx_tensor tensor;
} rlx_named_tensor;

/* How each op kind of a compiled graph is executed. */
typedef enum rlx_dispatch_path {
  RLX_PATH_NONE = 0,    /* kind absent from the graph */
  RLX_PATH_NATIVE,      /* claimed and run by a backend kernel */
  RLX_PATH_DECOMPOSED,  /* rewritten into other ops by the shared decompositions */
  RLX_PATH_HOST_STAGED, /* claimed, run on the CPU reference kernel with copies in/out */
  RLX_PATH_UNSUPPORTED, /* no path: compilation fails */
  RLX_PATH_RUNTIME      /* claimed control flow: the runtime runs its bodies on the backend */
} rlx_dispatch_path;

typedef struct rlx_dispatch_report {
  /* Per op kind: how it is executed, and how many nodes of the input graph had it (counted after
   * pattern fusion: a decomposed LayerNorm the backend claims counts as one LayerNorm). */
  uint8_t path[RLX_OP_COUNT];
  uint32_t count[RLX_OP_COUNT];
  uint32_t nodes_before, nodes_after; /* node counts of the input graph and the compiled graph */
  size_t arena_bytes;                 /* size of the executable's arena(s) */
  size_t tensor_bytes;                /* sum of all tensor sizes without reuse */
  uint32_t steps;                     /* segments + host-staged nodes + runtime control-flow nodes */
} rlx_dispatch_report;

const char *rlx_dispatch_path_name(rlx_dispatch_path p); /* "native", ... */

typedef struct rlx_compile_options {
  bool fold_constants; /* default true */
  bool cse;            /* default true */
  bool dce;            /* default true */
  bool check_plan;     /* run the independent memory-plan checker (default true) */
  uint64_t rng_seed;   /* mixed into RngNormal/RngUniform keys (default 0) */
  /* Largest arena (bytes) one compile may plan; checked before anything is allocated, the error
   * names the largest tensor. 0 = the machine's available memory at compile time (default);
   * SIZE_MAX = no limit. */
  size_t memory_limit;
  /* The backend's own options (rlx_cpu_options of rlx/cpu.h, ...), or NULL for its defaults.
   * The struct starts with an rlx_backend_options_header naming the backend it is for. */
  const void *backend_options;
  /* Reuse the result of an earlier compile of an identical graph (same structural hash, backend
   * and options): the process-wide compile cache (docs/compile.md). Default true; the environment
   * variable RLX_COMPILE_CACHE=0 turns it off for the whole process. */
  bool compile_cache;
} rlx_compile_options;

void rlx_compile_options_init(rlx_compile_options *o);

/* The process-wide compile cache (docs/compile.md): counters since the start of the process
 * (a hit is a compile that reused a cached result, a miss one that looked and found none) and
 * the entries held now. */
typedef struct rlx_compile_cache_stats_t {
  uint64_t hits, misses;
  uint32_t entries;
} rlx_compile_cache_stats_t;
void rlx_compile_cache_stats(rlx_compile_cache_stats_t *out);
/* Drops every entry (executables that share an entry's graph keep it until they are freed). */
void rlx_compile_cache_clear(void);

typedef struct rlx_executable rlx_executable;

/* Verifies, legalizes for `backend` ("cpu"; NULL = "cpu"), simplifies, plans memory and lowers.
 * On RLX_ERR_UNSUPPORTED the message lists every node no backend path can handle. */
rlx_status rlx_compile(const rlx_graph *g, const char *backend, const rlx_compile_options *opt, rlx_executable **out);
/* Like rlx_compile, and also copies the dispatch report into *report (when not NULL) — on failure
 * too, so a caller can show which op kinds have no path (`rlx compile --report`). */
rlx_status rlx_compile_with_report(const rlx_graph *g, const char *backend, const rlx_compile_options *opt,
                                   rlx_dispatch_report *report, rlx_executable **out);
void rlx_executable_free(rlx_executable *e);

/* Sets a Param by name; the value is copied (dtype and shape must match the Param exactly). The
 * params are those of the graph given to rlx_compile, including Params inside bodies (matched by
 * name); every one must be set before the first run. */
rlx_status rlx_executable_set_param(rlx_executable *e, const char *name, const rlx_tensor *value);
/* Runs with named inputs (every Input must be given once, exact dtype and shape). On success
 * `outputs` points at n_outputs tensors owned by the executable, valid until the next run/free.
 * Unknown, duplicate, missing or mis-shaped inputs and unset params give RLX_ERR_INVALID_ARG with a
 * message naming them. */
rlx_status rlx_executable_run(rlx_executable *e, const rlx_named_tensor *inputs, uint32_t n_inputs,
                              const rlx_tensor **outputs, uint32_t *n_outputs);

const rlx_dispatch_report *rlx_executable_report(const rlx_executable *e);
/* The graph after legalization and simplification (what the backend runs). */
const rlx_graph *rlx_executable_graph(const rlx_executable *e);
/* Names and shapes of the executable's inputs / params / outputs. */
uint32_t rlx_executable_input_count(const rlx_executable *e);
const char *rlx_executable_input_name(const rlx_executable *e, uint32_t i);
const rlx_shape *rlx_executable_input_shape(const rlx_executable *e, uint32_t i);
uint32_t rlx_executable_param_count(const rlx_executable *e);
const char *rlx_executable_param_name(const rlx_executable *e, uint32_t i);
const rlx_shape *rlx_executable_param_shape(const rlx_executable *e, uint32_t i);
/* Number of graph outputs (the length of the array rlx_executable_run returns). */
uint32_t rlx_executable_output_count(const rlx_executable *e);

/* ---- device residency (docs/backends.md) ----
 * Inputs, params and outputs live in the backend's buffers between runs. rlx_executable_run is
 * set_input for each input + run_resident + read of every output. */

/* Uploads the value of Input `name` into its resident buffer (exact dtype and shape). */
rlx_status rlx_executable_set_input(rlx_executable *e, const char *name, const rlx_tensor *value);
/* Runs on the resident inputs and params (every input set at least once); outputs stay on the
 * device until read. */
rlx_status rlx_executable_run_resident(rlx_executable *e);
/* Downloads output i of the last run; *out is owned by the executable (valid until the next run
 * or free). A second read of the same run does not copy again. */
rlx_status rlx_executable_read_output(rlx_executable *e, uint32_t i, const rlx_tensor **out);
/* After every run, output `output` becomes the value of Param `param` (same dtype and shape), by
 * a device-to-device copy: how a training step keeps its parameters and optimizer state on the
 * device. Binding again replaces the binding; out of range or mismatched shapes are errors. */
rlx_status rlx_executable_bind_output_to_param(rlx_executable *e, uint32_t output, const char *param);
/* Downloads the current value of Param `name` into value->data (value->shape must match). */
rlx_status rlx_executable_get_param(rlx_executable *e, const char *name, rlx_tensor *value);

/* Copies the runtime made between host and backend memory, and inside the backend. */
typedef struct rlx_transfer_stats {
  uint64_t uploads, upload_bytes;       /* host -> backend */
  uint64_t downloads, download_bytes;   /* backend -> host */
  uint64_t device_copies, device_bytes; /* backend -> backend */
  uint64_t staged_nodes;                /* host-staged node executions */
  uint64_t param_uploads;               /* of which: parameter uploads */
  uint64_t param_downloads;             /* of which: parameter downloads */
} rlx_transfer_stats;
void rlx_executable_transfer_stats(const rlx_executable *e, rlx_transfer_stats *out);

/* Writes a human-readable dispatch + memory report. */
rlx_status rlx_dispatch_report_format(const rlx_dispatch_report *r, const rlx_allocator *al, char **out, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
