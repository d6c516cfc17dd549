/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The loss curve of `rlx train` as a hand-written SVG line chart: the per-step loss (thin, light)
 * and its moving average (thick), x axis = step, y axis = loss from 0, "nice" ticks (1, 2 or 5
 * times a power of ten) with grid lines, axis labels, a legend and dashed epoch boundaries. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_internal.h"

#define W 900.0
#define H 480.0
#define ML 70.0 /* margins: left, right, top, bottom */
#define MR 20.0
#define MT 40.0
#define MB 60.0

/* A tick spacing of 1, 2 or 5 times a power of ten giving about `n` intervals over `range`. */
static double nice_step(double range, int n) {
  if (!(range > 0)) return 1;
  double raw = range / n, p = pow(10.0, floor(log10(raw))), f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/* Formats a tick value without trailing zeros ("0.25", "1000"). */
static void tick_label(char *buf, size_t cap, double v, double step) {
  int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
  if (dec > 6) dec = 6;
  snprintf(buf, cap, "%.*f", dec, v);
}

rlx_status train_write_loss_svg(const char *path, const float *loss, size_t n, size_t steps_per_epoch,
                                const char *title) {
  FILE *f = fopen(path, "w");
  if (!f) return rlx_errorf(RLX_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
  double ymax = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(loss[i]) && loss[i] > ymax) ymax = loss[i];
  if (!(ymax > 0)) ymax = 1;
  double ystep = nice_step(ymax, 6);
  ymax = ceil(ymax / ystep) * ystep;
  double xmax = n > 1 ? (double)(n - 1) : 1;
  double xstep = nice_step(xmax, 8);
  if (xstep < 1) xstep = 1;          /* steps are whole numbers */
  xmax = ceil(xmax / xstep) * xstep; /* both axes end on a tick */
  double pw = W - ML - MR, ph = H - MT - MB;
#define PX(i) (ML + (double)(i) / xmax * pw)
#define PY(v) (MT + ph - (double)(v) / ymax * ph)

  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "font-family=\"sans-serif\" font-size=\"12\">\n",
          W, H, W, H);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(f, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">", W / 2);
  for (const char *c = title; c && *c; c++) { /* XML-escape the title */
    if (*c == '<')
      fputs("&lt;", f);
    else if (*c == '>')
      fputs("&gt;", f);
    else if (*c == '&')
      fputs("&amp;", f);
    else
      fputc(*c, f);
  }
  fprintf(f, "</text>\n");

  /* Grid and ticks. */
  fprintf(f, "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n");
  int ny = (int)llround(ymax / ystep), nx = (int)llround(xmax / xstep);
  for (int k = 0; k <= ny; k++) {
    double v = k * ystep;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", ML, PY(v), ML + pw, PY(v));
  }
  for (int k = 0; k <= nx; k++) {
    double s = k * xstep;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", PX(s), MT, PX(s), MT + ph);
  }
  fprintf(f, "</g>\n<g fill=\"#333\">\n");
  char lb[32];
  for (int k = 0; k <= ny; k++) {
    double v = k * ystep;
    tick_label(lb, sizeof lb, v, ystep);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", ML - 8, PY(v) + 4, lb);
  }
  for (int k = 0; k <= nx; k++) {
    double s = k * xstep;
    tick_label(lb, sizeof lb, s, xstep);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", PX(s), MT + ph + 18, lb);
  }
  fprintf(f, "</g>\n");

  /* Epoch boundaries. */
  if (steps_per_epoch && n > steps_per_epoch) {
    fprintf(f, "<g stroke=\"#999\" stroke-dasharray=\"4 4\">\n");
    for (size_t e = steps_per_epoch; e < n; e += steps_per_epoch)
      fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", PX(e), MT, PX(e), MT + ph);
    fprintf(f, "</g>\n");
  }

  /* Axes and their labels. */
  fprintf(f, "<g stroke=\"#333\" stroke-width=\"1.5\">\n");
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", ML, MT + ph, ML + pw, MT + ph);
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", ML, MT, ML, MT + ph);
  fprintf(f, "</g>\n");
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"14\">training step</text>\n", ML + pw / 2,
          H - 16);
  fprintf(f,
          "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"14\" transform=\"rotate(-90 18 %.1f)\">"
          "cross-entropy loss</text>\n",
          MT + ph / 2, MT + ph / 2);

  /* The curves: per-step loss and its trailing moving average. */
  size_t win = n / 50 < 10 ? 10 : n / 50;
  if (n) {
    fprintf(f, "<polyline fill=\"none\" stroke=\"#9ecae1\" stroke-width=\"1\" points=\"");
    for (size_t i = 0; i < n; i++) {
      double v = isfinite(loss[i]) ? fmin(loss[i], ymax) : ymax;
      fprintf(f, "%s%.1f,%.1f", i ? " " : "", PX(i), PY(v));
    }
    fprintf(f, "\"/>\n");
    fprintf(f, "<polyline fill=\"none\" stroke=\"#08519c\" stroke-width=\"2.5\" points=\"");
    double sum = 0;
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++) {
      double v = isfinite(loss[i]) ? fmin(loss[i], ymax) : ymax;
      sum += v;
      cnt++;
      if (i >= win) {
        double old = isfinite(loss[i - win]) ? fmin(loss[i - win], ymax) : ymax;
        sum -= old;
        cnt--;
      }
      fprintf(f, "%s%.1f,%.1f", i ? " " : "", PX(i), PY(sum / (double)cnt));
    }
    fprintf(f, "\"/>\n");
  }

  /* Legend. */
  double lx = ML + pw - 220, ly = MT + 12;
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"210\" height=\"44\" fill=\"white\" stroke=\"#ccc\"/>\n", lx, ly - 2);
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#9ecae1\" stroke-width=\"2\"/>\n", lx + 8,
          ly + 10, lx + 36, ly + 10);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">loss per step (batch)</text>\n", lx + 44, ly + 14);
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#08519c\" stroke-width=\"2.5\"/>\n",
          lx + 8, ly + 30, lx + 36, ly + 30);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">moving average (%zu steps)</text>\n", lx + 44, ly + 34, win);
  fprintf(f, "</svg>\n");
#undef PX
#undef PY
  bool ok = !ferror(f);
  int e = errno;
  if (fclose(f) != 0) ok = false;
  if (!ok) {
    remove(path);
    return rlx_errorf(RLX_ERR_IO, "%s: cannot write: %s", path, strerror(e));
  }
  return RLX_OK;
}
