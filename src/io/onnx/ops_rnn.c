/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX RNN, GRU and LSTM, unrolled over the (static) sequence: the input projection of every
 * step is one MatMul, each step adds the recurrent MatMul and the gate arithmetic of the ONNX
 * operator definitions (activations, clip, peepholes, linear_before_reset, bidirectional,
 * layout, sequence_lens as a per-batch mask for forward directions). */
#include <stdio.h>
#include <string.h>

#include "io/onnx/onnx_internal.h"

typedef enum cell { CELL_RNN, CELL_GRU, CELL_LSTM } cell;

typedef struct act_fn {
  char name[24];
  float alpha, beta;
} act_fn;

static rlx_status apply_act(oi_node *c, const act_fn *f, rlx_id x, rlx_id *out) {
  const char *n = f->name;
  rlx_id t, u;
  if (strcmp(n, "Sigmoid") == 0) return oi_unary(c, RLX_ACT_SIGMOID, x, out);
  if (strcmp(n, "Tanh") == 0) return oi_unary(c, RLX_ACT_TANH, x, out);
  if (strcmp(n, "Relu") == 0) return oi_unary(c, RLX_ACT_RELU, x, out);
  if (strcmp(n, "Softsign") == 0) return oi_unary(c, RLX_ACT_SOFTSIGN, x, out);
  if (strcmp(n, "Softplus") == 0) return oi_unary(c, RLX_ACT_SOFTPLUS, x, out);
  if (strcmp(n, "Affine") == 0) {
    RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, x, f->alpha, &t));
    return oi_bin_s(c, RLX_BINOP_ADD, t, f->beta, out);
  }
  if (strcmp(n, "ScaledTanh") == 0) {
    RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, x, f->beta, &t));
    RLX_TRY(oi_unary(c, RLX_ACT_TANH, t, &t));
    return oi_bin_s(c, RLX_BINOP_MUL, t, f->alpha, out);
  }
  if (strcmp(n, "HardSigmoid") == 0) {
    RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, x, f->alpha, &t));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_ADD, t, f->beta, &t));
    rlx_attrs_Clamp ca = {.min = 0.0f, .max = 1.0f};
    return oi_emit(c, RLX_OP_Clamp, &t, 1, &ca, out);
  }
  if (strcmp(n, "LeakyRelu") == 0 || strcmp(n, "ThresholdedRelu") == 0 || strcmp(n, "Elu") == 0) {
    rlx_id zero, cond, alt;
    rlx_dtype dt = (rlx_dtype)oi_shape(c, x)->dtype;
    RLX_TRY(oi_scalar(c, dt, n[0] == 'T' ? f->alpha : 0.0, &zero));
    if (n[0] == 'L') {
      RLX_TRY(oi_cmp(c, RLX_CMP_LT, x, zero, &cond));
      RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, x, f->alpha, &alt));
      return oi_where(c, cond, alt, x, out);
    }
    if (n[0] == 'T') {
      RLX_TRY(oi_cmp(c, RLX_CMP_GT, x, zero, &cond));
      RLX_TRY(oi_scalar(c, dt, 0, &u));
      return oi_where(c, cond, x, u, out);
    }
    RLX_TRY(oi_cmp(c, RLX_CMP_GT, x, zero, &cond));
    RLX_TRY(oi_unary(c, RLX_ACT_EXP, x, &alt));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_SUB, alt, 1.0, &alt));
    RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, alt, f->alpha, &alt));
    return oi_where(c, cond, x, alt, out);
  }
  return oi_unsupported(c, "activation \"%s\"", n);
}

/* Default alpha / beta of the activations that take them (ONNX operator docs). */
static void act_defaults(act_fn *f) {
  if (strcmp(f->name, "LeakyRelu") == 0)
    f->alpha = 0.01f;
  else if (strcmp(f->name, "ThresholdedRelu") == 0 || strcmp(f->name, "Elu") == 0)
    f->alpha = 1.0f;
  else if (strcmp(f->name, "HardSigmoid") == 0)
    f->alpha = 0.2f, f->beta = 0.5f;
  else if (strcmp(f->name, "ScaledTanh") == 0 || strcmp(f->name, "Affine") == 0)
    f->alpha = 1.0f, f->beta = 0.0f;
}

