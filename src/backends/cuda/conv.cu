/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Direct convolution kernels (Conv, Conv3d, ConvTranspose2d/3d) and pooling: one thread per
 * output element, sums in double, one rounding to the output dtype (the CPU reference's
 * numerics). The baseline, and what runs where cuDNN does not (dnn.cu: symmetric-padding
 * convolutions and their gradients run there). */
#include "backends/cuda/dev.cuh"

__global__ void conv_kernel(int t, const void *x, const void *w, void *y, rlx_cu_conv_geom g) {
  int64_t P = g.out[0] * g.out[1] * g.out[2], total = g.N * g.Cout * P;
  int64_t cg = g.Cin / g.G, og = g.Cout / g.G, Pin = g.in[0] * g.in[1] * g.in[2], kv = g.k[0] * g.k[1] * g.k[2];
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t p = e % P, oc = (e / P) % g.Cout, b = e / (P * g.Cout);
    int64_t ow = p % g.out[2], oh = (p / g.out[2]) % g.out[1], od = p / (g.out[2] * g.out[1]);
    int64_t gr = oc / og;
    double acc = 0;
    for (int64_t c = 0; c < cg; c++) {
      int64_t xb = (b * g.Cin + gr * cg + c) * Pin, wb = (oc * cg + c) * kv;
      for (int64_t kd = 0; kd < g.k[0]; kd++) {
        int64_t id = od * g.s[0] + kd * g.d[0] - g.pb[0];
        if (id < 0 || id >= g.in[0]) continue;
        for (int64_t kh = 0; kh < g.k[1]; kh++) {
          int64_t ih = oh * g.s[1] + kh * g.d[1] - g.pb[1];
          if (ih < 0 || ih >= g.in[1]) continue;
          for (int64_t kw = 0; kw < g.k[2]; kw++) {
            int64_t iw = ow * g.s[2] + kw * g.d[2] - g.pb[2];
            if (iw < 0 || iw >= g.in[2]) continue;
            acc += ld_f(x, t, xb + (id * g.in[1] + ih) * g.in[2] + iw) *
                   ld_f(w, t, wb + (kd * g.k[1] + kh) * g.k[2] + kw);
          }
        }
      }
    }
    st_f(y, t, e, acc);
  }
}

/* y[b, gr*og + oc, o] = sum over ic, k with o = i*s - pb + k*d of x[b, gr*cg + ic, i] *
 * w[gr*cg + ic, oc, k] */
__global__ void conv_t_kernel(int t, const void *x, const void *w, void *y, rlx_cu_conv_geom g) {
  int64_t P = g.out[0] * g.out[1] * g.out[2], total = g.N * g.Cout * P;
  int64_t cg = g.Cin / g.G, og = g.Cout / g.G, Pin = g.in[0] * g.in[1] * g.in[2], kv = g.k[0] * g.k[1] * g.k[2];
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t p = e % P, oc_all = (e / P) % g.Cout, b = e / (P * g.Cout);
    int64_t o[3] = {p / (g.out[2] * g.out[1]), (p / g.out[2]) % g.out[1], p % g.out[2]};
    int64_t gr = oc_all / og, oc = oc_all % og;
    double acc = 0;
    for (int64_t kd = 0; kd < g.k[0]; kd++) {
      int64_t nd = o[0] + g.pb[0] - kd * g.d[0];
      if (nd < 0 || nd % g.s[0]) continue;
      int64_t id = nd / g.s[0];
      if (id >= g.in[0]) continue;
      for (int64_t kh = 0; kh < g.k[1]; kh++) {
        int64_t nh = o[1] + g.pb[1] - kh * g.d[1];
        if (nh < 0 || nh % g.s[1]) continue;
        int64_t ih = nh / g.s[1];
        if (ih >= g.in[1]) continue;
        for (int64_t kw = 0; kw < g.k[2]; kw++) {
          int64_t nw = o[2] + g.pb[2] - kw * g.d[2];
          if (nw < 0 || nw % g.s[2]) continue;
          int64_t iw = nw / g.s[2];
          if (iw >= g.in[2]) continue;
          int64_t ip = (id * g.in[1] + ih) * g.in[2] + iw, kk = (kd * g.k[1] + kh) * g.k[2] + kw;
          for (int64_t ic = 0; ic < cg; ic++)
            acc += ld_f(x, t, (b * g.Cin + gr * cg + ic) * Pin + ip) * ld_f(w, t, ((gr * cg + ic) * og + oc) * kv + kk);
        }
      }
    }
    st_f(y, t, e, acc);
  }
}

extern "C" rlx_status rlx_cu_conv(rlx_cu_ctx *c, int transposed, int dtype, const void *x, const void *w, void *y,
                                  const rlx_cu_conv_geom *g) {
  int64_t total = g->N * g->Cout * g->out[0] * g->out[1] * g->out[2];
  if (total == 0) return RLX_OK;
  const int threads = 128;
  if (transposed) conv_t_kernel<<<cu_blocks(total, threads), threads, 0, c->stream>>>(dtype, x, w, y, *g);
  else conv_kernel<<<cu_blocks(total, threads), threads, 0, c->stream>>>(dtype, x, w, y, *g);
  return cu_launch_status("convolution kernel");
}

