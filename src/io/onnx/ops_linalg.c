/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX linear algebra: MatMul (NumPy 1-D promotion, batch broadcasting), Gemm, MatMulInteger,
 * Einsum (a letter repeated within an operand takes its diagonal by a Gather; operands contracted
 * pairwise with DotGeneral; letters used by no later operand are summed out first) and Det
 * (batched by slicing). */
#include <string.h>

#include "io/onnx/onnx_internal.h"

static rlx_status map_matmul(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "A"));
  RLX_TRY(oi_need(c, 1, "B"));
  rlx_id a = c->in[0], b = c->in[1], y;
  const rlx_shape as = *oi_shape(c, a), bs = *oi_shape(c, b);
  if (as.rank == 0 || bs.rank == 0) return oi_bad(c, "MatMul operands must have rank >= 1");
  if (as.dtype != bs.dtype)
    return oi_bad(c, "A (%s) and B (%s) must have the same dtype", rlx_dtype_name((rlx_dtype)as.dtype),
                  rlx_dtype_name((rlx_dtype)bs.dtype));
  if (as.rank == 1) {
    rlx_dim d[2] = {1, as.dims[0]};
    RLX_TRY(oi_reshape_dims(c, a, 2, d, &a));
  }
  if (bs.rank == 1) {
    rlx_dim d[2] = {bs.dims[0], 1};
    RLX_TRY(oi_reshape_dims(c, b, 2, d, &b));
  }
  rlx_id in[2] = {a, b};
  RLX_TRY(oi_emit(c, RLX_OP_MatMul, in, 2, NULL, &y));
  if (as.rank == 1 || bs.rank == 1) {
    const rlx_shape ys = *oi_shape(c, y);
    rlx_dim d[RLX_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t i = 0; i < ys.rank; i++) {
      if (as.rank == 1 && i == ys.rank - 2u) continue;
      if (bs.rank == 1 && i == ys.rank - 1u) continue;
      d[r++] = ys.dims[i];
    }
    RLX_TRY(oi_reshape_dims(c, y, r, d, &y));
  }
  c->out[0] = y;
  return RLX_OK;
}

static rlx_status map_gemm(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "A"));
  RLX_TRY(oi_need(c, 1, "B"));
  float alpha, beta;
  int64_t ta, tb;
  RLX_TRY(oi_attr_f(c, "alpha", 1.0f, &alpha));
  RLX_TRY(oi_attr_f(c, "beta", 1.0f, &beta));
  RLX_TRY(oi_attr_i(c, "transA", 0, &ta));
  RLX_TRY(oi_attr_i(c, "transB", 0, &tb));
  rlx_id a = c->in[0], b = c->in[1], y;
  if (oi_shape(c, a)->rank != 2 || oi_shape(c, b)->rank != 2)
    return oi_bad(c, "A %s and B %s must be matrices", rlx_fmt_shape(oi_shape(c, a)), rlx_fmt_shape(oi_shape(c, b)));
  static const int64_t swap[2] = {1, 0};
  if (ta) RLX_TRY(oi_transpose(c, a, swap, &a));
  if (tb) RLX_TRY(oi_transpose(c, b, swap, &b));
  rlx_id in[2] = {a, b};
  RLX_TRY(oi_emit(c, RLX_OP_MatMul, in, 2, NULL, &y));
  if (alpha != 1.0f) RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, y, alpha, &y));
  if (oi_has(c, 2) && beta != 0.0f) {
    rlx_id cc = c->in[2];
    rlx_shape prod = *oi_shape(c, y);
    if (beta != 1.0f) RLX_TRY(oi_bin_s(c, RLX_BINOP_MUL, cc, beta, &cc));
    RLX_TRY(oi_bin(c, RLX_BINOP_ADD, y, cc, &y));
    if (!rlx_shape_equal(oi_shape(c, y), &prod))
      return oi_bad(c, "C %s does not broadcast to the product %s", rlx_fmt_shape(oi_shape(c, c->in[2])),
                    rlx_fmt_shape(&prod));
  }
  c->out[0] = y;
  return RLX_OK;
}

