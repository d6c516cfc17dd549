/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The backend registry: a process-wide table of backend descriptors. The backends compiled into
 * this build are listed by CMake in the generated runtime/backends.def (one RLX_BACKEND(name)
 * row per backend; each defines `const rlx_backend *rlx_<name>_backend(void)`), and are
 * registered on first use. The runtime includes no backend header. Registering an existing name
 * replaces the entry (so a tuned backend can override a built-in one). */
#include <pthread.h>
#include <string.h>

#include "rlx/backend.h"
#include "strbuf.h"

#define RLX_BACKEND(name) const rlx_backend *rlx_##name##_backend(void);
#include "runtime/backends.def"
#undef RLX_BACKEND

typedef const rlx_backend *(*backend_getter)(void);
static const backend_getter builtins[] = {
#define RLX_BACKEND(name) rlx_##name##_backend,
#include "runtime/backends.def"
#undef RLX_BACKEND
};

#define MAX_BACKENDS 32

static const rlx_backend *registry[MAX_BACKENDS];
static uint32_t n_registered;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;

static rlx_status add_locked(const rlx_backend *b) {
  for (uint32_t i = 0; i < n_registered; i++) {
    if (strcmp(registry[i]->name, b->name) == 0) {
      registry[i] = b;
      return RLX_OK;
    }
  }
  if (n_registered == MAX_BACKENDS)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "backend registry is full (%d backends); cannot register '%s'", MAX_BACKENDS,
                      b->name);
  registry[n_registered++] = b;
  return RLX_OK;
}

static void register_builtins(void) {
  pthread_mutex_lock(&registry_lock);
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
    const rlx_backend *b = builtins[i]();
    if (b) add_locked(b); /* cannot fail: fewer built-ins than slots */
  }
  pthread_mutex_unlock(&registry_lock);
}

static void ensure_builtins(void) { pthread_once(&builtins_once, register_builtins); }

static rlx_status check_list(const rlx_backend *b, const rlx_op *list, uint32_t n, const char *what,
                             const uint8_t *claimed) {
  if (n && !list)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_backend_register: backend '%s' has a %s count but no list", b->name,
                      what);
  for (uint32_t i = 0; i < n; i++) {
    if ((unsigned)list[i] >= RLX_OP_COUNT)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_backend_register: backend '%s' lists unknown op kind %d in %s",
                        b->name, (int)list[i], what);
    if (claimed && !claimed[list[i]])
      return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_backend_register: backend '%s' lists %s in %s but does not claim it",
                        b->name, rlx_op_name(list[i]), what);
  }
  return RLX_OK;
}

rlx_status rlx_backend_register(const rlx_backend *b) {
  if (!b || !b->name || !b->name[0])
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_backend_register: the backend needs a non-empty name");
  if (!b->compile)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_backend_register: backend '%s' has no compile function", b->name);
  RLX_TRY(check_list(b, b->claims, b->n_claims, "claims", NULL));
  uint8_t claimed[RLX_OP_COUNT];
  rlx_backend_claim_set(b, claimed);
  RLX_TRY(check_list(b, b->host_staged, b->n_host_staged, "host_staged", claimed));
  RLX_TRY(check_list(b, b->runtime_control, b->n_runtime_control, "runtime_control", claimed));
  for (uint32_t i = 0; i < b->n_runtime_control; i++) {
    rlx_op op = b->runtime_control[i];
    if (op != RLX_OP_If && op != RLX_OP_While && op != RLX_OP_Scan && op != RLX_OP_ScanBackward &&
        op != RLX_OP_ScanBackwardXs)
      return rlx_errorf(RLX_ERR_INVALID_ARG,
                        "rlx_backend_register: backend '%s' lists %s in runtime_control; only "
                        "If, While, Scan, ScanBackward and ScanBackwardXs have runtime drivers",
                        b->name, rlx_op_name(op));
  }
  ensure_builtins();
  pthread_mutex_lock(&registry_lock);
  rlx_status st = add_locked(b);
  pthread_mutex_unlock(&registry_lock);
  return st;
}

const rlx_backend *rlx_backend_find(const char *name) {
  if (!name) return NULL;
  ensure_builtins();
  const rlx_backend *found = NULL;
  pthread_mutex_lock(&registry_lock);
  for (uint32_t i = 0; i < n_registered && !found; i++)
    if (strcmp(registry[i]->name, name) == 0) found = registry[i];
  pthread_mutex_unlock(&registry_lock);
  return found;
}

uint32_t rlx_backend_count(void) {
  ensure_builtins();
  pthread_mutex_lock(&registry_lock);
  uint32_t n = n_registered;
  pthread_mutex_unlock(&registry_lock);
  return n;
}

const rlx_backend *rlx_backend_at(uint32_t i) {
  ensure_builtins();
  pthread_mutex_lock(&registry_lock);
  const rlx_backend *b = i < n_registered ? registry[i] : NULL;
  pthread_mutex_unlock(&registry_lock);
  return b;
}

const char *rlx_backend_names(void) {
  static _Thread_local char buf[512];
  size_t used = 0;
  buf[0] = 0;
  for (uint32_t i = 0; i < rlx_backend_count(); i++) {
    const char *name = rlx_backend_at(i)->name;
    size_t n = strlen(name);
    if (used + n + 3 >= sizeof buf) break;
    if (used) {
      memcpy(buf + used, ", ", 2);
      used += 2;
    }
    memcpy(buf + used, name, n + 1);
    used += n;
  }
  return buf;
}

void rlx_backend_claim_set(const rlx_backend *b, uint8_t claimed[RLX_OP_COUNT]) {
  memset(claimed, 0, RLX_OP_COUNT);
  if (!b) return;
  for (uint32_t i = 0; i < b->n_claims; i++)
    if ((unsigned)b->claims[i] < RLX_OP_COUNT) claimed[b->claims[i]] = 1;
}

static bool listed(const rlx_op *list, uint32_t n, rlx_op op) {
  for (uint32_t i = 0; i < n; i++)
    if (list[i] == op) return true;
  return false;
}

bool rlx_backend_host_stages(const rlx_backend *b, rlx_op op) {
  return b && listed(b->host_staged, b->n_host_staged, op);
}

bool rlx_backend_runtime_controls(const rlx_backend *b, rlx_op op) {
  return b && listed(b->runtime_control, b->n_runtime_control, op);
}