struct pool_geom {
  int64_t NC, H, W, Ho, Wo, k[2], s[2], pb[2];
};

__global__ void pool_kernel(int is_max, int t, const void *x, void *y, pool_geom g) {
  int64_t total = g.NC * g.Ho * g.Wo;
  bool ints = dt_is_int(t);
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    int64_t ow = e % g.Wo, oh = (e / g.Wo) % g.Ho, pc = e / (g.Wo * g.Ho);
    double acc = is_max ? -INFINITY : 0.0;
    int64_t iacc = is_max ? INT64_MIN : 0;
    for (int64_t i = 0; i < g.k[0]; i++) {
      int64_t ih = oh * g.s[0] + i - g.pb[0];
      if (ih < 0 || ih >= g.H) continue;
      for (int64_t j = 0; j < g.k[1]; j++) {
        int64_t iw = ow * g.s[1] + j - g.pb[1];
        if (iw < 0 || iw >= g.W) continue;
        int64_t off = (pc * g.H + ih) * g.W + iw;
        if (ints) {
          int64_t v = ld_i(x, t, off);
          iacc = is_max ? (v > iacc ? v : iacc) : sat_add(iacc, v);
        } else {
          double v = ld_f(x, t, off);
          acc = is_max ? ((v != v || acc != acc) ? nan("") : (v > acc ? v : acc)) : acc + v;
        }
      }
    }
    if (ints) st_i(y, t, e, is_max ? iacc : iacc / (g.k[0] * g.k[1]));
    else st_f(y, t, e, is_max ? acc : acc / (double)(g.k[0] * g.k[1]));
  }
}

extern "C" rlx_status rlx_cu_pool(rlx_cu_ctx *c, int is_max, int dtype, const void *x, void *y, int64_t NC, int64_t H,
                                  int64_t W, int64_t Ho, int64_t Wo, const int64_t k[2], const int64_t s[2],
                                  const int64_t pb[2]) {
  pool_geom g = {NC, H, W, Ho, Wo, {k[0], k[1]}, {s[0], s[1]}, {pb[0], pb[1]}};
  int64_t total = NC * Ho * Wo;
  if (total == 0) return RLX_OK;
  const int threads = 256;
  pool_kernel<<<cu_blocks(total, threads), threads, 0, c->stream>>>(is_max, dtype, x, y, g);
  return cu_launch_status("pool kernel");
}

/* One thread per line: floats in double with Neumaier compensation, integers saturating,
 * complex in double. */
__global__ void cumsum_kernel(int t, const void *x, int64_t outer, int64_t len, int64_t inner, int exclusive, void *out) {
  int64_t lines = outer * inner;
  for (int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; l < lines; l += (int64_t)gridDim.x * blockDim.x) {
    int64_t o = l / inner, i = l % inner;
    double s = 0, comp = 0, im = 0;
    int64_t is = 0;
    bool cx = dt_is_complex(t), in = dt_is_int(t);
    for (int64_t k = 0; k < len; k++) {
      int64_t at = o * len * inner + k * inner + i;
      double vr = 0, vi = 0;
      int64_t vint = 0;
      if (cx) ld_c(x, t, at, &vr, &vi);
      else if (in) vint = ld_i(x, t, at);
      else vr = ld_f(x, t, at);
      if (!exclusive) {
        if (cx) { s += vr; im += vi; }
        else if (in) is = sat_add(is, vint);
        else {
          double t2 = s + vr;
          if (fabs(s) >= fabs(vr)) comp += (s - t2) + vr;
          else comp += (vr - t2) + s;
          s = t2;
        }
      }
      if (cx) st_c(out, t, at, s, im);
      else if (in) st_i(out, t, at, is);
      else st_f(out, t, at, (isinf(s) || s != s) ? s : s + comp);
      if (exclusive) {
        if (cx) { s += vr; im += vi; }
        else if (in) is = sat_add(is, vint);
        else {
          double t2 = s + vr;
          if (fabs(s) >= fabs(vr)) comp += (s - t2) + vr;
          else comp += (vr - t2) + s;
          s = t2;
        }
      }
    }
  }
}

extern "C" rlx_status rlx_cu_cumsum(rlx_cu_ctx *c, int dtype, const void *x, int64_t outer, int64_t len, int64_t inner,
                                    int exclusive, void *out) {
  int64_t lines = outer * inner;
  if (lines == 0 || len == 0) return RLX_OK;
  const int threads = 128;
  cumsum_kernel<<<cu_blocks(lines, threads), threads, 0, c->stream>>>(dtype, x, outer, len, inner, exclusive, out);
  return cu_launch_status("cumsum kernel");
}