static rlx_status map_matmul_integer(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "A"));
  RLX_TRY(oi_need(c, 1, "B"));
  rlx_id ab[2];
  for (uint32_t k = 0; k < 2; k++) {
    RLX_TRY(oi_cast(c, c->in[k], RLX_I32, &ab[k]));
    if (oi_has(c, k + 2)) {
      rlx_id zp;
      RLX_TRY(oi_cast(c, c->in[k + 2], RLX_I32, &zp));
      const rlx_shape *zs = oi_shape(c, zp), *xs = oi_shape(c, ab[k]);
      /* a per-row zero point of A is [M] -> [M, 1]; per-column of B is [N] (broadcasts as is) */
      if (k == 0 && zs->rank == 1 && xs->rank >= 2 && zs->dims[0] != 1) {
        rlx_dim d[2] = {zs->dims[0], 1};
        RLX_TRY(oi_reshape_dims(c, zp, 2, d, &zp));
      }
      RLX_TRY(oi_bin(c, RLX_BINOP_SUB, ab[k], zp, &ab[k]));
    }
  }
  rlx_id y;
  const rlx_shape as = *oi_shape(c, ab[0]), bs = *oi_shape(c, ab[1]);
  if (as.rank < 2 || bs.rank < 2) return oi_unsupported(c, "1-D MatMulInteger operands");
  RLX_TRY(oi_emit(c, RLX_OP_MatMul, ab, 2, NULL, &y));
  c->out[0] = y;
  return RLX_OK;
}

/* ---- Einsum ---- */

typedef struct term {
  char l[RLX_MAX_RANK + 1]; /* one letter per axis */
  uint32_t n;
} term;

static bool has_letter(const term *t, char ch) { return memchr(t->l, ch, t->n) != NULL; }

static rlx_status parse_term(oi_node *c, const char *s, size_t len, uint32_t rank, uint32_t *ell_rank, bool is_out,
                             term *t) {
  t->n = 0;
  bool ell = false;
  for (size_t i = 0; i < len; i++) {
    char ch = s[i];
    if (ch == ' ') continue;
    if (ch == '.') {
      if (i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.' || ell)
        return oi_bad(c, "malformed ellipsis in the equation");
      ell = true;
      i += 2;
      uint32_t explicit_n = 0;
      for (size_t j = i + 1; j < len; j++) explicit_n += (s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z');
      uint32_t er;
      if (is_out)
        er = *ell_rank;
      else {
        if (rank < t->n + explicit_n) return oi_bad(c, "an equation term has more letters than its operand's rank");
        er = rank - t->n - explicit_n;
        if (*ell_rank != UINT32_MAX && er != *ell_rank) return oi_unsupported(c, "ellipses of different ranks");
        *ell_rank = er;
      }
      for (uint32_t k = 0; k < er; k++) {
        if (t->n >= RLX_MAX_RANK) return oi_bad(c, "an equation term has too many axes");
        t->l[t->n++] = (char)('0' + k); /* digits stand for the ellipsis axes */
      }
      continue;
    }
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
      return oi_bad(c, "bad character '%c' in the equation", ch);
    if (t->n >= RLX_MAX_RANK) return oi_bad(c, "an equation term has too many axes");
    if (is_out && has_letter(t, ch)) return oi_bad(c, "output letter '%c' appears twice", ch);
    t->l[t->n++] = ch;
  }
  if (!is_out && t->n != rank) return oi_bad(c, "an equation term has %u letters for a rank-%u operand", t->n, rank);
  return RLX_OK;
}

static uint32_t count_letter(const term *t, char ch) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < t->n; i++) n += t->l[i] == ch;
  return n;
}

/* A letter repeated within one operand ("ii", "bii->bi") takes the diagonal: the two axes go
 * last (Transpose), merge into one of d*d (Reshape), and a Gather of the indices k*(d+1) keeps
 * the diagonal as one axis of that letter. Repeated until every letter is distinct. */