static bool takes_alpha(const char *n) {
  return strcmp(n, "LeakyRelu") == 0 || strcmp(n, "ThresholdedRelu") == 0 || strcmp(n, "Elu") == 0 ||
         strcmp(n, "HardSigmoid") == 0 || strcmp(n, "ScaledTanh") == 0 || strcmp(n, "Affine") == 0;
}
static bool takes_beta(const char *n) {
  return strcmp(n, "HardSigmoid") == 0 || strcmp(n, "ScaledTanh") == 0 || strcmp(n, "Affine") == 0;
}

/* Reads `activations` (per direction: 1 for RNN, 2 for GRU, 3 for LSTM). */
static rlx_status read_acts(oi_node *c, uint32_t per_dir, uint32_t dirs, act_fn *fns) {
  static const char *const defs[3] = {"Sigmoid", "Tanh", "Tanh"};
  const Onnx__AttributeProto *a = oi_attr(c, "activations");
  const float *al = NULL, *be = NULL;
  size_t nal = 0, nbe = 0, ial = 0, ibe = 0;
  RLX_TRY(oi_attr_floats(c, "activation_alpha", &al, &nal, NULL));
  RLX_TRY(oi_attr_floats(c, "activation_beta", &be, &nbe, NULL));
  if (a && (oi_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS || a->n_strings != per_dir * dirs))
    return oi_bad(c, "attribute activations must list %u activation names", per_dir * dirs);
  for (uint32_t i = 0; i < per_dir * dirs; i++) {
    act_fn *f = &fns[i];
    memset(f, 0, sizeof *f);
    if (a) {
      const ProtobufCBinaryData *s = &a->strings[i];
      if (s->len == 0 || s->len >= sizeof f->name || memchr(s->data, 0, s->len))
        return oi_bad(c, "attribute activations[%u] is not a name", i);
      memcpy(f->name, s->data, s->len);
    } else {
      snprintf(f->name, sizeof f->name, "%s",
               per_dir == 1 ? "Tanh" : defs[i % per_dir == 0 ? 0 : (i % per_dir == 1 ? 1 : 2)]);
    }
    act_defaults(f);
    if (takes_alpha(f->name) && ial < nal) f->alpha = al[ial++];
    if (takes_beta(f->name) && ibe < nbe) f->beta = be[ibe++];
  }
  return RLX_OK;
}

/* [D, rows, cols] tensor -> the transposed [cols, rows] matrix of direction d. */
static rlx_status dir_matrix_t(oi_node *c, rlx_id w, int64_t d, int64_t rows, int64_t cols, rlx_id *out) {
  rlx_id m;
  int64_t d2[2] = {rows, cols};
  static const int64_t swap[2] = {1, 0};
  RLX_TRY(oi_narrow(c, w, 0, d, 1, &m));
  RLX_TRY(oi_reshape(c, m, 2, d2, &m));
  return oi_transpose(c, m, swap, out);
}

/* Optional input k must have the given static dims (an exporter that drops an LSTM's projection
 * writes a hidden size that does not match its initial states, say). */
static rlx_status check_dims(oi_node *c, uint32_t k, const char *what, uint32_t rank, const int64_t *want) {
  if (!oi_has(c, k)) return RLX_OK;
  const rlx_shape *s = oi_in_shape(c, k);
  bool ok = s->rank == rank;
  for (uint32_t i = 0; ok && i < rank; i++) ok = s->dims[i] == want[i];
  if (ok) return RLX_OK;
  char buf[96];
  size_t n = 0;
  for (uint32_t i = 0; i < rank && n < sizeof buf; i++)
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%lld", i ? ", " : "", (long long)want[i]);
  return oi_bad(c, "input %s %s must be [%s] (hidden_size %lld)", what, rlx_fmt_shape(s), buf,
                (long long)want[rank - 1]);
}

