/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* User Custom ops on MLX (include/rlx/mlx.h): the registry of MLX kernels and the builder a
 * registered lowering uses.
 *
 * Both kernel forms live in the shared Custom-op registry (rlx/custom.h), keyed by backend name:
 * "mlx" holds a lowering (rlx_mlx_custom_lower_fn), "mlx.host" a host kernel of the CPU kernel's
 * signature. A Custom node lowers through its op's lowering when there is one; else, with a host
 * kernel, it is host-evaluated inside the lazy MLX graph (program.c's custom primitive calls
 * mlx_custom_host_kernel); else compiling fails, naming the node and the op. The CPU's kernel of
 * the op is never used by this backend. */
#include <stdio.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/mlx/mlx_internal.h"

#define MLX_HOST_KEY "mlx.host"

rlx_status rlx_mlx_register_custom_lowering(const char *name, rlx_mlx_custom_lower_fn fn, void *user) {
  if (!fn) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_mlx_register_custom_lowering: fn is NULL");
  return rlx_custom_register_kernel(name, "mlx", (rlx_custom_fn_ptr)fn, user);
}

rlx_status rlx_mlx_register_custom_host_kernel(const char *name, rlx_custom_cpu_kernel_fn fn, void *user) {
  if (!fn) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_mlx_register_custom_host_kernel: fn is NULL");
  return rlx_custom_register_kernel(name, MLX_HOST_KEY, (rlx_custom_fn_ptr)fn, user);
}

rlx_status mlx_custom_host_kernel(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out, void *ctx) {
  (void)ctx;
  const rlx_attrs_Custom *a = &n->attrs.Custom;
  rlx_custom_fn_ptr fn;
  void *user;
  if (rlx_custom_find_kernel(a->name, MLX_HOST_KEY, &fn, &user) != RLX_OK)
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "Custom op '%s': its MLX host kernel was unregistered", a->name);
  return ((rlx_custom_cpu_kernel_fn)fn)(in, n_in, out, a->attrs.p, a->attrs.n, user);
}

/* ---- the builder ---- */

struct rlx_mlx_builder {
  mlx_lower_ctx *c;
  char err[768];
};

#define ARR(x) ((rlxm_arr *)(x))
#define PUB(x) ((rlx_mlx_array *)(x))

static rlx_mlx_array *done(rlx_mlx_builder *b, rlxm_arr *r) {
  if (!r && !b->err[0]) snprintf(b->err, sizeof b->err, "%s", rlxm_error());
  return PUB(r);
}

const char *rlx_mlx_builder_error(const rlx_mlx_builder *b) { return b->err; }

rlx_shape rlx_mlx_shape_of(const rlx_mlx_array *a) {
  rlx_shape s = {0};
  if (!a) return s;
  int dt = rlxm_dtype(ARR(a));
  s.dtype = dt >= 0 ? (rlx_dtype)dt : RLX_U8;
  s.rank = rlxm_rank(ARR(a));
  if (s.rank > RLX_MAX_RANK) s.rank = RLX_MAX_RANK;
  for (uint32_t i = 0; i < s.rank; i++) s.dims[i] = rlxm_dim(ARR(a), i);
  return s;
}

rlx_mlx_array *rlx_mlx_scalar(rlx_mlx_builder *b, double value, rlx_dtype dtype) {
  return done(b, rlxm_scalar(b->c->s, value, (int)dtype));
}

/* The elementwise lowerings report through rlx_errorf (a declined case included). */
static rlx_mlx_array *from_status(rlx_mlx_builder *b, rlx_status st, rlxm_arr *r) {
  if (st == RLX_OK) return PUB(r);
  if (!b->err[0]) snprintf(b->err, sizeof b->err, "%s", rlx_last_error());
  return NULL;
}

rlx_mlx_array *rlx_mlx_activation(rlx_mlx_builder *b, rlx_act act, rlx_mlx_array *x) {
  if (!x) return done(b, NULL);
  rlxm_arr *r = NULL;
  rlx_status st = mlx_activation_of(b->c, (int)act, ARR(x), &r);
  return from_status(b, st, r);
}

rlx_mlx_array *rlx_mlx_binary(rlx_mlx_builder *b, rlx_binop op, rlx_mlx_array *x, rlx_mlx_array *y) {
  if (!x || !y) return done(b, NULL);
  rlxm_arr *r = NULL;
  rlx_status st = mlx_binary_of(b->c, (int)op, ARR(x), ARR(y), &r);
  return from_status(b, st, r);
}

