/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The progress line of tools/progress.h. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, fileno, isatty */
#include "progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int terminal_width(FILE *f) {
  struct winsize ws;
  if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
  const char *c = getenv("COLUMNS");
  long n = c ? strtol(c, NULL, 10) : 0;
  return n >= 20 && n <= 1000 ? (int)n : 80;
}

void cli_progress_start(cli_progress *p, FILE *f, int tty, size_t total_steps, size_t per_step, const char *unit,
                        size_t every) {
  memset(p, 0, sizeof *p);
  p->f = f;
  p->tty = tty < 0 ? isatty(fileno(f)) != 0 : tty != 0;
  p->total = total_steps ? total_steps : 1;
  p->per_step = per_step;
  p->unit = unit ? unit : "items";
  p->every = every ? every : 1;
  p->width = p->tty ? terminal_width(f) : 0;
  p->t0 = now();
  p->last = -1;
}

void cli_progress_duration(double s, char *out, size_t cap) {
  if (!isfinite(s) || s < 0) s = 0;
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(out, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else if (t >= 60)
    snprintf(out, cap, "%ld:%02ld", t / 60, t % 60);
  else
    snprintf(out, cap, "%lds", t);
}

void cli_progress_update(cli_progress *p, size_t done, const char *label, const char *note, bool final) {
  double t = now();
  if (!final) {
    if (p->tty && p->last >= 0 && t - p->last < 0.1) return;
    if (!p->tty && done % p->every != 0) return;
  }
  p->last = t;
  if (done > p->total) done = p->total;
  double el = t - p->t0, rate = el > 0 ? (double)done * (double)p->per_step / el : 0;
  char when[32], tail[160];
  if (final) { /* the whole run's time instead of what is left */
    cli_progress_duration(el, when, sizeof when);
    snprintf(tail, sizeof tail, "%s%s%.0f %s/s  took %s", note ? note : "", note ? "  " : "", rate, p->unit, when);
  } else {
    if (done > 0)
      cli_progress_duration(el / (double)done * (double)(p->total - done), when, sizeof when);
    else
      snprintf(when, sizeof when, "?");
    snprintf(tail, sizeof tail, "%s%s%.0f %s/s  ETA %s", note ? note : "", note ? "  " : "", rate, p->unit, when);
  }
  int pct = (int)(100.0 * (double)done / (double)p->total);
  char counts[64];
  snprintf(counts, sizeof counts, "%3d%% %zu/%zu", pct, done, p->total);
  if (!p->tty) {
    fprintf(p->f, "%s  step %zu/%zu  %s\n", label ? label : "", done, p->total, tail);
    fflush(p->f);
    return;
  }
  /* label [=====>    ] 42% 123/937  note  rate  ETA, the bar taking what the rest leaves free */
  int fixed = (int)(label ? strlen(label) + 1 : 0) + 2 + 1 + (int)strlen(counts) + 2 + (int)strlen(tail);
  int bar = p->width - 1 - fixed;
  if (bar > 40) bar = 40;
  char line[1024];
  int n = snprintf(line, sizeof line, "\r%s%s", label ? label : "", label ? " " : "");
  if (bar >= 10) {
    int filled = (int)((double)bar * (double)done / (double)p->total);
    line[n++] = '[';
    for (int i = 0; i < bar && n < (int)sizeof line - 200; i++)
      line[n++] = i < filled ? '=' : (i == filled ? '>' : ' ');
    line[n++] = ']';
    line[n++] = ' ';
  }
  n += snprintf(line + n, sizeof line - (size_t)n, "%s  %s", counts, tail);
  if (n > p->width) n = p->width; /* a narrow terminal cuts the end rather than wrapping */
  if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
  line[n] = 0;
  fprintf(p->f, "%s\x1b[K%s", line, final ? "\n" : "");
  fflush(p->f);
}