static rlx_status take_diagonals(oi_node *c, rlx_id *x, term *t) {
  for (;;) {
    uint32_t i = 0, j = 0;
    bool found = false;
    for (i = 0; i < t->n && !found; i++)
      for (j = i + 1; j < t->n && !found; j++) found = t->l[i] == t->l[j];
    if (!found) return RLX_OK;
    i--, j--;
    const rlx_shape *s = oi_shape(c, *x);
    RLX_TRY(oi_need_static(c, s, "an operand with a repeated index"));
    int64_t d = s->dims[i];
    if (s->dims[j] != d)
      return oi_bad(c, "letter '%c' labels axes of sizes %lld and %lld in one operand", t->l[i], (long long)d,
                    (long long)s->dims[j]);
    int64_t perm[RLX_MAX_RANK], dims[RLX_MAX_RANK];
    term nt = {{0}, 0};
    for (uint32_t k = 0; k < t->n; k++)
      if (k != i && k != j) {
        dims[nt.n] = s->dims[k];
        perm[nt.n] = k;
        nt.l[nt.n++] = t->l[k];
      }
    perm[nt.n] = i, perm[nt.n + 1] = j;
    dims[nt.n] = d * d;
    uint32_t axis = nt.n;
    nt.l[nt.n++] = t->l[i];
    int64_t *idx = oi_scratch(c, (size_t)(d ? d : 1) * sizeof *idx);
    if (!idx) return oi_nomem(c);
    for (int64_t k = 0; k < d; k++) idx[k] = k * (d + 1);
    rlx_id tr, flat, ids;
    RLX_TRY(oi_transpose(c, *x, perm, &tr));
    RLX_TRY(oi_reshape(c, tr, nt.n, dims, &flat));
    RLX_TRY(oi_i64s(c, idx, (uint32_t)d, &ids));
    rlx_attrs_Gather ga = {.axis = axis};
    rlx_id in2[2] = {flat, ids};
    RLX_TRY(oi_emit(c, RLX_OP_Gather, in2, 2, &ga, x));
    *t = nt;
  }
}

/* Sums out the axes of x whose letters fail `keep`. */
static rlx_status sum_out(oi_node *c, rlx_id *x, term *t, const term *const *others, uint32_t n_others) {
  int64_t axes[RLX_MAX_RANK];
  uint32_t na = 0;
  term nt = {{0}, 0};
  for (uint32_t i = 0; i < t->n; i++) {
    bool needed = false;
    for (uint32_t k = 0; k < n_others && !needed; k++) needed = has_letter(others[k], t->l[i]);
    if (needed)
      nt.l[nt.n++] = t->l[i];
    else
      axes[na++] = i;
  }
  if (!na) return RLX_OK;
  RLX_TRY(oi_reduce(c, RLX_REDUCE_SUM, *x, axes, na, false, x));
  *t = nt;
  return RLX_OK;
}

