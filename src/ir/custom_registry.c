/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The registry of Custom ops (include/rlx/custom.h): a process-global list of ops, each with a
 * list of (backend name -> kernel pointer + user data). Lookups copy what they return out under
 * the lock, so a concurrent unregister never leaves a caller with a dangling entry (the function
 * pointers and user data themselves are the caller's to keep alive). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/custom.h"
#include "rlx/status.h"

typedef struct custom_kernel {
  char *backend;
  rlx_custom_fn_ptr fn;
  void *user;
} custom_kernel;

typedef struct custom_op {
  rlx_custom_op_desc d; /* d.name owned */
  custom_kernel *k;
  uint32_t n_k, cap_k;
} custom_op;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static custom_op *reg_ops;
static uint32_t reg_n, reg_cap;

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

/* Index of op `name`, or -1. Caller holds the lock. */
static int64_t find_op(const char *name) {
  for (uint32_t i = 0; i < reg_n; i++)
    if (strcmp(reg_ops[i].d.name, name) == 0) return i;
  return -1;
}

static rlx_status need_name(const char *name, const char *what) {
  if (!name || !*name) return rlx_errorf(RLX_ERR_INVALID_ARG, "custom op registry: %s needs a non-empty name", what);
  return RLX_OK;
}

rlx_status rlx_custom_register(const rlx_custom_op_desc *desc) {
  if (!desc) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_custom_register: desc is NULL");
  RLX_TRY(need_name(desc->name, "rlx_custom_register"));
  rlx_status s = RLX_OK;
  pthread_mutex_lock(&reg_lock);
  if (find_op(desc->name) >= 0) {
    s = rlx_errorf(RLX_ERR_INVALID_ARG, "custom op \"%s\" is already registered (unregister it first)", desc->name);
  } else if (reg_n == reg_cap) {
    uint32_t cap = reg_cap ? 2 * reg_cap : 8;
    custom_op *p = realloc(reg_ops, cap * sizeof *p);
    if (!p)
      s = rlx_errorf(RLX_ERR_OOM, "custom op registry: out of memory");
    else
      reg_ops = p, reg_cap = cap;
  }
  if (s == RLX_OK) {
    custom_op *o = &reg_ops[reg_n];
    memset(o, 0, sizeof *o);
    o->d = *desc;
    o->d.name = dup_str(desc->name);
    if (!o->d.name)
      s = rlx_errorf(RLX_ERR_OOM, "custom op registry: out of memory");
    else
      reg_n++;
  }
  pthread_mutex_unlock(&reg_lock);
  return s;
}

rlx_status rlx_custom_unregister(const char *name) {
  RLX_TRY(need_name(name, "rlx_custom_unregister"));
  pthread_mutex_lock(&reg_lock);
  int64_t i = find_op(name);
  if (i >= 0) {
    custom_op *o = &reg_ops[i];
    for (uint32_t k = 0; k < o->n_k; k++) free(o->k[k].backend);
    free(o->k);
    free((char *)o->d.name);
    reg_ops[i] = reg_ops[--reg_n];
    if (reg_n == 0) {
      free(reg_ops);
      reg_ops = NULL;
      reg_cap = 0;
    }
  }
  pthread_mutex_unlock(&reg_lock);
  if (i < 0) return rlx_errorf(RLX_ERR_NOT_FOUND, "custom op \"%s\" is not registered", name);
  return RLX_OK;
}

bool rlx_custom_lookup(const char *name, rlx_custom_op_desc *out) {
  if (!name) return false;
  pthread_mutex_lock(&reg_lock);
  int64_t i = find_op(name);
  if (i >= 0 && out) *out = reg_ops[i].d;
  pthread_mutex_unlock(&reg_lock);
  return i >= 0;
}

rlx_status rlx_custom_register_kernel(const char *name, const char *backend, rlx_custom_fn_ptr fn, void *user) {
  RLX_TRY(need_name(name, "rlx_custom_register_kernel"));
  RLX_TRY(need_name(backend, "the backend of rlx_custom_register_kernel"));
  if (!fn) return rlx_errorf(RLX_ERR_INVALID_ARG, "custom op \"%s\": the %s kernel is NULL", name, backend);
  rlx_status s = RLX_OK;
  pthread_mutex_lock(&reg_lock);
  int64_t i = find_op(name);
  if (i < 0) {
    s = rlx_errorf(RLX_ERR_NOT_FOUND,
                   "custom op \"%s\" is not registered: call rlx_custom_register before adding "
                   "its %s kernel",
                   name, backend);
  } else {
    custom_op *o = &reg_ops[i];
    for (uint32_t k = 0; k < o->n_k && s == RLX_OK; k++)
      if (strcmp(o->k[k].backend, backend) == 0)
        s = rlx_errorf(RLX_ERR_INVALID_ARG, "custom op \"%s\" already has a %s kernel", name, backend);
    if (s == RLX_OK && o->n_k == o->cap_k) {
      uint32_t cap = o->cap_k ? 2 * o->cap_k : 4;
      custom_kernel *p = realloc(o->k, cap * sizeof *p);
      if (!p)
        s = rlx_errorf(RLX_ERR_OOM, "custom op registry: out of memory");
      else
        o->k = p, o->cap_k = cap;
    }
    if (s == RLX_OK) {
      char *b = dup_str(backend);
      if (!b)
        s = rlx_errorf(RLX_ERR_OOM, "custom op registry: out of memory");
      else
        o->k[o->n_k++] = (custom_kernel){.backend = b, .fn = fn, .user = user};
    }
  }
  pthread_mutex_unlock(&reg_lock);
  return s;
}

rlx_status rlx_custom_register_cpu_kernel(const char *name, rlx_custom_cpu_kernel_fn fn, void *user) {
  return rlx_custom_register_kernel(name, "cpu", (rlx_custom_fn_ptr)fn, user);
}

rlx_status rlx_custom_find_kernel(const char *name, const char *backend, rlx_custom_fn_ptr *fn, void **user) {
  *fn = NULL;
  if (user) *user = NULL;
  if (!name || !*name) return rlx_errorf(RLX_ERR_UNSUPPORTED, "a Custom op without a name cannot run");
  rlx_status s = RLX_OK;
  pthread_mutex_lock(&reg_lock);
  int64_t i = find_op(name);
  if (i < 0) {
    s = rlx_errorf(RLX_ERR_UNSUPPORTED,
                   "custom op \"%s\" is not registered (rlx_custom_register, include/rlx/custom.h)", name);
  } else {
    const custom_op *o = &reg_ops[i];
    for (uint32_t k = 0; k < o->n_k && !*fn; k++)
      if (strcmp(o->k[k].backend, backend) == 0) {
        *fn = o->k[k].fn;
        if (user) *user = o->k[k].user;
      }
    if (!*fn)
      s = rlx_errorf(RLX_ERR_UNSUPPORTED, "custom op \"%s\" has no %s kernel (rlx_custom_register_kernel)", name,
                     backend);
  }
  pthread_mutex_unlock(&reg_lock);
  return s;
}

rlx_status rlx_custom(rlx_graph *g, const char *name, const rlx_id *inputs, uint32_t n_inputs, const void *attrs,
                      size_t attrs_len, const rlx_shape *declared, rlx_id *out) {
  rlx_attrs_Custom a = {.name = name, .num_inputs = n_inputs, .attrs = {.p = (uint8_t *)attrs, .n = attrs_len}};
  return rlx_graph_add(g, RLX_OP_Custom, inputs, n_inputs, &a, declared, NULL, out);
}
