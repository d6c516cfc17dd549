/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* CPU reference kernels: CumsumBackward, GatherBackward, ScanBackward and ScanBackwardXs
 * (spec ir-special §8 and §3).
 *
 *   CumsumBackward [dy] -> dx: the reverse (suffix) sum along axis: dx_i = sum_{j >= i} dy_j, or
 *       with exclusive sum_{j > i} dy_j. Floats sum in double, integers exactly in int64
 *       (saturating). A scalar is a sequence of one element.
 *   GatherBackward [dy, indices] -> table (declared shape): a zero table into which every slice
 *       of dy is added at its index along axis (duplicates accumulate). Indices follow Gather: any
 *       integer dtype or integral floats, no negative wrap; out of range is RLX_ERR_RUNTIME.
 *   ScanBackward / ScanBackwardXs [init, trajectory, upstream, xs...]: the reverse sweep of a Scan
 *       (carry_t = body(carry_{t-1}, xs[t]...), carry_{-1} = init). body_vjp takes
 *       (carry_{t-1}, xs rows at t..., d_output = dcarry_t) and returns (dcarry_{t-1}, dxs rows...).
 *       Trajectory row j holds carry_{t_j}, t_j = floor(j * length / rows) (rows = length, or
 *       num_checkpoints when 0 < num_checkpoints < length); carries between checkpoints are
 *       recomputed with forward_body (once per segment). dcarry starts as upstream (the gradient of
 *       the final carry) or, with save_trajectory, as 0 with upstream row j added when the sweep
 *       reaches step t_j. ScanBackward returns dcarry_{-1} (= dinit); ScanBackwardXs stacks the
 *       gradients of xs[xs_idx] over t. Values cross dtypes with Cast semantics where a body's
 *       declared dtype differs from the operand's. */
#include <math.h>

#include "backends/cpu/ref/body_util.h"

/* ======================================================================================
 * CumsumBackward
 * ====================================================================================== */

RLX_CPU_KERNEL(CumsumBackward) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 1, 1, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  if (!rlx_dtype_is_float(t) && !rlx_dtype_is_int(t))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "operand 0 (dy) has dtype %s; CumsumBackward needs a real dtype",
                    rlx_dtype_name(t));
  const rlx_shape *x = &in[0].shape;
  RLX_TRY(ru_need_out_dims(n, out, x->rank, x->dims));
  size_t outer = 1, len = 1, inner = 1;
  if (x->rank > 0) {
    uint32_t ax;
    RLX_TRY(ru_axis(n, "axis", n->attrs.CumsumBackward.axis, x->rank, &ax));
    ru_split_axis(x, ax, &outer, &len, &inner);
  }
  bool exclusive = n->attrs.CumsumBackward.exclusive, ints = rlx_dtype_is_int(t);
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      double acc = 0.0;
      int64_t iacc = 0;
      for (size_t k = len; k-- > 0;) {
        size_t at = (o * len + k) * inner + i;
        if (exclusive) { /* the sum of the elements after k */
          if (ints) ru_store_i64(out->data, t, at, iacc);
          else ru_store(out->data, t, at, acc);
        }
        if (ints) iacc = rb_sat_add(iacc, rlx_elem_get_i64(in[0].data, t, at));
        else acc += rlx_elem_get(in[0].data, t, at);
        if (!exclusive) {
          if (ints) ru_store_i64(out->data, t, at, iacc);
          else ru_store(out->data, t, at, acc);
        }
      }
    }
  return RLX_OK;
}

/* ======================================================================================
 * GatherBackward
 * ====================================================================================== */