static rlx_status map_einsum(oi_node *c) {
  const char *eq;
  RLX_TRY(oi_attr_s(c, "equation", "", &eq));
  uint32_t n = c->n_in;
  if (n == 0 || n > 16) return oi_unsupported(c, "Einsum with %u operands", n);
  for (uint32_t k = 0; k < n; k++) RLX_TRY(oi_need(c, k, "Inputs"));
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
  term terms[16], out;
  uint32_t ell_rank = UINT32_MAX;
  const char *p = eq;
  for (uint32_t k = 0; k < n; k++) {
    const char *comma = memchr(p, ',', lhs_len - (size_t)(p - eq));
    size_t len = comma ? (size_t)(comma - p) : lhs_len - (size_t)(p - eq);
    if (k + 1 < n && !comma) return oi_bad(c, "the equation names fewer operands than the %u inputs", n);
    if (k + 1 == n && comma) return oi_bad(c, "the equation names more operands than the %u inputs", n);
    RLX_TRY(parse_term(c, p, len, oi_in_shape(c, k)->rank, &ell_rank, false, &terms[k]));
    p += len + 1;
  }
  if (ell_rank == UINT32_MAX) ell_rank = 0;
  if (arrow) {
    RLX_TRY(parse_term(c, arrow + 2, strlen(arrow + 2), 0, &ell_rank, true, &out));
  } else { /* implicit: ellipsis axes, then the letters used once, alphabetically */
    out.n = 0;
    for (uint32_t k = 0; k < ell_rank; k++) out.l[out.n++] = (char)('0' + k);
    for (int ch = 'A'; ch <= 'z'; ch++) {
      uint32_t cnt = 0;
      for (uint32_t k = 0; k < n; k++) cnt += count_letter(&terms[k], (char)ch);
      if (cnt == 1 && ch > '9') {
        if (out.n >= RLX_MAX_RANK) return oi_unsupported(c, "an Einsum result of rank > %d", RLX_MAX_RANK);
        out.l[out.n++] = (char)ch;
      }
    }
  }
  for (uint32_t i = 0; i < out.n; i++) {
    bool found = false;
    for (uint32_t k = 0; k < n && !found; k++) found = has_letter(&terms[k], out.l[i]);
    if (!found) return oi_bad(c, "output letter '%c' appears in no operand", out.l[i]);
  }
  rlx_id ops[16];
  for (uint32_t k = 0; k < n; k++) {
    ops[k] = c->in[k];
    RLX_TRY(take_diagonals(c, &ops[k], &terms[k]));
  }
  rlx_id cur = ops[0];
  term ct = terms[0];
  const term *others[17];
  /* letters of operand 0 that no other operand and no output use */
  uint32_t no = 0;
  others[no++] = &out;
  for (uint32_t k = 1; k < n; k++) others[no++] = &terms[k];
  RLX_TRY(sum_out(c, &cur, &ct, others, no));
  for (uint32_t k = 1; k < n; k++) {
    rlx_id nx = ops[k];
    term nt = terms[k];
    /* letters needed after this step: output + later operands */
    const term *later[17];
    uint32_t nl = 0;
    later[nl++] = &out;
    for (uint32_t j = k + 1; j < n; j++) later[nl++] = &terms[j];
    const term *for_next[18];
    uint32_t nn = 0;
    for (uint32_t j = 0; j < nl; j++) for_next[nn++] = later[j];
    for_next[nn++] = &ct;
    RLX_TRY(sum_out(c, &nx, &nt, for_next, nn));
    int64_t lc[RLX_MAX_RANK], rc[RLX_MAX_RANK], lb[RLX_MAX_RANK], rb[RLX_MAX_RANK];
    uint32_t ncon = 0, nb = 0;
    term res = {{0}, 0};
    for (uint32_t i = 0; i < ct.n; i++) {
      const char *q = memchr(nt.l, ct.l[i], nt.n);
      if (!q) continue;
      bool needed = false;
      for (uint32_t j = 0; j < nl && !needed; j++) needed = has_letter(later[j], ct.l[i]);
      if (needed) {
        lb[nb] = i, rb[nb] = q - nt.l, nb++;
        res.l[res.n++] = ct.l[i];
      } else {
        lc[ncon] = i, rc[ncon] = q - nt.l, ncon++;
      }
    }
    for (uint32_t i = 0; i < ct.n; i++)
      if (!has_letter(&nt, ct.l[i])) res.l[res.n++] = ct.l[i];
    for (uint32_t i = 0; i < nt.n; i++)
      if (!has_letter(&ct, nt.l[i])) res.l[res.n++] = nt.l[i];
    if (res.n > RLX_MAX_RANK) return oi_unsupported(c, "an intermediate Einsum result of rank > %d", RLX_MAX_RANK);
    rlx_attrs_DotGeneral da = {.lhs_contracting = {.v = lc, .n = ncon},
                               .rhs_contracting = {.v = rc, .n = ncon},
                               .lhs_batch = {.v = lb, .n = nb},
                               .rhs_batch = {.v = rb, .n = nb}};
    rlx_id in2[2] = {cur, nx};
    if (oi_shape(c, cur)->dtype != oi_shape(c, nx)->dtype) return oi_bad(c, "operands must share a dtype");
    RLX_TRY(oi_emit(c, RLX_OP_DotGeneral, in2, 2, &da, &cur));
    ct = res;
  }
  const term *only_out[1] = {&out};
  RLX_TRY(sum_out(c, &cur, &ct, only_out, 1));
  int64_t perm[RLX_MAX_RANK];
  if (ct.n != out.n) return oi_bad(c, "the equation's output does not match its operands");
  for (uint32_t i = 0; i < out.n; i++) {
    const char *q = memchr(ct.l, out.l[i], ct.n);
    if (!q) return oi_bad(c, "output letter '%c' is lost", out.l[i]);
    perm[i] = q - ct.l;
  }
  return oi_transpose(c, cur, perm, &c->out[0]);
}

