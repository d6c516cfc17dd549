/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Newton-Schulz orthogonalisation of Muon (Jordan et al. 2024): five (by default) quintic
 * iterations push every singular value of the normalised update towards ~1 while keeping its
 * singular vectors, approximating U V^T of the SVD U S V^T. Computed in f32 with cblas_sgemm
 * (the reference implementation runs it in bf16). A tall matrix (rows > cols) is iterated in the
 * transposed form so the Gram matrix is always the small k x k one, k = min(rows, cols). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "optim/optim_internal.h"

float *rlx_muon_orthogonalize(float *x, float *y, float *g, float *h, size_t rows, size_t cols, unsigned steps) {
  const size_t n = rows * cols;
  double ss = 0;
  for (size_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
  const float inv = (float)(1.0 / (sqrt(ss) + RLX_MUON_NS_EPS));
  for (size_t i = 0; i < n; i++) x[i] *= inv;

  const int r = (int)rows, c = (int)cols;
  const bool wide = rows <= cols;
  const int k = wide ? r : c;
  for (unsigned it = 0; it < steps; it++) {
    /* G = X X^T (wide) or X^T X (tall): k x k, symmetric. */
    if (wide)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, k, k, c, 1.0f, x, c, x, c, 0.0f, g, k);
    else
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, k, r, 1.0f, x, c, x, c, 0.0f, g, k);
    /* H = b G + c G G */
    memcpy(h, g, (size_t)k * (size_t)k * sizeof *h);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, k, k, k, RLX_MUON_NS_C, g, k, g, k, RLX_MUON_NS_B, h, k);
    /* Y = a X + H X (wide) or a X + X H (tall; H is symmetric) */
    memcpy(y, x, n * sizeof *y);
    if (wide)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, c, r, 1.0f, h, k, x, c, RLX_MUON_NS_A, y, c);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, c, c, 1.0f, x, c, h, k, RLX_MUON_NS_A, y, c);
    float *t = x;
    x = y;
    y = t;
  }
  return x;
}
