/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Internal interface of src/optim: the element-wise update loops (kernels.c) and Muon's
 * Newton-Schulz orthogonalisation (muon.c). Every loop runs over contiguous f32 arrays through
 * restrict pointers; the scalar coefficients (including every 1 - beta) are computed once per step
 * in double by optim.c and passed in as f32, the way torch passes Python floats to its f32
 * kernels. */
#ifndef RLX_OPTIM_INTERNAL_H
#define RLX_OPTIM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* out = clamp(g, -clip, clip) * scale (clip <= 0: no clamp), then out += l2 * p when l2 != 0.
 * NaN stays NaN. */
void rlx_optim_prepare_grad(float *restrict out, const float *restrict g, const float *restrict p, size_t n, float clip,
                            float scale, float l2);
/* Sum of squares of clamp(g, -clip, clip) (clip <= 0: no clamp), accumulated in double. */
double rlx_optim_sum_squares(const float *restrict g, size_t n, float clip);

/* p *= factor (decoupled weight decay). */
void rlx_optim_scale(float *restrict p, size_t n, float factor);

/* SGD: buf = first ? d : momentum * buf + (1 - dampening) * d; d' = nesterov ? d + momentum * buf
 * : buf (d' = d without momentum, buf may then be NULL); p += -lr * d'. */
void rlx_optim_sgd(float *restrict p, const float *restrict d, float *restrict buf, size_t n, float lr, float momentum,
                   float one_minus_dampening, bool nesterov, bool first);

/* Adam / AdamW moment update and step (c1 = 1 - beta1, c2 = 1 - beta2):
 * m = beta1 * m + c1 * g; v = beta2 * v + c2 * g * g;
 * vmax = max(vmax, v) when vmax != NULL (amsgrad) and used instead of v;
 * p += -step_size * m / (sqrt(v) / bc2_sqrt + eps). */
void rlx_optim_adam(float *restrict p, const float *restrict g, float *restrict m, float *restrict v,
                    float *restrict vmax, size_t n, float beta1, float c1, float beta2, float c2, float step_size,
                    float bc2_sqrt, float eps);

/* Lion (c1 = 1 - beta1, c2 = 1 - beta2): c = beta1 * m + c1 * g; p = p * decay - lr * sign(c)
 * (sign(0) = 0, sign(NaN) = NaN); m = beta2 * m + c2 * g. */
void rlx_optim_lion(float *restrict p, const float *restrict g, float *restrict m, size_t n, float lr, float decay,
                    float beta1, float c1, float beta2, float c2);

/* RMSprop (c = 1 - alpha): sq = alpha * sq + c * g * g; centered: ga = alpha * ga + c * g and
 * avg = sqrt(max(sq - ga * ga, 0)) + eps, else avg = sqrt(sq) + eps; with momentum (buf != NULL):
 * buf = momentum * buf + g / avg, p += -lr * buf; else p += -lr * g / avg. */
void rlx_optim_rmsprop(float *restrict p, const float *restrict g, float *restrict sq, float *restrict ga,
                       float *restrict buf, size_t n, float lr, float alpha, float c, float eps, float momentum);

/* Adagrad: sum += g * g; p += -clr * g / (sqrt(sum) + eps). */
void rlx_optim_adagrad(float *restrict p, const float *restrict g, float *restrict sum, size_t n, float clr, float eps);

/* Muon momentum (w = 1 - beta): buf += w * (g - buf); u = nesterov ? g + beta * (buf - g) : buf. */
void rlx_optim_muon_momentum(float *restrict u, const float *restrict g, float *restrict buf, size_t n, float beta,
                             float w, bool nesterov);

/* p += -lr * u. */
void rlx_optim_axpy(float *restrict p, const float *restrict u, size_t n, float lr);

/* Replaces the rows x cols matrix x (row-major) by its Newton-Schulz orthogonalisation:
 * x /= (||x||_F + 1e-7), then `steps` quintic iterations X = a X + (b G + c G^2) X with
 * G = X X^T (rows <= cols) or the transposed form X = a X + X (b G + c G^2) with G = X^T X
 * (rows > cols), (a, b, c) = (3.4445, -4.7750, 2.0315). y is a rows x cols workspace and g, h are
 * k x k workspaces, k = min(rows, cols); rows and cols fit in an int. Returns the buffer (x or y)
 * that holds the result. */
float *rlx_muon_orthogonalize(float *x, float *y, float *g, float *h, size_t rows, size_t cols, unsigned steps);

#define RLX_MUON_NS_A 3.4445f
#define RLX_MUON_NS_B (-4.7750f)
#define RLX_MUON_NS_C 2.0315f
#define RLX_MUON_NS_EPS 1e-7

#endif