RLX_CPU_KERNEL(GatherBackward) {
  (void)ctx;
  RLX_TRY(ru_prologue(n, in, n_in, 2, 2, out));
  rlx_dtype t = ru_dt(out);
  RLX_TRY(ru_need_dtype(n, in, 0, t));
  if (!rlx_dtype_is_float(t) && !rlx_dtype_is_int(t))
    return ru_error(RLX_ERR_UNSUPPORTED, n, "operand 0 (dy) has dtype %s; GatherBackward needs a real dtype",
                    rlx_dtype_name(t));
  RLX_TRY(rb_need_index(n, in, 1, "indices"));
  const rlx_shape *tab = &out->shape, *dy = &in[0].shape, *idx = &in[1].shape;
  if (tab->rank == 0) return ru_error(RLX_ERR_INVALID_ARG, n, "the output (table) is a scalar; it needs rank >= 1");
  uint32_t ax;
  RLX_TRY(ru_axis(n, "axis", n->attrs.GatherBackward.axis, tab->rank, &ax));
  /* dy must be table[..ax] ++ indices ++ table[ax+1..]. */
  bool ok = dy->rank == tab->rank - 1 + idx->rank;
  for (uint32_t k = 0; ok && k < dy->rank; k++) {
    int64_t want = k < ax ? tab->dims[k] : k < ax + idx->rank ? idx->dims[k - ax] : tab->dims[k - idx->rank + 1];
    ok = dy->dims[k] == want;
  }
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (dy) has shape %s; gathering the table %s along axis %u with "
                    "indices %s gives a different shape",
                    ru_fmt(dy), ru_fmt(tab), ax, ru_fmt(idx));
  size_t outer, L, inner, nidx = rlx_tensor_numel(&in[1]);
  ru_split_axis(tab, ax, &outer, &L, &inner);
  int64_t *pos;
  RLX_TRY(rb_alloc(n, nidx, sizeof *pos, &pos));
  rlx_status st = RLX_OK;
  for (size_t j = 0; j < nidx && !st; j++) st = rb_read_index(n, in, 1, j, (int64_t)L, false, "the table axis", &pos[j]);
  bool ints = rlx_dtype_is_int(t);
  size_t total = rlx_tensor_numel(out);
  double *acc = NULL;
  int64_t *iacc = NULL;
  if (!st) st = ints ? rb_calloc(n, total, sizeof *iacc, &iacc) : rb_calloc(n, total, sizeof *acc, &acc);
  for (size_t o = 0; o < outer && !st; o++)
    for (size_t j = 0; j < nidx; j++)
      for (size_t i = 0; i < inner; i++) {
        size_t src = (o * nidx + j) * inner + i, dst = (o * L + (size_t)pos[j]) * inner + i;
        if (ints) iacc[dst] = rb_sat_add(iacc[dst], rlx_elem_get_i64(in[0].data, t, src));
        else acc[dst] += rlx_elem_get(in[0].data, t, src);
      }
  if (!st) {
    if (ints)
      for (size_t i = 0; i < total; i++) ru_store_i64(out->data, t, i, iacc[i]);
    else
      rb_store_all(out, acc);
  }
  free(pos);
  free(acc);
  free(iacc);
  return st;
}

/* ======================================================================================
 * ScanBackward / ScanBackwardXs
 * ====================================================================================== */

/* The dtype of the k-th Input (node order) of body; false when it has fewer Inputs. */
static bool body_input_dtype(const rlx_graph *body, uint32_t k, rlx_dtype *t) {
  uint32_t seen = 0;
  for (uint32_t i = 0; i < rlx_graph_node_count(body); i++) {
    const rlx_node *nd = rlx_graph_node(body, i);
    if (nd->op != RLX_OP_Input) continue;
    if (seen++ == k) {
      *t = (rlx_dtype)nd->shape.dtype;
      return true;
    }
  }
  return false;
}

/* Copies `count` elements from src (dtype st) to dst (dtype dt), converting when they differ. */
static void convert(void *dst, rlx_dtype dt, const void *src, rlx_dtype st, size_t count) {
  if (dt == st) {
    if (count) memcpy(dst, src, count * rlx_dtype_size(dt));
  } else {
    rlx_elem_convert(src, st, dst, dt, count);
  }
}

/* State of one sweep. */
typedef struct sweep {
  const rlx_node *n;
  rlx_cpu_ctx *ctx;
  const rlx_tensor *in;
  const rlx_graph *vjp, *fwd;
  size_t L, rows, nx, carry_n, carry_bytes;
  int64_t *saved_step; /* saved_step[j] = t_j */
  /* Recomputed carries carry_base .. carry_{base + m - 1} (checkpointed sweeps). */
  int64_t cache_base;
  size_t cache_m;
  char *cache;
  body_outs fwd_out;
  rlx_tensor *args; /* forward_body arguments */
} sweep;

