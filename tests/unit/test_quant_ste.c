/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The straight-through gradients of FakeQuantizeLSQ (spec ir-special §1.4), which finite
 * differences cannot check: rlx_grad of sum(LSQ(x, scale) * w) against the LSQ formulas computed
 * here — dx = w [|x / s| <= qmax], dscale[c] = sum over the channel of w psi(x / s) with
 * psi(z) = round(z) - z inside the range and +-qmax outside — with the backward ops and with their
 * primitive paths, per channel and with one shared scale. */
#include <math.h>
#include <stdio.h>

#include "ad_check.h"
#include "rlx_test.h"

static rlx_shape f64s(uint32_t r, const rlx_dim *d) { return rlx_shape_make(RLX_F64, r, d); }

static void check_lsq(int64_t bits, bool shared) {
  static const double xv[8] = {0.31, -1.9, 0.049, 0.93, 0.4, -0.71, 2.6, -0.05};
  static const double wv[8] = {1.0, -2.0, 0.5, 3.0, -1.5, 0.25, 0.75, -1.25};
  double sv[4] = {0.2, 0.15, 0.3, 0.1};
  double qmax = bits == 8 ? 127 : bits == 4 ? 7 : 1;
  uint32_t ns = shared ? 1 : 4;
  for (int mode = 0; mode < 2; mode++) {
    rlx_graph *g, *gr = NULL;
    CHECK_OK(rlx_graph_create(NULL, "lsq", &g));
    rlx_id x, s, q, w, p, l;
    CHECK_OK(rlx_param(g, "x", f64s(2, (rlx_dim[]){2, 4}), &x));
    CHECK_OK(rlx_param(g, "s", f64s(1, (rlx_dim[]){ns}), &s));
    rlx_attrs_FakeQuantizeLSQ a = {.bits = bits, .axis = -1};
    CHECK_OK(rlx_build_FakeQuantizeLSQ(g, (rlx_id[]){x, s}, 2, &a, NULL, &q));
    CHECK_OK(rlx_constant(g, f64s(2, (rlx_dim[]){2, 4}), wv, sizeof wv, &w));
    CHECK_OK(rlx_binary(g, RLX_BINOP_MUL, q, w, &p));
    CHECK_OK(rlx_reduce_axes(g, RLX_REDUCE_SUM, p, 2, (int64_t[]){0, 1}, false, &l));
    CHECK_OK(rlx_graph_set_outputs(g, &l, 1));
    rlx_grad_options o;
    rlx_grad_options_init(&o);
    o.use_backward_ops = mode == 0;
    CHECK_OK(rlx_grad_with_loss(g, (const char *[]){"x", "s"}, 2, &o, &gr));
    double loss = 0, dx[8], ds[4], one = 1, *outs[3] = {&loss, dx, ds};
    adt_value vals[3] = {{"x", f64s(2, (rlx_dim[]){2, 4}), (double *)xv},
                         {"s", f64s(1, (rlx_dim[]){ns}), sv},
                         {"d_output", f64s(0, NULL), &one}};
    adt_exe e;
    bool ran = gr && adt_compile(gr, "cpu", &e) == RLX_OK;
    if (ran) {
      ran = adt_set_params(&e, vals, 3) == RLX_OK && adt_run(&e, vals, 3, outs, 3) == RLX_OK;
      adt_free(&e);
    }
    CHECK_MSG(ran, "LSQ bits %lld%s: grad graph did not run: %s", (long long)bits, shared ? " shared" : "",
              rlx_last_error());
    if (ran) {
      double want_ds[4] = {0};
      for (int i = 0; i < 8; i++) {
        int c = i % 4;
        double sc = sv[shared ? 0 : c], z = xv[i] / sc;
        double wdx = fabs(z) <= qmax ? wv[i] : 0.0;
        double psi = z > qmax ? qmax : z < -qmax ? -qmax : nearbyint(z) - z;
        want_ds[shared ? 0 : c] += psi * wv[i];
        CHECK_MSG(adt_close(dx[i], wdx, 1e-12), "LSQ bits %lld mode %d: dx[%d] = %g, want %g", (long long)bits, mode, i,
                  dx[i], wdx);
      }
      for (uint32_t c = 0; c < ns; c++)
        CHECK_MSG(adt_close(ds[c], want_ds[c], 1e-12), "LSQ bits %lld mode %d: dscale[%u] = %g, want %g",
                  (long long)bits, mode, c, ds[c], want_ds[c]);
    }
    rlx_graph_free(gr);
    rlx_graph_free(g);
  }
}

int main(void) {
  check_lsq(2, false);
  check_lsq(4, false);
  check_lsq(8, true);
  check_lsq(2, true);
  return rlx_test_finish("quant_ste");
}