static rlx_status map_det(oi_node *c) {
  RLX_TRY(oi_need(c, 0, "X"));
  rlx_id x = c->in[0];
  const rlx_shape xs = *oi_shape(c, x);
  if (xs.rank < 2) return oi_bad(c, "input must have rank >= 2");
  if (xs.rank == 2) return oi_emit(c, RLX_OP_Det, &x, 1, NULL, &c->out[0]);
  RLX_TRY(oi_need_static(c, &xs, "input"));
  int64_t batch = 1, m = xs.dims[xs.rank - 2], n = xs.dims[xs.rank - 1];
  for (uint32_t i = 0; i + 2 < xs.rank; i++) batch *= xs.dims[i];
  if (batch > 1024) return oi_unsupported(c, "a batch of %lld determinants", (long long)batch);
  if (batch == 0) return oi_unsupported(c, "an empty batch of determinants");
  int64_t d3[3] = {batch, m, n}, d2[2] = {m, n}, one = 1;
  rlx_id flat, *parts = oi_scratch(c, (size_t)batch * sizeof *parts);
  if (!parts) return oi_nomem(c);
  RLX_TRY(oi_reshape(c, x, 3, d3, &flat));
  for (int64_t b = 0; b < batch; b++) {
    rlx_id s;
    RLX_TRY(oi_narrow(c, flat, 0, b, 1, &s));
    RLX_TRY(oi_reshape(c, s, 2, d2, &s));
    RLX_TRY(oi_emit(c, RLX_OP_Det, &s, 1, NULL, &s));
    RLX_TRY(oi_reshape(c, s, 1, &one, &parts[b]));
  }
  rlx_id all;
  for (int64_t b = 0, chunk = 0; b < batch; b += 64, chunk++) {
    rlx_id piece;
    RLX_TRY(oi_concat(c, parts + b, (uint32_t)(batch - b < 64 ? batch - b : 64), 0, &piece));
    parts[chunk] = piece;
  }
  RLX_TRY(oi_concat(c, parts, (uint32_t)((batch + 63) / 64), 0, &all));
  int64_t bd[RLX_MAX_RANK];
  for (uint32_t i = 0; i + 2 < xs.rank; i++) bd[i] = xs.dims[i];
  return oi_reshape(c, all, xs.rank - 2u, bd, &c->out[0]);
}

const oi_op_entry oi_ops_linalg[] = {
    {"MatMul", 1, OI_MAX_OPSET, map_matmul},
    {"Gemm", 1, OI_MAX_OPSET, map_gemm},
    {"MatMulInteger", 10, OI_MAX_OPSET, map_matmul_integer},
    {"Einsum", 12, OI_MAX_OPSET, map_einsum},
    {"Det", 11, OI_MAX_OPSET, map_det},
};
const uint32_t oi_ops_linalg_len = sizeof oi_ops_linalg / sizeof oi_ops_linalg[0];