/* The xs rows at step t as tensors into args[first..]. */
static void xs_rows(const sweep *w, size_t t, rlx_tensor *args) {
  for (size_t k = 0; k < w->nx; k++) {
    const rlx_tensor *x = &w->in[3 + k];
    rlx_tensor *r = &args[k];
    size_t row_bytes = w->L ? rlx_tensor_numel(x) / w->L * ru_esz(x) : 0;
    r->shape = x->shape;
    r->shape.rank--;
    for (uint32_t d = 0; d < r->shape.rank; d++) r->shape.dims[d] = x->shape.dims[d + 1];
    r->data = (char *)x->data + t * row_bytes;
  }
}

static void copy_bytes(void *dst, const void *src, size_t bytes) {
  if (bytes) memcpy(dst, src, bytes);
}

/* Writes carry_{t-1} (init for t = 0) into dst (carry_bytes bytes). */
static rlx_status carry_before(sweep *w, size_t t, void *dst) {
  const rlx_tensor *init = &w->in[0], *traj = &w->in[1];
  if (t == 0) {
    copy_bytes(dst, init->data, w->carry_bytes);
    return RLX_OK;
  }
  int64_t want = (int64_t)t - 1, base = -1;
  size_t base_row = 0;
  for (size_t j = 0; j < w->rows; j++)
    if (w->saved_step[j] <= want && w->saved_step[j] > base) base = w->saved_step[j], base_row = j;
  if (base == want) {
    copy_bytes(dst, (const char *)traj->data + base_row * w->carry_bytes, w->carry_bytes);
    return RLX_OK;
  }
  if (!w->fwd)
    return ru_error(RLX_ERR_INVALID_ARG, w->n, "attribute forward_body: needed to recompute the carry after step %lld "
                    "between checkpoints",
                    (long long)want);
  if (w->cache_base != base || (size_t)(want - base) >= w->cache_m) {
    /* Recompute carry_base .. carry_want once for this segment. */
    size_t m = (size_t)(want - base) + 1;
    free(w->cache);
    w->cache = NULL;
    w->cache_m = 0;
    RLX_TRY(rb_alloc(w->n, m, w->carry_bytes ? w->carry_bytes : 1, &w->cache));
    if (base < 0) copy_bytes(w->cache, init->data, w->carry_bytes);
    else copy_bytes(w->cache, (const char *)traj->data + base_row * w->carry_bytes, w->carry_bytes);
    for (size_t i = 1; i < m; i++) {
      w->args[0].shape = init->shape;
      w->args[0].data = w->cache + (i - 1) * w->carry_bytes;
      xs_rows(w, (size_t)base + i, w->args + 1);
      RLX_TRY(rlx_ref_body_run(w->n, w->ctx, w->fwd, "forward_body", w->args, (uint32_t)w->nx + 1, &w->fwd_out));
      if (!rlx_shape_equal(&w->fwd_out.t[0].shape, &init->shape))
        return ru_error(RLX_ERR_INVALID_ARG, w->n, "attribute forward_body: output 0 is %s but the carry is %s",
                        ru_fmt(&w->fwd_out.t[0].shape), ru_fmt(&init->shape));
      copy_bytes(w->cache + i * w->carry_bytes, w->fwd_out.t[0].data, w->carry_bytes);
    }
    w->cache_base = base;
    w->cache_m = m;
  }
  copy_bytes(dst, w->cache + (size_t)(want - base) * w->carry_bytes, w->carry_bytes);
  return RLX_OK;
}