rlx_mlx_array *rlx_mlx_where(rlx_mlx_builder *b, rlx_mlx_array *cond, rlx_mlx_array *x, rlx_mlx_array *y) {
  rlxm_arr *c = ARR(cond);
  if (c && rlxm_dtype(c) != RLX_BOOL) c = rlxm_binary(b->c->s, RLXM_NE, c, rlxm_scalar(b->c->s, 0, rlxm_dtype(c)));
  return done(b, rlxm_where(b->c->s, c, ARR(x), ARR(y)));
}

rlx_mlx_array *rlx_mlx_cast(rlx_mlx_builder *b, rlx_mlx_array *x, rlx_dtype to) {
  return done(b, rlxm_astype(b->c->s, ARR(x), (int)to));
}

rlx_mlx_array *rlx_mlx_matmul(rlx_mlx_builder *b, rlx_mlx_array *x, rlx_mlx_array *y) {
  return done(b, rlxm_matmul(b->c->s, ARR(x), ARR(y)));
}

rlx_mlx_array *rlx_mlx_reshape(rlx_mlx_builder *b, rlx_mlx_array *x, uint32_t rank, const int64_t *dims) {
  return done(b, rlxm_reshape(b->c->s, ARR(x), rank, dims));
}

rlx_mlx_array *rlx_mlx_transpose(rlx_mlx_builder *b, rlx_mlx_array *x, uint32_t rank, const int64_t *perm) {
  return done(b, rlxm_transpose(b->c->s, ARR(x), rank, perm));
}

rlx_mlx_array *rlx_mlx_broadcast(rlx_mlx_builder *b, rlx_mlx_array *x, uint32_t rank, const int64_t *dims) {
  return done(b, rlxm_broadcast(b->c->s, ARR(x), rank, dims));
}

rlx_mlx_array *rlx_mlx_reduce(rlx_mlx_builder *b, rlx_reduce op, rlx_mlx_array *x, uint32_t n_axes, const int64_t *axes,
                              bool keep_dims) {
  static const rlxm_reduce_op map[RLX_REDUCE_COUNT] = {[RLX_REDUCE_SUM] = RLXM_R_SUM,
                                                       [RLX_REDUCE_MEAN] = RLXM_R_MEAN,
                                                       [RLX_REDUCE_MAX] = RLXM_R_MAX,
                                                       [RLX_REDUCE_MIN] = RLXM_R_MIN,
                                                       [RLX_REDUCE_PROD] = RLXM_R_PROD};
  if ((unsigned)op >= RLX_REDUCE_COUNT) {
    snprintf(b->err, sizeof b->err, "rlx_mlx_reduce: unknown reduction %d", (int)op);
    return NULL;
  }
  return done(b, rlxm_reduce(b->c->s, map[op], ARR(x), n_axes, axes, keep_dims));
}

/* ---- the Custom node ---- */

static rlx_status lower_Custom(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Custom *a = &n->attrs.Custom;
  rlx_custom_fn_ptr fn;
  void *user;
  if (rlx_custom_find_kernel(a->name, "mlx", &fn, &user) == RLX_OK) {
    rlx_mlx_builder b = {.c = c};
    rlx_mlx_array *r = NULL;
    rlx_status st = ((rlx_mlx_custom_lower_fn)fn)(&b, (rlx_mlx_array *const *)in, n->n_inputs, &n->shape, a->attrs.p,
                                                  a->attrs.n, user, &r);
    c->declined = false; /* a builder step that declined is the user's error, not a fallback */
    if (st != RLX_OK)
      return mlx_node_error(c, "the MLX lowering of Custom op '%s' failed: %s", a->name, rlx_last_error());
    if (!r)
      return mlx_node_error(c, "the MLX lowering of Custom op '%s' returned no array: %s", a->name,
                            b.err[0] ? b.err : "(no message)");
    *out = ARR(r);
    return RLX_OK;
  }
  if (rlx_custom_find_kernel(a->name, MLX_HOST_KEY, &fn, &user) == RLX_OK) {
    rlx_status st = mlx_decline(c, "Custom op '%s' runs its MLX host kernel", a->name);
    c->want_host = true;
    return st;
  }
  if (!rlx_custom_lookup(a->name, &(rlx_custom_op_desc){0}))
    return mlx_node_error(c, "Custom op '%s' is not registered in this process (rlx_custom_register)", a->name);
  return mlx_node_error(c,
                        "Custom op '%s' has no MLX kernel: register an MLX lowering "
                        "(rlx_mlx_register_custom_lowering) or a host kernel run inside the MLX graph "
                        "(rlx_mlx_register_custom_host_kernel), include/rlx/mlx.h",
                        a->name);
}

const mlx_lower_fn mlx_lower_custom[RLX_OP_COUNT] = {
    [RLX_OP_Custom] = lower_Custom,
};
