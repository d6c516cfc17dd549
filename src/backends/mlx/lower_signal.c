/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Native MLX lowering of the complex ops and of Fft through MLX's fft (complex64; f32 real-block lines
 * [re_0..re_{N-1}, im_0..im_{N-1}] are packed into complex64 and back). MLX computes the unscaled
 * transform (fft with norm Backward, ifft with norm Forward) and the CPU's factor is applied:
 * 1/N on the inverse for norm Forward, 1/sqrt(N) both ways for Ortho, 1 for Backward. f64 and
 * c128 (MLX has no complex128) run on the CPU kernel. */
#include <math.h>

#include "backends/mlx/mlx_internal.h"

static rlx_status lower_Fft(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  const rlx_attrs_Fft *a = &n->attrs.Fft;
  rlxm_scope *s = c->s;
  int t = rlxm_dtype(in[0]);
  uint32_t r = rlxm_rank(in[0]);
  if ((t != RLX_C64 && t != RLX_F32) || r < 1) return mlx_decline(c, "Fft of this dtype runs on the CPU kernel");
  int64_t last = rlxm_dim(in[0], r - 1), N = t == RLX_C64 ? last : last / 2;
  if (N < 1 || (t == RLX_F32 && last % 2)) return mlx_decline(c, "line length: the CPU kernel checks it");
  rlxm_arr *z = in[0];
  if (t == RLX_F32) z = rlxm_complex(s, rlxm_narrow(s, in[0], r - 1, 0, N, 1), rlxm_narrow(s, in[0], r - 1, N, N, 1));
  rlxm_arr *y = rlxm_fft(s, z, a->inverse, a->inverse ? 1 : 0); /* unscaled both ways */
  double scale = a->norm == RLX_FFT_NORM_FORWARD ? (a->inverse ? 1.0 / (double)N : 1.0)
                 : a->norm == RLX_FFT_NORM_ORTHO ? 1.0 / sqrt((double)N)
                                                 : 1.0;
  if (scale != 1.0) y = rlxm_binary(s, RLXM_MUL, y, rlxm_scalar(s, scale, RLX_C64));
  if (t == RLX_F32) {
    rlxm_arr *p[2] = {rlxm_unary(s, RLXM_REAL, y), rlxm_unary(s, RLXM_IMAG, y)};
    y = rlxm_concat(s, p, 2, r - 1);
  }
  return mlx_check(c, y, out);
}

/* ComplexNormSq z -> re^2 + im^2; its backward [z, g] -> g z; Conjugate z -> (re, -im): c64
 * natively (c128 and real-block layouts on the CPU kernel). */
static rlx_status lower_ComplexNormSq(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  (void)n;
  rlxm_scope *s = c->s;
  if (rlxm_dtype(in[0]) != RLX_C64) return mlx_decline(c, "ComplexNormSq of this dtype runs on the CPU kernel");
  rlxm_arr *re = rlxm_unary(s, RLXM_REAL, in[0]), *im = rlxm_unary(s, RLXM_IMAG, in[0]);
  return mlx_check(c, rlxm_binary(s, RLXM_ADD, rlxm_binary(s, RLXM_MUL, re, re), rlxm_binary(s, RLXM_MUL, im, im)),
                   out);
}
static rlx_status lower_ComplexNormSqBackward(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in,
                                              rlxm_arr **out) {
  (void)n;
  if (rlxm_dtype(in[0]) != RLX_C64 || rlxm_dtype(in[1]) != RLX_F32)
    return mlx_decline(c, "this dtype runs on the CPU kernel");
  return mlx_check(c, rlxm_binary(c->s, RLXM_MUL, in[0], rlxm_astype(c->s, in[1], RLX_C64)), out);
}
static rlx_status lower_Conjugate(mlx_lower_ctx *c, const rlx_node *n, rlxm_arr *const *in, rlxm_arr **out) {
  (void)n;
  if (rlxm_dtype(in[0]) != RLX_C64) return mlx_decline(c, "Conjugate of this dtype runs on the CPU kernel");
  return mlx_check(c, rlxm_unary(c->s, RLXM_CONJ, in[0]), out);
}

const mlx_lower_fn mlx_lower_signal[RLX_OP_COUNT] = {
    [RLX_OP_Fft] = lower_Fft,
    [RLX_OP_ComplexNormSq] = lower_ComplexNormSq,
    [RLX_OP_ComplexNormSqBackward] = lower_ComplexNormSqBackward,
    [RLX_OP_Conjugate] = lower_Conjugate,
};
