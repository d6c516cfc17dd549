/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The finite-difference gradient check's case builders (the .c files beside this header) and the types the
 * case table in test_gradcheck.c is made of. */
#ifndef RLX_TEST_GRADCHECK_H
#define RLX_TEST_GRADCHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ADT_SHARED_RNG 1 /* one stream for the builders and the check (test_gradcheck.c) */
#include "../ad_check.h"

#define TRY(x)                   \
  do {                           \
    rlx_status s_ = (x);         \
    if (s_ != RLX_OK) return s_; \
  } while (0)

typedef rlx_status (*gc_build)(rlx_graph *g, const rlx_id *p, rlx_id *y);

typedef struct gc_param {
  const char *name;
  uint32_t rank;
  rlx_dim dims[6];
  double lo, hi;
} gc_param;

typedef struct gc_case {
  const char *name;
  rlx_op op;
  gc_build build;
  gc_param p[6];
  double h, tol; /* 0 = defaults (1e-5, 1e-6) */
  rlx_dtype dt;  /* 0 (F32 enum value) is treated as "f64 default" unless f32 is set */
  bool f32;
} gc_case;

#define P1(n, lo, hi, r, ...) \
  { n, r, {__VA_ARGS__}, lo, hi }

typedef struct gc_entry {
  gc_case c;
  int *knob; /* set to knob_value before building */
  int knob_value;
} gc_entry;

/* shared graph helpers (builders_core.c) */
rlx_shape sh(uint32_t rank, const rlx_dim *d);
rlx_status cst(rlx_graph *g, uint32_t rank, const rlx_dim *d, double lo, double hi, rlx_id *out);
rlx_status cstv(rlx_graph *g, rlx_dtype t, uint32_t rank, const rlx_dim *d, const double *v, rlx_id *out);
rlx_status bin(rlx_graph *g, rlx_binop op, rlx_id a, rlx_id b, rlx_id *out);
rlx_status plus_diag(rlx_graph *g, rlx_id a, double k, rlx_id *out);

/* case builders: y = op(params); a knob g_* picks a variant before a build */
rlx_status b_act(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_binary(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_mod(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_cast(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_where(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_fma(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_clamp(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_matmul(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_dotgeneral(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_solve(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_bsolve(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_det(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_logdet(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_cholesky(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_trisolve(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_grouped(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_svd(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_qr_q(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_qr_r(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_im2col(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_sort(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_layernorm(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_rmsnorm(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_groupnorm(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_batchnorm(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_layernorm2d(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_adaln(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_gatedres(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_resize(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_interp3d(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_attention(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_rope(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_axialrope(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_reshape(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_transpose(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_narrow(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_concat(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_expand(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_gather(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_reverse(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_pad(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_slice(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_tile(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_trilu(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_roll(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_fft(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_kvappend(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_reduce(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_softmax(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_cumsum(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_cumprod(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_cummax(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_conv(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_conv3d(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_convt2d(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_convt3d(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_pool(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_sce(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_scel(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_scatteradd(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_gatherelements(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_gathernd(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_scatterelements(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_scatternd(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_swiglu(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_mmbiasact(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_mmres(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_convbiasact(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_resln(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_resrms(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_lora(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_attnblock(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_txlayer(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_ewregion(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_tfregion(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_bewregion(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_if(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_while(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_scan(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_customfn(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_raw(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_ropebw(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_gatherbw(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_scebw(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_eigh(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_bimap(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_reeig(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_spdbn(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_spdlogmap(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_spdexpmap(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_spdtransport(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_spdfn(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_custom(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_splat(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_lstm(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_gru(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_rnn(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_selscan(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_mamba2(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_gdn(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_gdnbw(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_pconv(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_logmel(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_spline(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_spline5(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_synth(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_synth_rec(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_dqmm_int8(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_dqmm_gguf(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_dgmm(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_smm(rlx_graph *g, const rlx_id *p, rlx_id *y);
rlx_status b_sgmm(rlx_graph *g, const rlx_id *p, rlx_id *y);
extern int g_act;
extern int g_binop;
extern int g_tri;
extern int g_ada;
extern int g_attn;
extern int g_rope;
extern int g_gather;
extern int g_pad;
extern int g_slice;
extern int g_fft;
extern int g_red;
extern int g_excl;
extern int g_conv;
extern int g_pool;
extern int g_sa;
extern int g_scat_red;
extern int g_scan;
extern int g_cfn;
extern int g_raw_index;
extern int g_spd_eig;
extern int g_spd_fn;
extern int g_splat_sh;
extern int g_rnn;
extern int g_gdn;

#endif
