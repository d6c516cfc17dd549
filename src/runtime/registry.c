/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The backend registry: a small process-wide table from names to backends. The built-in CPU
 * backend registers itself on first use; registering an existing name replaces the entry (so a
 * tuned backend can override a built-in one). */
#include <pthread.h>
#include <string.h>

#include "backends/cpu/cpu_backend.h"
#include "rlx/backend.h"

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
    return rlx_errorf(RLX_ERR_INVALID_ARG, "backend registry is full (%d backends); cannot register '%s'",
                      MAX_BACKENDS, b->name);
  registry[n_registered++] = b;
  return RLX_OK;
}

static void register_builtins(void) {
  pthread_mutex_lock(&registry_lock);
  add_locked(rlx_cpu_backend()); /* cannot fail: the table starts empty */
  pthread_mutex_unlock(&registry_lock);
}

static void ensure_builtins(void) { pthread_once(&builtins_once, register_builtins); }

rlx_status rlx_backend_register(const rlx_backend *b) {
  if (!b || !b->name || !b->name[0])
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_backend_register: the backend needs a non-empty name");
  if (!b->compile)
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_backend_register: backend '%s' has no compile function", b->name);
  if ((b->n_claims && !b->claims) || (b->n_host_staged && !b->host_staged))
    return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_backend_register: backend '%s' has a claim count but no list",
                      b->name);
  for (uint32_t i = 0; i < b->n_claims; i++)
    if ((unsigned)b->claims[i] >= RLX_OP_COUNT)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_backend_register: backend '%s' claims unknown op kind %d",
                        b->name, (int)b->claims[i]);
  for (uint32_t i = 0; i < b->n_host_staged; i++)
    if ((unsigned)b->host_staged[i] >= RLX_OP_COUNT)
      return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_backend_register: backend '%s' host-stages unknown op kind %d",
                        b->name, (int)b->host_staged[i]);
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

void rlx_backend_claim_set(const rlx_backend *b, uint8_t claimed[RLX_OP_COUNT]) {
  memset(claimed, 0, RLX_OP_COUNT);
  if (!b) return;
  for (uint32_t i = 0; i < b->n_claims; i++)
    if ((unsigned)b->claims[i] < RLX_OP_COUNT) claimed[b->claims[i]] = 1;
}

bool rlx_backend_host_stages(const rlx_backend *b, rlx_op op) {
  if (!b) return false;
  for (uint32_t i = 0; i < b->n_host_staged; i++)
    if (b->host_staged[i] == op) return true;
  return false;
}
