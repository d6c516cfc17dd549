/* SPDX-License-Identifier: MIT OR Apache-2.0 */
#define _POSIX_C_SOURCE 200809L
/* A graph lowered into an MLX program.
 *
 * Compile walks the graph once with placeholder operands (lazy zeros: nothing is evaluated) and
 * asks each node's native lowering (lower_*.c) for its MLX expression. A node whose kind the
 * document wants host-evaluated, or whose lowering declines the case, is host-evaluated: an MLX
 * custom primitive whose CPU evaluation calls our CPU reference kernel (rlx_cpu_ref_table) on the
 * operands' bytes, inside the same lazy graph. A node with neither path fails compilation with
 * the lowering's reason. Every lowered value is checked against the node's declared dtype and
 * shape.
 *
 * A run repeats the walk on the real operands: lazy mode evaluates the outputs once; eager mode
 * evaluates after every node; compiled mode traces the walk under mx::compile once and calls the
 * compiled function (not with a host-evaluated node: it then runs lazily, and says so). */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/mlx/mlx_internal.h"
#include "passes/passes.h"
#include "rlx/verify.h"

enum { MLX_PATH_NATIVE = 0, MLX_PATH_HOST = 1, MLX_PATH_COMPOSED = 2 };

static rlx_status prog_create(const rlx_graph *g, const rlx_mlx_options *opt, uint64_t rng_seed, const mlx_prog *parent,
                              unsigned depth, mlx_prog **out);

typedef struct host_call {
  const rlx_node *n;
  rlx_cpu_kernel k;
  rlx_cpu_ctx ctx;
  uint32_t n_in;
  rlx_shape in_shapes[]; /* flexible: n_in */
} host_call;

struct mlx_prog {
  const rlx_graph *g;
  rlx_mlx_mode mode;
  uint64_t rng_seed;
  uint32_t n_nodes;
  uint8_t *host;          /* [n_nodes]: MLX_PATH_* of each node */
  mlx_prog **sub;         /* [n_nodes]: composed nodes: the decomposition's graph, lowered */
  rlx_graph **sub_graph;  /* [n_nodes]: owned */
  const mlx_prog *parent; /* set for a composed node's program (Params resolve in the root) */
  unsigned depth;
  host_call **calls; /* [n_nodes] */
  rlxm_arr **leaf;   /* [n_nodes]: kept arrays of Params (bound) and Constants */
  rlx_id *inputs;    /* Input nodes in node order */
  uint32_t n_inputs;
  rlx_id *params; /* Param nodes in node order */
  uint32_t n_params;
  uint32_t native_nodes, host_nodes, composed_nodes;
  rlxm_fn *compiled;
  char note[1300];
};

/* ---- errors ---- */

static int node_label(const mlx_lower_ctx *c, char *buf, size_t cap) {
  const rlx_node *n = rlx_graph_node(c->g, c->id);
  if (!n) return snprintf(buf, cap, "node %u", c->id);
  if (n->name) return snprintf(buf, cap, "node %u (%s '%s')", c->id, rlx_op_name(n->op), n->name);
  return snprintf(buf, cap, "node %u (%s)", c->id, rlx_op_name(n->op));
}

