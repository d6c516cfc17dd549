/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The element-wise update loops of the optimizers. Each is a plain loop over contiguous arrays
 * (restrict, no calls but sqrtf, flags tested outside the loops) so the compiler vectorises it
 * (at -O3; the loops with sqrtf also need -fno-math-errno).
 * The order of operations follows torch's f32 kernels (e.g. m * beta1 + (1 - beta1) * g, then
 * p + (-step) * (m / denom)), which keeps the rounding close to torch.optim. */
#include <math.h>

#include "optim/optim_internal.h"

void rlx_optim_prepare_grad(float *restrict out, const float *restrict g, const float *restrict p, size_t n, float clip,
                            float scale, float l2) {
  if (clip > 0) {
    const float lo = -clip;
    for (size_t i = 0; i < n; i++) {
      float v = g[i];
      v = v < lo ? lo : v; /* comparisons keep NaN (fminf/fmaxf would drop it) */
      v = v > clip ? clip : v;
      out[i] = v * scale;
    }
  } else {
    for (size_t i = 0; i < n; i++) out[i] = g[i] * scale;
  }
  if (l2 != 0)
    for (size_t i = 0; i < n; i++) out[i] = out[i] + l2 * p[i];
}

double rlx_optim_sum_squares(const float *restrict g, size_t n, float clip) {
  double s = 0;
  if (clip > 0) {
    const float lo = -clip;
    for (size_t i = 0; i < n; i++) {
      float v = g[i];
      v = v < lo ? lo : v;
      v = v > clip ? clip : v;
      s += (double)v * v;
    }
  } else {
    for (size_t i = 0; i < n; i++) s += (double)g[i] * g[i];
  }
  return s;
}

void rlx_optim_scale(float *restrict p, size_t n, float factor) {
  for (size_t i = 0; i < n; i++) p[i] *= factor;
}

void rlx_optim_axpy(float *restrict p, const float *restrict u, size_t n, float lr) {
  const float a = -lr;
  for (size_t i = 0; i < n; i++) p[i] = p[i] + a * u[i];
}

void rlx_optim_sgd(float *restrict p, const float *restrict d, float *restrict buf, size_t n, float lr, float momentum,
                   float one_minus_dampening, bool nesterov, bool first) {
  const float a = -lr;
  if (!buf) {
    for (size_t i = 0; i < n; i++) p[i] = p[i] + a * d[i];
    return;
  }
  if (first) {
    for (size_t i = 0; i < n; i++) buf[i] = d[i];
  } else {
    for (size_t i = 0; i < n; i++) buf[i] = buf[i] * momentum + one_minus_dampening * d[i];
  }
  if (nesterov) {
    for (size_t i = 0; i < n; i++) {
      float u = d[i] + momentum * buf[i];
      p[i] = p[i] + a * u;
    }
  } else {
    for (size_t i = 0; i < n; i++) p[i] = p[i] + a * buf[i];
  }
}

void rlx_optim_adam(float *restrict p, const float *restrict g, float *restrict m, float *restrict v,
                    float *restrict vmax, size_t n, float beta1, float c1, float beta2, float c2, float step_size,
                    float bc2_sqrt, float eps) {
  const float a = -step_size;
  for (size_t i = 0; i < n; i++) {
    m[i] = m[i] * beta1 + c1 * g[i];
    v[i] = v[i] * beta2 + c2 * (g[i] * g[i]);
  }
  if (vmax) {
    for (size_t i = 0; i < n; i++) {
      vmax[i] = v[i] > vmax[i] ? v[i] : vmax[i];
      float denom = sqrtf(vmax[i]) / bc2_sqrt + eps;
      p[i] = p[i] + a * (m[i] / denom);
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      float denom = sqrtf(v[i]) / bc2_sqrt + eps;
      p[i] = p[i] + a * (m[i] / denom);
    }
  }
}

void rlx_optim_lion(float *restrict p, const float *restrict g, float *restrict m, size_t n, float lr, float decay,
                    float beta1, float c1, float beta2, float c2) {
  for (size_t i = 0; i < n; i++) {
    float c = m[i] * beta1 + c1 * g[i];
    float s = (float)(c > 0) - (float)(c < 0); /* sign, 0 at 0 */
    s = c != c ? c : s;                        /* NaN stays NaN (one select: vectorises) */
    p[i] = p[i] * decay - lr * s;
    m[i] = m[i] * beta2 + c2 * g[i];
  }
}

void rlx_optim_rmsprop(float *restrict p, const float *restrict g, float *restrict sq, float *restrict ga,
                       float *restrict buf, size_t n, float lr, float alpha, float c, float eps, float momentum) {
  const float a = -lr;
  for (size_t i = 0; i < n; i++) sq[i] = sq[i] * alpha + c * (g[i] * g[i]);
  if (ga) {
    for (size_t i = 0; i < n; i++) ga[i] = ga[i] * alpha + c * g[i];
    if (buf) {
      for (size_t i = 0; i < n; i++) {
        float var = sq[i] - ga[i] * ga[i];
        float avg = sqrtf(var > 0 ? var : 0) + eps;
        buf[i] = buf[i] * momentum + g[i] / avg;
        p[i] = p[i] + a * buf[i];
      }
    } else {
      for (size_t i = 0; i < n; i++) {
        float var = sq[i] - ga[i] * ga[i];
        float avg = sqrtf(var > 0 ? var : 0) + eps;
        p[i] = p[i] + a * (g[i] / avg);
      }
    }
  } else if (buf) {
    for (size_t i = 0; i < n; i++) {
      float avg = sqrtf(sq[i]) + eps;
      buf[i] = buf[i] * momentum + g[i] / avg;
      p[i] = p[i] + a * buf[i];
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      float avg = sqrtf(sq[i]) + eps;
      p[i] = p[i] + a * (g[i] / avg);
    }
  }
}

void rlx_optim_adagrad(float *restrict p, const float *restrict g, float *restrict sum, size_t n, float clr,
                       float eps) {
  const float a = -clr;
  for (size_t i = 0; i < n; i++) {
    sum[i] = sum[i] + g[i] * g[i];
    float std = sqrtf(sum[i]) + eps;
    p[i] = p[i] + a * (g[i] / std);
  }
}

void rlx_optim_muon_momentum(float *restrict u, const float *restrict g, float *restrict buf, size_t n, float beta,
                             float w, bool nesterov) {
  for (size_t i = 0; i < n; i++) buf[i] = buf[i] + w * (g[i] - buf[i]);
  if (nesterov) {
    for (size_t i = 0; i < n; i++) u[i] = g[i] + beta * (buf[i] - g[i]);
  } else {
    for (size_t i = 0; i < n; i++) u[i] = buf[i];
  }
}