/* The sweep; xs_idx < 0 computes dinit, else the stacked gradient of xs[xs_idx]. */
static rlx_status scan_backward(const rlx_node *n, const rlx_tensor *in, uint32_t n_in, rlx_tensor *out,
                                rlx_cpu_ctx *ctx, const rlx_graph *vjp, const rlx_graph *fwd, int64_t length,
                                bool save_traj, int64_t num_xs, int64_t num_ckpt, int64_t xs_idx) {
  if (length < 0 || num_xs < 0 || num_ckpt < 0 || num_ckpt > length || (uint64_t)num_xs + 3 != n_in)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attributes length = %lld, num_xs = %lld, num_checkpoints = %lld do not fit "
                    "%u operands (3 + num_xs)",
                    (long long)length, (long long)num_xs, (long long)num_ckpt, n_in);
  RLX_TRY(ru_prologue(n, in, n_in, n_in, n_in, out));
  const rlx_tensor *init = &in[0], *traj = &in[1], *up = &in[2];
  size_t L = (size_t)length, rows = num_ckpt > 0 && num_ckpt < length ? (size_t)num_ckpt : L;
  size_t carry_n = rlx_tensor_numel(init), carry_bytes = carry_n * ru_esz(init);
  if (init->shape.rank >= RLX_MAX_RANK)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 0 (init) %s: a trajectory would exceed rank %d", ru_fmt(&init->shape),
                    RLX_MAX_RANK);
  bool ok = ru_dt(traj) == ru_dt(init) && traj->shape.rank == init->shape.rank + 1 && (size_t)traj->shape.dims[0] == rows;
  for (uint32_t k = 0; ok && k < init->shape.rank; k++) ok = traj->shape.dims[k + 1] == init->shape.dims[k];
  if (!ok)
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 1 (trajectory) has shape %s; expected [%zu, ...init %s]",
                    ru_fmt(&traj->shape), rows, ru_fmt(&init->shape));
  if (rlx_tensor_numel(up) != (save_traj ? rows * carry_n : carry_n) || ru_is_complex(ru_dt(up)))
    return ru_error(RLX_ERR_INVALID_ARG, n, "operand 2 (upstream) has shape %s; expected the %s", ru_fmt(&up->shape),
                    save_traj ? "trajectory's shape" : "carry's shape");
  for (uint32_t k = 0; k < num_xs; k++) {
    const rlx_shape *x = &in[3 + k].shape;
    if (x->rank < 1 || (size_t)x->dims[0] != L)
      return ru_error(RLX_ERR_INVALID_ARG, n, "operand %u (xs %u) has shape %s; its leading axis must be length = %zu",
                      3 + k, k, ru_fmt(x), L);
  }
  if (xs_idx >= 0) {
    if (xs_idx >= num_xs)
      return ru_error(RLX_ERR_INVALID_ARG, n, "attribute xs_idx is %lld; it must be < num_xs = %lld", (long long)xs_idx,
                      (long long)num_xs);
    RLX_TRY(ru_need_out_dims(n, out, in[3 + xs_idx].shape.rank, in[3 + xs_idx].shape.dims));
  } else {
    RLX_TRY(ru_need_out_dims(n, out, init->shape.rank, init->shape.dims));
  }
  rlx_dtype dt; /* the d_output Input's dtype */
  if (!vjp || !body_input_dtype(vjp, (uint32_t)num_xs + 1, &dt))
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute body_vjp: missing, or fewer than num_xs + 2 = %lld Inputs",
                    (long long)num_xs + 2);
  sweep w = {n, ctx, in, vjp, fwd, L, rows, (size_t)num_xs, carry_n, carry_bytes, NULL, -2, 0, NULL, {NULL, 0}, NULL};
  body_outs vo = {NULL, 0};
  rlx_tensor *args = NULL;
  int64_t *row_at = NULL; /* row_at[t] = j with t_j = t, or -1 */
  void *dcarry = NULL;
  rlx_status s = rlx_ref_body_outs_alloc(n, vjp, "body_vjp", (uint32_t)num_xs + 1, &vo);
  if (!s && fwd) s = rlx_ref_body_outs_alloc(n, fwd, "forward_body", 1, &w.fwd_out);
  if (!s) s = rb_calloc(n, (size_t)num_xs + 2, sizeof *args, &args);
  if (!s) s = rb_calloc(n, (size_t)num_xs + 1, sizeof *w.args, &w.args);
  if (!s) s = rb_alloc(n, rows ? rows : 1, sizeof *w.saved_step, &w.saved_step);
  if (!s) s = rb_alloc(n, L ? L : 1, sizeof *row_at, &row_at);
  if (!s) s = rb_alloc(n, carry_bytes ? carry_bytes : 1, 1, &args[0].data);
  if (!s) s = rb_alloc(n, carry_n ? carry_n : 1, rlx_dtype_size(dt), &dcarry);
  for (uint32_t i = 0; !s && i < vo.n; i++)
    if (rlx_tensor_numel(&vo.t[i]) != (i == 0 ? carry_n : rlx_tensor_numel(&in[3 + i - 1]) / (L ? L : 1)))
      s = ru_error(RLX_ERR_INVALID_ARG, n, "attribute body_vjp: output %u has shape %s, which does not match %s", i,
                   ru_fmt(&vo.t[i].shape), i == 0 ? "the carry" : "one row of its xs");
  if (!s) {
    for (size_t t = 0; t < L; t++) row_at[t] = -1;
    for (size_t j = 0; j < rows; j++) {
      w.saved_step[j] = (int64_t)((unsigned __int128)j * L / rows);
      row_at[w.saved_step[j]] = (int64_t)j;
    }
    args[0].shape = init->shape;
    args[num_xs + 1].shape = init->shape;
    args[num_xs + 1].shape.dtype = (uint8_t)dt;
    args[num_xs + 1].data = dcarry;
    if (save_traj) memset(dcarry, 0, carry_n * rlx_dtype_size(dt)); /* all-zero bytes are 0 in every real dtype */
    else convert(dcarry, dt, up->data, ru_dt(up), carry_n);
  }
  for (size_t t = L; !s && t-- > 0;) {
    if (save_traj && row_at[t] >= 0)
      for (size_t i = 0; i < carry_n; i++)
        rlx_elem_set(dcarry, dt, i,
                     rlx_elem_get(dcarry, dt, i) + rlx_elem_get(up->data, ru_dt(up), (size_t)row_at[t] * carry_n + i));
    s = carry_before(&w, t, args[0].data);
    if (s) break;
    xs_rows(&w, t, args + 1);
    s = rlx_ref_body_run(n, ctx, vjp, "body_vjp", args, (uint32_t)num_xs + 2, &vo);
    if (s) break;
    if (xs_idx >= 0) {
      const rlx_tensor *g = &vo.t[1 + xs_idx];
      size_t row_n = rlx_tensor_numel(g);
      convert((char *)out->data + t * row_n * ru_esz(out), ru_dt(out), g->data, ru_dt(g), row_n);
    }
    convert(dcarry, dt, vo.t[0].data, ru_dt(&vo.t[0]), carry_n);
  }
  if (!s && xs_idx < 0) convert(out->data, ru_dt(out), dcarry, dt, carry_n);
  if (args) free(args[0].data);
  free(args);
  free(w.args);
  free(w.saved_step);
  free(w.cache);
  free(row_at);
  free(dcarry);
  rlx_ref_body_outs_free(&vo);
  rlx_ref_body_outs_free(&w.fwd_out);
  return s;
}

RLX_CPU_KERNEL(ScanBackward) {
  const rlx_attrs_ScanBackward *a = &n->attrs.ScanBackward;
  return scan_backward(n, in, n_in, out, ctx, a->body_vjp, a->forward_body, a->length, a->save_trajectory, a->num_xs,
                       a->num_checkpoints, -1);
}

RLX_CPU_KERNEL(ScanBackwardXs) {
  const rlx_attrs_ScanBackwardXs *a = &n->attrs.ScanBackwardXs;
  if (a->xs_idx < 0)
    return ru_error(RLX_ERR_INVALID_ARG, n, "attribute xs_idx is %lld; it must be >= 0", (long long)a->xs_idx);
  return scan_backward(n, in, n_in, out, ctx, a->body_vjp, a->forward_body, a->length, a->save_trajectory, a->num_xs,
                       a->num_checkpoints, a->xs_idx);
}
