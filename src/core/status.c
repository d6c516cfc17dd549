/* SPDX-License-Identifier: MIT OR Apache-2.0 */
#include "rlx/status.h"

#include <stdio.h>
#include <string.h>

#define RLX_ERR_CAP 16384
static _Thread_local char err_buf[RLX_ERR_CAP];

const char *rlx_status_text(rlx_status s) {
  static const char *const text[] = {
#define RLX_X(code, t) t,
      RLX_STATUS_LIST(RLX_X)
#undef RLX_X
  };
  if ((unsigned)s >= RLX_STATUS_COUNT) return "unknown status";
  return text[s];
}

const char *rlx_last_error(void) { return err_buf; }

void rlx_clear_error(void) { err_buf[0] = 0; }

rlx_status rlx_verrorf(rlx_status code, const char *fmt, va_list ap) {
  vsnprintf(err_buf, sizeof err_buf, fmt, ap);
  return code;
}

rlx_status rlx_errorf(rlx_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rlx_verrorf(code, fmt, ap);
  va_end(ap);
  return code;
}

rlx_status rlx_error_context(rlx_status code, const char *fmt, ...) {
  char prefix[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (n < 0) return code;
  /* No doubled layer names: when the message already starts with the prefix, or with its last
   * ": "-separated parts (a pass that names itself, "memory plan: ...", under the caller's
   * "compile: memory plan"), only the parts before them are added. */
  for (size_t at = 0;;) {
    size_t slen = strlen(prefix + at);
    if (strncmp(err_buf, prefix + at, slen) == 0 && err_buf[slen] == ':') {
      prefix[at] = 0;
      if (at == 0) return code;
      prefix[at - 2] = 0; /* the ": " before the overlap is added back below */
      break;
    }
    const char *next = strstr(prefix + at, ": ");
    if (!next) break;
    at = (size_t)(next - prefix) + 2;
  }
  size_t plen = strlen(prefix), mlen = strlen(err_buf);
  if (plen + 2 + mlen + 1 > sizeof err_buf) mlen = sizeof err_buf - plen - 3;
  memmove(err_buf + plen + 2, err_buf, mlen);
  memcpy(err_buf, prefix, plen);
  err_buf[plen] = ':';
  err_buf[plen + 1] = ' ';
  err_buf[plen + 2 + mlen] = 0;
  return code;
}