static rlx_status gate(oi_node *c, rlx_id g, int64_t k, int64_t H, rlx_id *out) {
  return oi_narrow(c, g, 1, k * H, H, out);
}

static rlx_status clip(oi_node *c, rlx_id x, float cl, rlx_id *out) {
  if (!(cl > 0)) {
    *out = x;
    return RLX_OK;
  }
  rlx_attrs_Clamp ca = {.min = -cl, .max = cl};
  return oi_emit(c, RLX_OP_Clamp, &x, 1, &ca, out);
}

static rlx_status map_rnn(oi_node *c) {
  const char *op = c->np->op_type;
  cell kind = strcmp(op, "RNN") == 0 ? CELL_RNN : strcmp(op, "GRU") == 0 ? CELL_GRU : CELL_LSTM;
  uint32_t G = kind == CELL_RNN   ? 1
               : kind == CELL_GRU ? 3
                                  : 4,
           per_dir = kind == CELL_RNN   ? 1
                     : kind == CELL_GRU ? 2
                                        : 3;
  RLX_TRY(oi_need(c, 0, "X"));
  RLX_TRY(oi_need(c, 1, "W"));
  RLX_TRY(oi_need(c, 2, "R"));
  int64_t H, layout = 0, lbr = 0, input_forget = 0;
  float cl = 0;
  const char *dir;
  RLX_TRY(oi_attr_i(c, "hidden_size", 0, &H));
  RLX_TRY(oi_attr_s(c, "direction", "forward", &dir));
  RLX_TRY(oi_attr_f(c, "clip", 0, &cl));
  if (c->opset >= 14) RLX_TRY(oi_attr_i(c, "layout", 0, &layout));
  if (kind == CELL_GRU) RLX_TRY(oi_attr_i(c, "linear_before_reset", 0, &lbr));
  if (kind == CELL_LSTM) RLX_TRY(oi_attr_i(c, "input_forget", 0, &input_forget));
  if (input_forget) return oi_unsupported(c, "input_forget = 1");
  uint32_t D = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
  bool reverse_only = strcmp(dir, "reverse") == 0;
  if (D == 1 && !reverse_only && strcmp(dir, "forward") != 0) return oi_bad(c, "attribute direction is \"%s\"", dir);
  act_fn fns[6];
  RLX_TRY(read_acts(c, per_dir, D, fns));
  rlx_id x = c->in[0];
  const rlx_shape xs0 = *oi_shape(c, x);
  if (xs0.rank != 3) return oi_bad(c, "input X must be 3-D, got %s", rlx_fmt_shape(&xs0));
  RLX_TRY(oi_need_static(c, &xs0, "input X"));
  static const int64_t swap01[3] = {1, 0, 2};
  if (layout) RLX_TRY(oi_transpose(c, x, swap01, &x));
  const rlx_shape xs = *oi_shape(c, x);
  int64_t S = xs.dims[0], B = xs.dims[1], I = xs.dims[2];
  rlx_dtype t = (rlx_dtype)xs.dtype;
  if (!rlx_dtype_is_float(t)) return oi_bad(c, "input X must be floating-point");
  const rlx_shape ws = *oi_in_shape(c, 1), rs = *oi_in_shape(c, 2);
  if (H < 1 || ws.rank != 3 || ws.dims[0] != D || ws.dims[1] != G * H || ws.dims[2] != I)
    return oi_bad(c, "input W %s must be [%u, %lld, %lld]", rlx_fmt_shape(&ws), D, (long long)(G * H), (long long)I);
  if (rs.rank != 3 || rs.dims[0] != D || rs.dims[1] != G * H || rs.dims[2] != H)
    return oi_bad(c, "input R %s must be [%u, %lld, %lld]", rlx_fmt_shape(&rs), D, (long long)(G * H), (long long)H);
  if (S < 1 || S > 100000) return oi_unsupported(c, "a sequence of %lld steps", (long long)S);
  int64_t b_dims[2] = {D, 2 * G * H}, p_dims[2] = {D, 3 * H};
  int64_t st_dims[3] = {layout ? B : D, layout ? D : B, H};
  RLX_TRY(check_dims(c, 3, "B", 2, b_dims));
  RLX_TRY(check_dims(c, 5, "initial_h", 3, st_dims));
  if (kind == CELL_LSTM) {
    RLX_TRY(check_dims(c, 6, "initial_c", 3, st_dims));
    RLX_TRY(check_dims(c, 7, "P", 2, p_dims));
  }
  /* per-batch sequence lengths: a mask (forward directions); all-full lengths are ignored */
  rlx_id lens = RLX_NO_ID;
  if (oi_has(c, 4)) {
    const void *ld;
    rlx_shape lsh;
    bool full = false;
    if (oi_in_value(c, 4, &ld, &lsh)) {
      size_t n;
      RLX_TRY(rlx_shape_numel(&lsh, &n));
      full = true;
      for (size_t i = 0; i < n; i++) full &= oi_elem_i64(ld, (rlx_dtype)lsh.dtype, i) == S;
    }
    if (!full) {
      if (D == 2 || reverse_only)
        return oi_unsupported(c, "sequence_lens shorter than the sequence in a reverse direction");
      RLX_TRY(oi_cast(c, c->in[4], RLX_I64, &lens));
      int64_t b1[2] = {B, 1};
      RLX_TRY(oi_reshape(c, lens, 2, b1, &lens));
    }
  }
  /* input projection of all steps at once: [S*B, I] @ [I, G*H] */
  rlx_id x2;
  int64_t sbi[2] = {S * B, I}, sbg[3] = {S, B, G * H}, bh[2] = {B, H};
  RLX_TRY(oi_reshape(c, x, 2, sbi, &x2));
  rlx_id *ys[2] = {NULL, NULL}, hlast[2], clast[2];
  uint64_t start = c->m->emitted;
  for (uint32_t d = 0; d < D; d++) {
    bool rev = reverse_only || d == 1;
    rlx_id wt, rt, xw, wb = RLX_NO_ID, rb = RLX_NO_ID, h, cc = RLX_NO_ID, p[3] = {RLX_NO_ID, RLX_NO_ID, RLX_NO_ID};
    RLX_TRY(dir_matrix_t(c, c->in[1], d, G * H, I, &wt));
    RLX_TRY(dir_matrix_t(c, c->in[2], d, G * H, H, &rt));
    rlx_id in2[2] = {x2, wt};
    RLX_TRY(oi_emit(c, RLX_OP_MatMul, in2, 2, NULL, &xw));
    RLX_TRY(oi_reshape(c, xw, 3, sbg, &xw));
    if (oi_has(c, 3)) { /* B = [Wb, Rb] per direction */
      rlx_id b;
      int64_t g1[1] = {2 * G * H};
      RLX_TRY(oi_narrow(c, c->in[3], 0, d, 1, &b));
      RLX_TRY(oi_reshape(c, b, 1, g1, &b));
      RLX_TRY(oi_narrow(c, b, 0, 0, G * H, &wb));
      RLX_TRY(oi_narrow(c, b, 0, G * H, G * H, &rb));
      if (kind == CELL_GRU && lbr) {
        /* Rb of the h gate stays inside the reset product; the rest folds into the projection */
        rlx_id rzr, zero, hz;
        RLX_TRY(oi_narrow(c, rb, 0, 0, 2 * H, &rzr));
        rlx_dim hd = H;
        RLX_TRY(oi_fill(c, rlx_shape_make(t, 1, &hd), 0.0, &zero));
        rlx_id parts[2] = {rzr, zero};
        RLX_TRY(oi_concat(c, parts, 2, 0, &hz));
        RLX_TRY(oi_bin(c, RLX_BINOP_ADD, wb, hz, &wb));
        RLX_TRY(oi_narrow(c, rb, 0, 2 * H, H, &rb));
      } else {
        RLX_TRY(oi_bin(c, RLX_BINOP_ADD, wb, rb, &wb));
        rb = RLX_NO_ID;
      }
      RLX_TRY(oi_bin(c, RLX_BINOP_ADD, xw, wb, &xw));
    }
    if (oi_has(c, 5)) {
      rlx_id h0 = c->in[5];
      if (layout) RLX_TRY(oi_transpose(c, h0, swap01, &h0)); /* [B, D, H] -> [D, B, H] */
      RLX_TRY(oi_narrow(c, h0, 0, d, 1, &h));
      RLX_TRY(oi_reshape(c, h, 2, bh, &h));
    } else {
      RLX_TRY(oi_fill(c, rlx_shape_make(t, 2, (rlx_dim[]){B, H}), 0.0, &h));
    }
    if (kind == CELL_LSTM) {
      if (oi_has(c, 6)) {
        rlx_id c0 = c->in[6];
        if (layout) RLX_TRY(oi_transpose(c, c0, swap01, &c0));
        RLX_TRY(oi_narrow(c, c0, 0, d, 1, &cc));
        RLX_TRY(oi_reshape(c, cc, 2, bh, &cc));
      } else {
        RLX_TRY(oi_fill(c, rlx_shape_make(t, 2, (rlx_dim[]){B, H}), 0.0, &cc));
      }
      if (oi_has(c, 7)) { /* peepholes P = [Pi, Po, Pf] */
        rlx_id pd;
        int64_t p1[1] = {3 * H};
        RLX_TRY(oi_narrow(c, c->in[7], 0, d, 1, &pd));
        RLX_TRY(oi_reshape(c, pd, 1, p1, &pd));
        for (int k = 0; k < 3; k++) RLX_TRY(oi_narrow(c, pd, 0, k * H, H, &p[k]));
      }
    }
    ys[d] = oi_scratch(c, (size_t)S * sizeof *ys[d]);
    if (!ys[d]) return oi_nomem(c);
    const act_fn *f = &fns[d * per_dir];
    for (int64_t step = 0; step < S; step++) {
      if (c->m->emitted - start > OI_MAX_UNROLL_NODES)
        return oi_unsupported(c, "unrolling would exceed %u RLX nodes", OI_MAX_UNROLL_NODES);
      int64_t tt = rev ? S - 1 - step : step;
      rlx_id xt, hr, g, hn, cn = RLX_NO_ID;
      int64_t bg[2] = {B, G * H};
      RLX_TRY(oi_narrow(c, xw, 0, tt, 1, &xt));
      RLX_TRY(oi_reshape(c, xt, 2, bg, &xt));
      rlx_id mm[2] = {h, rt};
      if (kind == CELL_RNN) {
        RLX_TRY(oi_emit(c, RLX_OP_MatMul, mm, 2, NULL, &hr));
        RLX_TRY(oi_bin(c, RLX_BINOP_ADD, xt, hr, &g));
        RLX_TRY(clip(c, g, cl, &g));
        RLX_TRY(apply_act(c, &f[0], g, &hn));
      } else if (kind == CELL_GRU) {
        rlx_id rzh, xz, xr, xh, hz, hrr, hh, z, r, ht, rtt, one_minus;
        RLX_TRY(gate(c, xt, 0, H, &xz));
        RLX_TRY(gate(c, xt, 1, H, &xr));
        RLX_TRY(gate(c, xt, 2, H, &xh));
        rlx_id rzt, rht;
        RLX_TRY(oi_narrow(c, rt, 1, 0, 2 * H, &rzt));
        RLX_TRY(oi_narrow(c, rt, 1, 2 * H, H, &rht));
        rlx_id m2[2] = {h, rzt};
        RLX_TRY(oi_emit(c, RLX_OP_MatMul, m2, 2, NULL, &rzh));
        RLX_TRY(gate(c, rzh, 0, H, &hz));
        RLX_TRY(gate(c, rzh, 1, H, &hrr));
        RLX_TRY(oi_bin(c, RLX_BINOP_ADD, xz, hz, &z));
        RLX_TRY(clip(c, z, cl, &z));
        RLX_TRY(apply_act(c, &f[0], z, &z));
        RLX_TRY(oi_bin(c, RLX_BINOP_ADD, xr, hrr, &r));
        RLX_TRY(clip(c, r, cl, &r));
        RLX_TRY(apply_act(c, &f[0], r, &r));
        if (lbr) {
          rlx_id m3[2] = {h, rht};
          RLX_TRY(oi_emit(c, RLX_OP_MatMul, m3, 2, NULL, &hh));
          if (rb != RLX_NO_ID) RLX_TRY(oi_bin(c, RLX_BINOP_ADD, hh, rb, &hh));
          RLX_TRY(oi_bin(c, RLX_BINOP_MUL, r, hh, &hh));
        } else {
          RLX_TRY(oi_bin(c, RLX_BINOP_MUL, r, h, &rtt));
          rlx_id m3[2] = {rtt, rht};
          RLX_TRY(oi_emit(c, RLX_OP_MatMul, m3, 2, NULL, &hh));
        }
        RLX_TRY(oi_bin(c, RLX_BINOP_ADD, xh, hh, &ht));
        RLX_TRY(clip(c, ht, cl, &ht));
        RLX_TRY(apply_act(c, &f[1], ht, &ht));
        /* H = (1 - z) * ht + z * H */
        RLX_TRY(oi_scalar(c, t, 1.0, &one_minus));
        RLX_TRY(oi_bin(c, RLX_BINOP_SUB, one_minus, z, &one_minus));
        RLX_TRY(oi_bin(c, RLX_BINOP_MUL, one_minus, ht, &ht));
        RLX_TRY(oi_bin(c, RLX_BINOP_MUL, z, h, &z));
        RLX_TRY(oi_bin(c, RLX_BINOP_ADD, ht, z, &hn));
      } else {
        rlx_id gi, go, gf, gc, pc;
        RLX_TRY(oi_emit(c, RLX_OP_MatMul, mm, 2, NULL, &hr));
        RLX_TRY(oi_bin(c, RLX_BINOP_ADD, xt, hr, &g));
        RLX_TRY(gate(c, g, 0, H, &gi));
        RLX_TRY(gate(c, g, 1, H, &go));
        RLX_TRY(gate(c, g, 2, H, &gf));
        RLX_TRY(gate(c, g, 3, H, &gc));
        if (p[0] != RLX_NO_ID) {
          RLX_TRY(oi_bin(c, RLX_BINOP_MUL, cc, p[0], &pc));
          RLX_TRY(oi_bin(c, RLX_BINOP_ADD, gi, pc, &gi));
          RLX_TRY(oi_bin(c, RLX_BINOP_MUL, cc, p[2], &pc));
          RLX_TRY(oi_bin(c, RLX_BINOP_ADD, gf, pc, &gf));
        }
        RLX_TRY(clip(c, gi, cl, &gi));
        RLX_TRY(clip(c, gf, cl, &gf));
        RLX_TRY(clip(c, gc, cl, &gc));
        RLX_TRY(apply_act(c, &f[0], gi, &gi));
        RLX_TRY(apply_act(c, &f[0], gf, &gf));
        RLX_TRY(apply_act(c, &f[1], gc, &gc));
        rlx_id fc, ic;
        RLX_TRY(oi_bin(c, RLX_BINOP_MUL, gf, cc, &fc));
        RLX_TRY(oi_bin(c, RLX_BINOP_MUL, gi, gc, &ic));
        RLX_TRY(oi_bin(c, RLX_BINOP_ADD, fc, ic, &cn));
        if (p[1] != RLX_NO_ID) {
          RLX_TRY(oi_bin(c, RLX_BINOP_MUL, cn, p[1], &pc));
          RLX_TRY(oi_bin(c, RLX_BINOP_ADD, go, pc, &go));
        }
        RLX_TRY(clip(c, go, cl, &go));
        RLX_TRY(apply_act(c, &f[0], go, &go));
        rlx_id hc;
        RLX_TRY(apply_act(c, &f[2], cn, &hc));
        RLX_TRY(oi_bin(c, RLX_BINOP_MUL, go, hc, &hn));
      }
      rlx_id yt = hn;
      if (lens != RLX_NO_ID) { /* steps past a sequence's length keep its state; Y is 0 there */
        rlx_id tc, live, zero;
        RLX_TRY(oi_scalar(c, RLX_I64, (double)tt, &tc));
        RLX_TRY(oi_cmp(c, RLX_CMP_LT, tc, lens, &live));
        RLX_TRY(oi_where(c, live, hn, h, &hn));
        if (cn != RLX_NO_ID) RLX_TRY(oi_where(c, live, cn, cc, &cn));
        RLX_TRY(oi_scalar(c, t, 0, &zero));
        RLX_TRY(oi_where(c, live, hn, zero, &yt));
      }
      h = hn;
      if (cn != RLX_NO_ID) cc = cn;
      ys[d][tt] = yt;
    }
    hlast[d] = h;
    clast[d] = cc;
  }
  /* Y [S, D, B, H] (layout 0) or [B, S, D, H]; Y_h / Y_c [D, B, H] or [B, D, H] */
  int64_t one4[4] = {1, 1, B, H}, bh3[3] = {1, B, H};
  if (c->n_out > 0 && c->out_used[0]) {
    rlx_id *steps = oi_scratch(c, (size_t)S * sizeof *steps);
    if (!steps) return oi_nomem(c);
    for (int64_t s = 0; s < S; s++) {
      rlx_id per[2];
      for (uint32_t d = 0; d < D; d++) RLX_TRY(oi_reshape(c, ys[d][s], 4, one4, &per[d]));
      RLX_TRY(oi_concat(c, per, D, 1, &steps[s]));
    }
    rlx_id y;
    uint32_t n = (uint32_t)S;
    while (n > 1) { /* Concat takes at most 64 operands at a time */
      uint32_t m = 0;
      for (uint32_t i = 0; i < n; i += 64) RLX_TRY(oi_concat(c, steps + i, n - i < 64 ? n - i : 64, 0, &steps[m++]));
      n = m;
    }
    y = steps[0];
    if (layout) {
      static const int64_t perm[4] = {2, 0, 1, 3};
      RLX_TRY(oi_transpose(c, y, perm, &y));
    }
    c->out[0] = y;
  }
  for (uint32_t k = 1; k < c->n_out && k <= (kind == CELL_LSTM ? 2u : 1u); k++) {
    if (!c->out_used[k]) continue;
    rlx_id per[2], y;
    for (uint32_t d = 0; d < D; d++) RLX_TRY(oi_reshape(c, k == 1 ? hlast[d] : clast[d], 3, bh3, &per[d]));
    RLX_TRY(oi_concat(c, per, D, 0, &y));
    if (layout) RLX_TRY(oi_transpose(c, y, swap01, &y));
    c->out[k] = y;
  }
  return RLX_OK;
}

const oi_op_entry oi_ops_rnn[] = {
    {"RNN", 7, OI_MAX_OPSET, map_rnn},
    {"GRU", 7, OI_MAX_OPSET, map_rnn},
    {"LSTM", 7, OI_MAX_OPSET, map_rnn},
};
const uint32_t oi_ops_rnn_len = sizeof oi_ops_rnn / sizeof oi_ops_rnn[0];