rlx_status mlx_decline(mlx_lower_ctx *c, const char *fmt, ...) {
  char msg[512], lab[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  node_label(c, lab, sizeof lab);
  c->declined = true;
  return rlx_errorf(RLX_ERR_UNSUPPORTED, "mlx: %s: %s", lab, msg);
}

rlx_status mlx_node_error(const mlx_lower_ctx *c, const char *fmt, ...) {
  char msg[512], lab[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  node_label(c, lab, sizeof lab);
  return rlx_errorf(RLX_ERR_UNSUPPORTED, "mlx: %s: %s", lab, msg);
}

rlx_status mlx_check(const mlx_lower_ctx *c, rlxm_arr *a, rlxm_arr **out) {
  if (a) {
    *out = a;
    return RLX_OK;
  }
  char lab[128];
  node_label(c, lab, sizeof lab);
  return rlx_errorf(RLX_ERR_RUNTIME, "mlx: %s: %s", lab, rlxm_error());
}

/* ---- helpers for lowerings ---- */

const rlx_node *mlx_input_node(const mlx_lower_ctx *c, const rlx_node *n, uint32_t i) {
  return i < n->n_inputs ? rlx_graph_node(c->g, n->inputs[i]) : NULL;
}
const rlx_shape *mlx_in_shape(const mlx_lower_ctx *c, const rlx_node *n, uint32_t i) {
  const rlx_node *in = mlx_input_node(c, n, i);
  return in ? &in->shape : NULL;
}
rlxm_arr *mlx_scalar_like(mlx_lower_ctx *c, double v, rlx_dtype t) { return rlxm_scalar(c->s, v, (int)t); }
bool mlx_is_float(rlx_dtype t) { return t == RLX_F32 || t == RLX_F64 || t == RLX_F16 || t == RLX_BF16; }

mlx_lower_fn mlx_native_lowering(rlx_op op) {
  if ((unsigned)op >= RLX_OP_COUNT) return NULL;
  if (mlx_lower_elementwise[op]) return mlx_lower_elementwise[op];
  if (mlx_lower_linalg[op]) return mlx_lower_linalg[op];
  if (mlx_lower_shape[op]) return mlx_lower_shape[op];
  if (mlx_lower_nn[op]) return mlx_lower_nn[op];
  if (mlx_lower_backward[op]) return mlx_lower_backward[op];
  if (mlx_lower_random[op]) return mlx_lower_random[op];
  if (mlx_lower_signal[op]) return mlx_lower_signal[op];
  if (mlx_lower_scatter[op]) return mlx_lower_scatter[op];
  if (mlx_lower_quant[op]) return mlx_lower_quant[op];
  if (mlx_lower_custom[op]) return mlx_lower_custom[op];
  return NULL;
}

/* The document's host-evaluated kinds (seed-mlx-supported-ops.rs): linear algebra the reference
 * system sends to LAPACK, the SPD / Eigh family, Scaled*, CustomFn, the splat prepare/rasterize
 * pair, Lstm (kept intact, never unrolled) and the 3-D backward ops. */
static const bool host_kinds[RLX_OP_COUNT] = {
    [RLX_OP_Cholesky] = true,
    [RLX_OP_TriangularSolve] = true,
    [RLX_OP_Det] = true,
    [RLX_OP_LogDet] = true,
    [RLX_OP_Sort] = true,
    [RLX_OP_ArgSort] = true,
    [RLX_OP_Svd] = true,
    [RLX_OP_Qr] = true,
    [RLX_OP_Eigh] = true,
    [RLX_OP_EighBackward] = true,
    [RLX_OP_EighBatch] = true,
    [RLX_OP_EighBatchBackward] = true,
    [RLX_OP_BiMap] = true,
    [RLX_OP_ReEig] = true,
    [RLX_OP_LogEig] = true,
    [RLX_OP_SpdBatchNorm] = true,
    [RLX_OP_SpdKarcherMean] = true,
    [RLX_OP_ReEigBackward] = true,
    [RLX_OP_LogEigBackward] = true,
    [RLX_OP_SpdBatchNormBackwardX] = true,
    [RLX_OP_SpdBatchNormBackwardG] = true,
    [RLX_OP_SpdKarcherMeanWeighted] = true,
    [RLX_OP_SpdLogMap] = true,
    [RLX_OP_SpdExpMap] = true,
    [RLX_OP_SpdParallelTransport] = true,
    [RLX_OP_SpdMatrixFnBatch] = true,
    [RLX_OP_SpdLogMapBackward] = true,
    [RLX_OP_SpdExpMapBackward] = true,
    [RLX_OP_SpdParallelTransportBackward] = true,
    [RLX_OP_SpdMatrixFnBatchBackward] = true,
    [RLX_OP_ScaledMatMul] = true,
    [RLX_OP_ScaledQuantize] = true,
    [RLX_OP_ScaledQuantScale] = true,
    [RLX_OP_ScaledDequantize] = true,
    [RLX_OP_CustomFn] = true,
    [RLX_OP_GaussianSplatPrepare] = true,
    [RLX_OP_GaussianSplatRasterize] = true,
    [RLX_OP_Lstm] = true,
    [RLX_OP_Conv3dBackwardInput] = true,
    [RLX_OP_Conv3dBackwardWeight] = true,
    [RLX_OP_MaxPool3dBackward] = true,
};
bool mlx_host_kind(rlx_op op) { return (unsigned)op < RLX_OP_COUNT && host_kinds[op]; }

/* ---- host evaluation ---- */

static int host_eval(void *user, const void *const *in, uint32_t n_in, void *out) {
  host_call *hc = user;
  rlx_tensor t[64];
  if (n_in > 64 || n_in != hc->n_in) {
    rlxm_set_error("mlx: host evaluation got the wrong operand count");
    return 1;
  }
  for (uint32_t i = 0; i < n_in; i++) {
    t[i].data = (void *)in[i];
    t[i].shape = hc->in_shapes[i];
  }
  rlx_tensor o = {.data = out, .shape = hc->n->shape};
  if (hc->k(hc->n, t, n_in, &o, &hc->ctx) != RLX_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "mlx: host-evaluated %s: %s", rlx_op_name(hc->n->op), rlx_last_error());
    rlxm_set_error(msg);
    return 1;
  }
  return 0;
}

static rlx_status custom_host(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out,
                              rlx_cpu_ctx *ctx) {
  return mlx_custom_host_kernel(n, in, n_in, out, ctx);
}

static rlx_status make_host_call(mlx_prog *p, rlx_id id) {
  const rlx_node *n = rlx_graph_node(p->g, id);
  host_call *hc = calloc(1, sizeof *hc + n->n_inputs * sizeof(rlx_shape));
  if (!hc) return rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
  hc->n = n;
  hc->k = n->op == RLX_OP_Custom ? custom_host : rlx_cpu_ref_table[n->op];
  hc->ctx = (rlx_cpu_ctx){.threads = 1, .rng_seed = p->rng_seed};
  hc->n_in = n->n_inputs;
  for (uint32_t i = 0; i < n->n_inputs; i++) hc->in_shapes[i] = rlx_graph_node(p->g, n->inputs[i])->shape;
  p->calls[id] = hc;
  return RLX_OK;
}

/* Storage dtype of a value: MLX holds every rlx dtype but c128, whose bytes live in a u8 array. */
void mlx_storage_of(const rlx_shape *s, int *dtype, uint32_t *rank, int64_t *dims) {
  if (rlxm_dtype_ok(s->dtype)) {
    *dtype = s->dtype;
    *rank = s->rank;
    for (uint32_t i = 0; i < s->rank; i++) dims[i] = s->dims[i];
    return;
  }
  size_t nb = 0;
  rlx_shape_nbytes(s, &nb);
  *dtype = RLX_U8;
  *rank = 1;
  dims[0] = (int64_t)nb;
}

/* ---- the walk ---- */

typedef struct walk {
  mlx_prog *p;
  rlxm_scope *s;
  const rlx_graph *g;
  rlxm_arr **vals; /* [nodes of g] */
  bool trial;      /* compile-time: decide host vs native, check shapes */
  bool eager;
  bool profile;
} walk;

static bool same_shape(const rlxm_arr *a, const rlx_shape *s) {
  int dt;
  uint32_t rank;
  int64_t dims[RLX_MAX_RANK];
  mlx_storage_of(s, &dt, &rank, dims);
  if (rlxm_dtype(a) != dt || rlxm_rank(a) != rank) return false;
  for (uint32_t i = 0; i < rank; i++)
    if (rlxm_dim(a, i) != dims[i]) return false;
  return true;
}

static void describe(const rlxm_arr *a, char *buf, size_t cap) {
  int d = rlxm_dtype(a);
  int k = snprintf(buf, cap, "[");
  for (uint32_t i = 0; i < rlxm_rank(a) && k < (int)cap; i++)
    k += snprintf(buf + k, cap - (size_t)k, "%s%lld", i ? ", " : "", (long long)rlxm_dim(a, i));
  if (k < (int)cap) snprintf(buf + k, cap - (size_t)k, "] %s", d >= 0 ? rlx_dtype_name((rlx_dtype)d) : "?");
}

static rlx_status walk_graph(walk *w, rlxm_arr *const *inputs, rlxm_arr **outputs, uint32_t n_outputs);

/* RLX_MLX_PROFILE=1 (with eager mode): seconds per op kind, printed at exit. */
static double prof_s[RLX_OP_COUNT];
static uint64_t prof_n[RLX_OP_COUNT];
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static void prof_print(void) {
  for (int k = 0; k < RLX_OP_COUNT; k++)
    if (prof_n[k])
      fprintf(stderr, "mlx profile: %-28s %8llu evals %10.3f s\n", rlx_op_name((rlx_op)k),
              (unsigned long long)prof_n[k], prof_s[k]);
}
static bool profiling(void) {
  static int on = -1;
  if (on < 0) {
    const char *e = getenv("RLX_MLX_PROFILE");
    on = e && e[0] && strcmp(e, "0") != 0;
    if (on) atexit(prof_print);
  }
  return on;
}

/* Kinds whose MLX lowering is exact on f64 (data movement, IEEE arithmetic, BLAS dgemm, sums).
 * Measured: MLX's CPU erf / sigmoid / exp-based kernels, fast norms, softmax, attention and
 * convolutions on f64 agree with a float64 reference only to ~1e-8; those f64 nodes take the
 * composed or host-evaluated path instead. Activation and Binary check their sub-ops themselves. */
static const bool f64_exact[RLX_OP_COUNT] = {
    [RLX_OP_Reshape] = true,
    [RLX_OP_Transpose] = true,
    [RLX_OP_Narrow] = true,
    [RLX_OP_Concat] = true,
    [RLX_OP_Expand] = true,
    [RLX_OP_Gather] = true,
    [RLX_OP_Reverse] = true,
    [RLX_OP_Cast] = true,
    [RLX_OP_StopGradient] = true,
    [RLX_OP_Binary] = true,
    [RLX_OP_Compare] = true,
    [RLX_OP_Where] = true,
    [RLX_OP_Fma] = true,
    [RLX_OP_MatMul] = true,
    [RLX_OP_DotGeneral] = true,
    [RLX_OP_Reduce] = true,
    [RLX_OP_Cumsum] = true,
    [RLX_OP_CumsumBackward] = true,
    [RLX_OP_CumProd] = true,
    [RLX_OP_CumMax] = true,
    [RLX_OP_ArgMax] = true,
    [RLX_OP_ArgMin] = true,
    [RLX_OP_TopK] = true,
    [RLX_OP_Activation] = true,
    [RLX_OP_ElementwiseRegion] = true,
    [RLX_OP_BatchElementwiseRegion] = true, /* the chain's steps check f64 themselves */
    [RLX_OP_TransformRegion] = true,
    [RLX_OP_RngUniform] = true,
    [RLX_OP_RngNormal] = true,
    [RLX_OP_GatherElements] = true,
    [RLX_OP_GatherNd] = true,
    [RLX_OP_Im2Col] = true,
    [RLX_OP_Pool] = true,
    [RLX_OP_MaxPool2dBackward] = true,
    [RLX_OP_ScatterAdd] = true,
    [RLX_OP_ScatterElements] = true,
    [RLX_OP_ScatterNd] = true,
    [RLX_OP_Quantize] = true,
    [RLX_OP_Dequantize] = true,
    [RLX_OP_QMatMul] = true,
    /* IEEE-exact (round, divide, clamp, multiply); and its EMA stated error must not be bypassed */
    [RLX_OP_FakeQuantize] = true,
    /* lowerings that only decide between a stated error and the shared decomposition */
    [RLX_OP_While] = true,
    [RLX_OP_Conv2dBackwardInput] = true,
    [RLX_OP_Conv2dBackwardWeight] = true,
    [RLX_OP_Custom] = true, /* the user's lowering decides */
};
static bool f64_inexact(const rlx_graph *g, const rlx_node *n) {
  if (f64_exact[n->op]) return false;
  if (n->shape.dtype == RLX_F64) return true;
  for (uint32_t i = 0; i < n->n_inputs; i++)
    if (rlx_graph_node(g, n->inputs[i])->shape.dtype == RLX_F64) return true;
  return false;
}

/* Composed lowering: the node's shared decomposition, built into a graph of its own whose Inputs
 * are the node's operands, becomes a program lowered like any graph (its nodes may be native,
 * composed again or host-evaluated). */
static rlx_status compose_node(mlx_prog *p, rlx_id id) {
  const rlx_node *n = rlx_graph_node(p->g, id);
  rlx_decompose_fn dec = rlx_decompose_table[n->op];
  if (!dec) return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s has no shared decomposition", rlx_op_name(n->op));
  if (p->depth >= 12) return rlx_errorf(RLX_ERR_UNSUPPORTED, "decompositions nest more than 12 deep");
  rlx_graph *sub = NULL;
  char name[96];
  snprintf(name, sizeof name, "%s_%u", rlx_op_name(n->op), id);
  RLX_TRY(rlx_graph_create(NULL, name, &sub));
  rlx_id ins[64], out = RLX_NO_ID;
  rlx_status st = n->n_inputs <= 64 ? RLX_OK : rlx_errorf(RLX_ERR_UNSUPPORTED, "more than 64 operands");
  for (uint32_t i = 0; st == RLX_OK && i < n->n_inputs; i++) {
    char in_name[32];
    snprintf(in_name, sizeof in_name, "in%u", i);
    st = rlx_input(sub, in_name, rlx_graph_node(p->g, n->inputs[i])->shape, &ins[i]);
  }
  if (st == RLX_OK) st = dec(sub, p->g, n, ins, &out);
  if (st == RLX_OK) st = rlx_graph_set_outputs(sub, &out, 1);
  if (st == RLX_OK && !rlx_shape_equal(&rlx_graph_node(sub, out)->shape, &n->shape) &&
      !rlx_shape_compatible(&rlx_graph_node(sub, out)->shape, &n->shape))
    st = rlx_errorf(RLX_ERR_INTERNAL, "the decomposition of %s produced another shape", rlx_op_name(n->op));
  mlx_prog *sp = NULL;
  if (st == RLX_OK) st = prog_create(sub, NULL, p->rng_seed, p, p->depth + 1, &sp);
  if (st != RLX_OK) {
    rlx_graph_free(sub);
    return st;
  }
  p->sub[id] = sp;
  p->sub_graph[id] = sub;
  return RLX_OK;
}

static rlx_status walk_node(walk *w, rlx_id id, rlxm_arr *const *inputs, uint32_t *next_input) {
  const rlx_node *n = rlx_graph_node(w->g, id);
  mlx_prog *p = w->p;
  mlx_lower_ctx c = {.s = w->s, .g = w->g, .id = id, .rng_seed = p->rng_seed, .prog = p};
  rlxm_arr *r = NULL;
  if (n->op == RLX_OP_Input) {
    r = inputs[(*next_input)++];
  } else if (n->op == RLX_OP_Param) {
    rlxm_arr *v = p->parent ? mlx_prog_param_by_name(p, n->attrs.Param.name) : p->leaf[id];
    if (!v) return mlx_node_error(&c, "Param '%s' has no value (set it before running)", n->attrs.Param.name);
    r = rlxm_ref(w->s, v);
  } else if (n->op == RLX_OP_Constant) {
    if (p->leaf[id]) {
      r = rlxm_ref(w->s, p->leaf[id]);
    } else {
      int dt;
      uint32_t rank;
      int64_t dims[RLX_MAX_RANK];
      mlx_storage_of(&n->shape, &dt, &rank, dims);
      r = rlxm_from_host(w->s, n->attrs.Constant.data.p, dt, rank, dims);
    }
  } else {
    rlxm_arr *in[64];
    if (n->n_inputs > 64) return mlx_node_error(&c, "more than 64 operands");
    for (uint32_t i = 0; i < n->n_inputs; i++) in[i] = w->vals[n->inputs[i]];
    int path = p->host[id];
    if (path == MLX_PATH_NATIVE) {
      mlx_lower_fn f = mlx_native_lowering(n->op);
      rlx_status st = !f ? mlx_decline(&c, "no native lowering for %s", rlx_op_name(n->op))
                      : f64_inexact(w->g, n)
                          ? mlx_decline(&c, "MLX's CPU kernels compute %s on f64 in f32 precision", rlx_op_name(n->op))
                          : f(&c, n, in, &r);
      if (st != RLX_OK) {
        if (!c.declined || !w->trial) return st;
        char why[700], dec[700];
        snprintf(why, sizeof why, "%s", rlx_last_error());
        rlx_status cs = c.want_host ? RLX_ERR_UNSUPPORTED : compose_node(p, id);
        snprintf(dec, sizeof dec, "%s", rlx_last_error());
        if (c.want_host)
          path = MLX_PATH_HOST;
        else if (cs == RLX_OK)
          path = MLX_PATH_COMPOSED;
        else if (rlx_cpu_ref_table[n->op])
          path = MLX_PATH_HOST;
        else if (cs != RLX_ERR_UNSUPPORTED)
          return cs;
        else
          return rlx_errorf(RLX_ERR_UNSUPPORTED, "%s; no CPU kernel to host-evaluate it; its decomposition: %s", why,
                            dec);
        p->host[id] = (uint8_t)path;
      }
    }
    if (path == MLX_PATH_COMPOSED) {
      walk sw = {.p = p->sub[id], .s = w->s, .g = p->sub_graph[id], .eager = w->eager, .profile = w->profile};
      RLX_TRY(walk_graph(&sw, in, &r, 1));
      int dt;
      uint32_t rank;
      int64_t dims[RLX_MAX_RANK];
      mlx_storage_of(&n->shape, &dt, &rank, dims);
      r = rlxm_reshape(w->s, r, rank, dims); /* [] and [1] are the same value */
    } else if (path == MLX_PATH_HOST) {
      if (w->trial && !p->calls[id]) RLX_TRY(make_host_call(p, id));
      int dt;
      uint32_t rank;
      int64_t dims[RLX_MAX_RANK];
      mlx_storage_of(&n->shape, &dt, &rank, dims);
      r = rlxm_host(w->s, rlx_op_name(n->op), host_eval, p->calls[id], in, n->n_inputs, dt, rank, dims);
    }
  }
  RLX_TRY(mlx_check(&c, r, &r));
  if (w->trial && !same_shape(r, &n->shape)) {
    char got[160], want[160];
    describe(r, got, sizeof got);
    rlx_shape_format(&n->shape, want, sizeof want);
    return mlx_node_error(&c, "the MLX lowering produced %s but the node declares %s (internal error)", got, want);
  }
  if (w->eager) {
    double t0 = w->profile ? now_s() : 0;
    if (rlxm_eval(&r, 1) != 0) return mlx_check(&c, NULL, &r);
    if (w->profile) {
      prof_s[n->op] += now_s() - t0;
      prof_n[n->op]++;
    }
  }
  w->vals[id] = r;
  return RLX_OK;
}

static rlx_status walk_graph(walk *w, rlxm_arr *const *inputs, rlxm_arr **outputs, uint32_t n_outputs) {
  uint32_t nn = rlx_graph_node_count(w->g), next_input = 0;
  w->vals = calloc(nn ? nn : 1, sizeof *w->vals);
  if (!w->vals) return rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
  rlx_status st = RLX_OK;
  for (rlx_id id = 0; id < nn && st == RLX_OK; id++) st = walk_node(w, id, inputs, &next_input);
  if (st == RLX_OK) {
    const rlx_id *outs = rlx_graph_outputs(w->g);
    if (n_outputs != rlx_graph_output_count(w->g))
      st = rlx_errorf(RLX_ERR_INTERNAL, "mlx: graph '%s' has %u outputs, %u asked", rlx_graph_name(w->g),
                      rlx_graph_output_count(w->g), n_outputs);
    for (uint32_t i = 0; st == RLX_OK && i < n_outputs; i++) outputs[i] = w->vals[outs[i]];
  }
  free(w->vals);
  w->vals = NULL;
  return st;
}

/* ---- compiled mode ---- */

static int compiled_build(void *user, rlxm_scope *s, rlxm_arr *const *in, uint32_t n_in, rlxm_arr **out,
                          uint32_t n_out) {
  mlx_prog *p = user;
  if (n_in != p->n_inputs + p->n_params) {
    rlxm_set_error("mlx: compiled function called with the wrong operand count");
    return 1;
  }
  /* params come in after the inputs: bind them for the trace */
  rlxm_arr *saved[256];
  uint32_t np = p->n_params < 256 ? p->n_params : 256;
  for (uint32_t i = 0; i < np; i++) {
    saved[i] = p->leaf[p->params[i]];
    p->leaf[p->params[i]] = in[p->n_inputs + i];
  }
  walk w = {.p = p, .s = s, .g = p->g};
  rlx_status st = walk_graph(&w, in, out, n_out);
  for (uint32_t i = 0; i < np; i++) p->leaf[p->params[i]] = saved[i];
  if (st != RLX_OK) {
    rlxm_set_error(rlx_last_error());
    return 1;
  }
  return 0;
}

static char cache_dir[1024];

const char *rlx_mlx_compile_cache_dir(void) { return cache_dir; }

static void mkdirs(char *path) {
  for (char *q = path + 1; *q; q++) {
    if (*q != '/') continue;
    *q = 0;
    mkdir(path, 0755);
    *q = '/';
  }
  mkdir(path, 0755);
}

static void choose_cache_dir(const rlx_mlx_options *opt) {
  if (cache_dir[0]) return;
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (opt && opt->compile_cache_dir && opt->compile_cache_dir[0])
    snprintf(cache_dir, sizeof cache_dir, "%s", opt->compile_cache_dir);
  else if (xdg && xdg[0])
    snprintf(cache_dir, sizeof cache_dir, "%s/rlx/mlx", xdg);
  else
    snprintf(cache_dir, sizeof cache_dir, "%s/.cache/rlx/mlx", home && home[0] ? home : ".");
  mkdirs(cache_dir);
  rlxm_set_compile_dir(cache_dir);
}

/* ---- programs ---- */

const char *mlx_prog_node_path(const mlx_prog *p, rlx_id id) {
  if (id >= p->n_nodes) return "?";
  switch (p->host[id]) {
  case MLX_PATH_HOST: return "host";
  case MLX_PATH_COMPOSED: return p->sub[id]->host_nodes ? "composed+host" : "composed";
  default: return "native";
  }
}

/* RLX_MLX_TRACE=FILE appends "<op>\t<path>" per compiled node (docs/mlx-backend.md's table). */
static void trace_paths(const mlx_prog *p) {
  const char *f = getenv("RLX_MLX_TRACE");
  if (!f || !f[0]) return;
  FILE *o = fopen(f, "a");
  if (!o) return;
  for (rlx_id id = 0; id < p->n_nodes; id++) {
    const rlx_node *n = rlx_graph_node(p->g, id);
    if (!rlx_op_has(n->op, RLX_PROP_LEAF)) fprintf(o, "%s\t%s\n", rlx_op_name(n->op), mlx_prog_node_path(p, id));
  }
  fclose(o);
}

void rlx_mlx_options_init(rlx_mlx_options *o) {
  *o = (rlx_mlx_options){.header = {.backend = "mlx"}, .mode = RLX_MLX_LAZY, .compile_cache_dir = NULL};
}

void mlx_prog_free(mlx_prog *p) {
  if (!p) return;
  for (uint32_t i = 0; i < p->n_nodes; i++) {
    rlxm_release(p->leaf[i]);
    free(p->calls[i]);
    mlx_prog_free(p->sub[i]);
    rlx_graph_free(p->sub_graph[i]);
  }
  free(p->sub);
  free(p->sub_graph);
  rlxm_fn_free(p->compiled);
  free(p->host);
  free(p->calls);
  free(p->leaf);
  free(p->inputs);
  free(p->params);
  free(p);
}

rlx_status mlx_prog_create(const rlx_graph *g, const rlx_mlx_options *opt, uint64_t rng_seed, mlx_prog **out) {
  return prog_create(g, opt, rng_seed, NULL, 0, out);
}

static rlx_status prog_create(const rlx_graph *g, const rlx_mlx_options *opt, uint64_t rng_seed, const mlx_prog *parent,
                              unsigned depth, mlx_prog **out) {
  *out = NULL;
  mlx_prog *p = calloc(1, sizeof *p);
  if (!p) return rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
  uint32_t nn = rlx_graph_node_count(g);
  p->g = g;
  p->mode = opt ? opt->mode : RLX_MLX_LAZY;
  p->rng_seed = rng_seed;
  p->n_nodes = nn;
  p->host = calloc(nn ? nn : 1, 1);
  p->calls = calloc(nn ? nn : 1, sizeof *p->calls);
  p->leaf = calloc(nn ? nn : 1, sizeof *p->leaf);
  p->inputs = calloc(nn ? nn : 1, sizeof *p->inputs);
  p->params = calloc(nn ? nn : 1, sizeof *p->params);
  p->sub = calloc(nn ? nn : 1, sizeof *p->sub);
  p->sub_graph = calloc(nn ? nn : 1, sizeof *p->sub_graph);
  p->parent = parent;
  p->depth = depth;
  rlxm_scope *s = rlxm_scope_new();
  if (!p->host || !p->calls || !p->leaf || !p->inputs || !p->params || !p->sub || !p->sub_graph || !s) {
    rlxm_scope_free(s);
    mlx_prog_free(p);
    return rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
  }
  rlx_status st = RLX_OK;
  rlxm_arr **ph = calloc(nn ? nn : 1, sizeof *ph);
  if (!ph) st = rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
  for (rlx_id id = 0; id < nn && st == RLX_OK; id++) {
    const rlx_node *n = rlx_graph_node(g, id);
    if (!parent && !rlx_mlx_claims(n->op)) {
      st = rlx_errorf(RLX_ERR_UNSUPPORTED, "mlx: node %u is %s, which the MLX backend does not claim", id,
                      rlx_op_name(n->op));
      break;
    }
    if (!rlx_shape_is_static(&n->shape)) {
      st = rlx_errorf(RLX_ERR_SHAPE, "mlx: node %u (%s) has a symbolic shape; the MLX backend needs static shapes", id,
                      rlx_op_name(n->op));
      break;
    }
    /* the document's host-evaluated kinds run on the CPU kernel when this build has one (else
     * they take the native / composed path like any other kind) */
    if (mlx_host_kind(n->op) && rlx_cpu_ref_table[n->op]) p->host[id] = MLX_PATH_HOST;
    int dt;
    uint32_t rank;
    int64_t dims[RLX_MAX_RANK];
    mlx_storage_of(&n->shape, &dt, &rank, dims);
    if (n->op == RLX_OP_Param && parent) {
      /* resolves by name in the root program */
    } else if (n->op == RLX_OP_Input || n->op == RLX_OP_Param) {
      ph[id] = rlxm_full(s, 0, dt, rank, dims);
      if (n->op == RLX_OP_Input)
        p->inputs[p->n_inputs++] = id;
      else {
        p->params[p->n_params++] = id;
        p->leaf[id] = rlxm_keep(ph[id]); /* placeholder until bound */
      }
    } else if (n->op == RLX_OP_Constant) {
      p->leaf[id] = rlxm_keep(rlxm_from_host(s, n->attrs.Constant.data.p, dt, rank, dims));
      if (!p->leaf[id]) st = rlx_errorf(RLX_ERR_RUNTIME, "mlx: constant node %u: %s", id, rlxm_error());
    }
  }
  if (st == RLX_OK) {
    /* the trial walk: placeholder inputs in node order */
    rlxm_arr **ins = calloc(p->n_inputs ? p->n_inputs : 1, sizeof *ins);
    uint32_t no = rlx_graph_output_count(g);
    rlxm_arr **outs = calloc(no ? no : 1, sizeof *outs);
    if (!ins || !outs) st = rlx_errorf(RLX_ERR_OOM, "mlx: out of memory");
    for (uint32_t i = 0; st == RLX_OK && i < p->n_inputs; i++) ins[i] = ph[p->inputs[i]];
    if (st == RLX_OK) {
      walk w = {.p = p, .s = s, .g = g, .trial = true};
      st = walk_graph(&w, ins, outs, no);
    }
    free(ins);
    free(outs);
  }
  free(ph);
  /* params: drop the placeholders, a run needs bound values */
  for (uint32_t i = 0; i < p->n_params; i++) {
    rlxm_release(p->leaf[p->params[i]]);
    p->leaf[p->params[i]] = NULL;
  }
  rlxm_scope_free(s);
  if (st != RLX_OK) {
    mlx_prog_free(p);
    return st;
  }
  for (rlx_id id = 0; id < nn; id++) {
    const rlx_node *n = rlx_graph_node(g, id);
    if (rlx_op_has(n->op, RLX_PROP_LEAF)) continue;
    if (p->host[id] == MLX_PATH_HOST)
      p->host_nodes++;
    else if (p->host[id] == MLX_PATH_COMPOSED) {
      mlx_prog_info si;
      mlx_prog_info_get(p->sub[id], &si);
      p->composed_nodes++;
      p->host_nodes += si.host_nodes;
    } else
      p->native_nodes++;
  }
  if (parent) {
    *out = p;
    return RLX_OK;
  }
  trace_paths(p);
  if (p->mode == RLX_MLX_COMPILED) {
    if (p->host_nodes) {
      rlx_id first = 0;
      while (first < nn && p->host[first] != MLX_PATH_HOST) first++;
      snprintf(p->note, sizeof p->note,
               "compiled mode fell back to lazy: %s %s is host-evaluated (%u host-evaluated nodes)",
               first < nn ? "node" : "a node inside a composed node",
               first < nn ? rlx_op_name(rlx_graph_node(g, first)->op) : "", p->host_nodes);
      p->mode = RLX_MLX_LAZY;
    } else {
      choose_cache_dir(opt);
      p->compiled = rlxm_compile(compiled_build, p, rlx_graph_output_count(g));
      if (!p->compiled) {
        rlx_status e = rlx_errorf(RLX_ERR_RUNTIME, "mlx: mx::compile failed: %s", rlxm_error());
        mlx_prog_free(p);
        return e;
      }
      snprintf(p->note, sizeof p->note, "compiled (mx::compile; kernel cache %s)", cache_dir);
    }
  } else {
    snprintf(p->note, sizeof p->note, "%s",
             p->mode == RLX_MLX_EAGER ? "eager (one eval per node)" : "lazy (one eval per run)");
  }
  *out = p;
  return RLX_OK;
}

void mlx_prog_info_get(const mlx_prog *p, mlx_prog_info *out) {
  *out = (mlx_prog_info){.native_nodes = p->native_nodes,
                         .host_nodes = p->host_nodes,
                         .composed_nodes = p->composed_nodes,
                         .compiled = p->compiled != NULL,
                         .mode_note = p->note};
}

bool mlx_prog_node_is_host(const mlx_prog *p, rlx_id id) { return id < p->n_nodes && p->host[id] == MLX_PATH_HOST; }
bool mlx_prog_node_is_composed(const mlx_prog *p, rlx_id id) {
  return id < p->n_nodes && p->host[id] == MLX_PATH_COMPOSED;
}
uint32_t mlx_prog_input_count(const mlx_prog *p) { return p->n_inputs; }
rlx_id mlx_prog_input_node(const mlx_prog *p, uint32_t i) { return i < p->n_inputs ? p->inputs[i] : RLX_NO_ID; }

rlx_status mlx_prog_bind_param(mlx_prog *p, rlx_id node, rlxm_arr *a) {
  if (node >= p->n_nodes || rlx_graph_node(p->g, node)->op != RLX_OP_Param)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "mlx: node %u is not a Param", node);
  rlxm_arr *k = rlxm_keep(a);
  if (!k) return rlx_errorf(RLX_ERR_RUNTIME, "mlx: binding param node %u: %s", node, rlxm_error());
  rlxm_release(p->leaf[node]);
  p->leaf[node] = k;
  return RLX_OK;
}

