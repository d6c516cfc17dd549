/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Progress of a long loop on stderr. On a terminal: one line redrawn in place at most 10 times a
 * second -- a label, a bar, percent, step counts, a caller's note (the loss), the rate and the
 * time left --, fitted to the terminal's width. Otherwise (a file, a pipe, CI logs): a plain line
 * every `every` steps and at the end, with the same numbers and no control characters. */
#ifndef RLX_CLI_PROGRESS_H
#define RLX_CLI_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct cli_progress {
  FILE *f;
  bool tty;         /* redraw one line in place */
  size_t total;     /* steps of the whole run */
  size_t per_step;  /* items (images) per step, for the rate */
  const char *unit; /* the items' unit for the rate, e.g. "img" */
  size_t every;     /* not a terminal: a line every `every` steps */
  double t0, last;  /* start, last redraw (seconds, monotonic) */
  int width;        /* terminal columns */
} cli_progress;

/* Starts the clock. `tty` < 0 asks isatty(fileno(f)); 0 / 1 force plain lines / the bar. */
void cli_progress_start(cli_progress *p, FILE *f, int tty, size_t total_steps, size_t per_step, const char *unit,
                        size_t every);

/* Reports that `done` of the total steps are finished. `label` leads the line ("epoch 1/3"),
 * `note` follows the counts ("loss 0.4123"; may be NULL). `final` forces a line and, on a
 * terminal, ends it. */
void cli_progress_update(cli_progress *p, size_t done, const char *label, const char *note, bool final);

/* "1:02:03", "4:05" or "7s" for a duration in seconds (cap bytes incl. NUL). */
void cli_progress_duration(double seconds, char *out, size_t cap);

#endif
