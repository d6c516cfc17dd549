/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Errors are values: every fallible rlx function returns an rlx_status (RLX_OK is zero) and
 * leaves a human-readable message in a thread-local buffer read with rlx_last_error(). */
#ifndef RLX_STATUS_H
#define RLX_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RLX_STATUS_LIST(X)                   \
  X(RLX_OK, "ok")                            \
  X(RLX_ERR_INVALID_ARG, "invalid argument") \
  X(RLX_ERR_OOM, "out of memory")            \
  X(RLX_ERR_PARSE, "parse error")            \
  X(RLX_ERR_VERIFY, "verification failed")   \
  X(RLX_ERR_SHAPE, "shape error")            \
  X(RLX_ERR_UNSUPPORTED, "unsupported")      \
  X(RLX_ERR_IO, "i/o error")                 \
  X(RLX_ERR_FORMAT, "malformed file")        \
  X(RLX_ERR_NOT_FOUND, "not found")          \
  X(RLX_ERR_OVERFLOW, "size overflow")       \
  X(RLX_ERR_RUNTIME, "runtime error")        \
  X(RLX_ERR_INTERNAL, "internal error")

typedef enum rlx_status {
#define RLX_X(code, text) code,
  RLX_STATUS_LIST(RLX_X)
#undef RLX_X
      RLX_STATUS_COUNT
} rlx_status;

/* Short name of a status code ("parse error"). */
const char *rlx_status_text(rlx_status s);

/* Message of the last error set on this thread ("" if none). */
const char *rlx_last_error(void);

/* Sets the thread's error message and returns `code` (so callers can `return rlx_errorf(...)`). */
rlx_status rlx_errorf(rlx_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
rlx_status rlx_verrorf(rlx_status code, const char *fmt, va_list ap);

/* Prepends "prefix: " to the current message, keeping the code (context on the way up). Parts
 * the message already starts with are not repeated: "compile: memory plan" on "memory plan: x"
 * gives "compile: memory plan: x", and "f.rlx" on "f.rlx: x" leaves it as it is. */
rlx_status rlx_error_context(rlx_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

void rlx_clear_error(void);

#define RLX_TRY(expr)                            \
  do {                                           \
    rlx_status rlx_try_s_ = (expr);              \
    if (rlx_try_s_ != RLX_OK) return rlx_try_s_; \
  } while (0)

#ifdef __cplusplus
}
#endif
#endif