rlxm_arr *mlx_prog_param_by_name(const mlx_prog *p, const char *name) {
  while (p->parent) p = p->parent;
  for (uint32_t i = 0; i < p->n_params; i++) {
    const rlx_node *n = rlx_graph_node(p->g, p->params[i]);
    if (name && strcmp(n->attrs.Param.name, name) == 0) return p->leaf[p->params[i]];
  }
  return NULL;
}

rlx_status mlx_prog_run(mlx_prog *p, rlxm_scope *s, rlxm_arr *const *inputs, uint32_t n_inputs, rlxm_arr **outputs,
                        uint32_t n_outputs) {
  if (n_inputs != p->n_inputs)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "mlx: %u inputs given, the graph has %u", n_inputs, p->n_inputs);
  for (uint32_t i = 0; i < p->n_params; i++)
    if (!p->leaf[p->params[i]])
      return rlx_errorf(RLX_ERR_INVALID_ARG, "mlx: Param '%s' has no value (set it before running)",
                        rlx_graph_node(p->g, p->params[i])->attrs.Param.name);
  rlx_status st;
  if (p->compiled) {
    rlxm_arr *args[512];
    if (p->n_inputs + p->n_params > 512)
      return rlx_errorf(RLX_ERR_UNSUPPORTED, "mlx: compiled mode takes at most 512 inputs + params");
    for (uint32_t i = 0; i < p->n_inputs; i++) args[i] = inputs[i];
    for (uint32_t i = 0; i < p->n_params; i++) args[p->n_inputs + i] = rlxm_ref(s, p->leaf[p->params[i]]);
    if (rlxm_fn_call(p->compiled, s, args, p->n_inputs + p->n_params, outputs, n_outputs) != 0)
      return rlx_errorf(RLX_ERR_RUNTIME, "mlx: compiled run: %s", rlxm_error());
    st = RLX_OK;
  } else {
    walk w = {.p = p,
              .s = s,
              .g = p->g,
              .eager = p->mode == RLX_MLX_EAGER,
              .profile = p->mode == RLX_MLX_EAGER && profiling()};
    st = walk_graph(&w, inputs, outputs, n_outputs);
  }
  if (st != RLX_OK) return st;
  if (rlxm_eval(outputs, n_outputs) != 0) return rlx_errorf(RLX_ERR_RUNTIME, "mlx: %s", rlxm_error());
  return RLX_OK;
}
