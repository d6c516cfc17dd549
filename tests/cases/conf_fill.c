/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Deterministic operand generation for the conformance table: the fills of cases.h (conf_fill).
 * Operand i of a case is generated from a splitmix64 stream seeded with a hash of the case name
 * and i, so every run and machine sees the same bytes. Included by tests/unit/test_conformance.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "core/elem.h"

/* ======================================================================================
 * Deterministic input generation
 * ====================================================================================== */

typedef struct crng {
  uint64_t s;
} crng;

static uint64_t crng_next(crng *r) {
  uint64_t z = (r->s += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}
static double crng_u01(crng *r) { return (double)(crng_next(r) >> 11) * 0x1p-53; }
static double crng_normal(crng *r) {
  double u1 = 1.0 - crng_u01(r), u2 = crng_u01(r); /* u1 in (0, 1] */
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static int64_t crng_int(crng *r, int64_t lo, int64_t hi) {
  uint64_t span = (uint64_t)(hi - lo) + 1;
  return lo + (int64_t)(crng_next(r) % span);
}

static uint64_t name_hash(const char *s, uint32_t salt) {
  uint64_t h = UINT64_C(0xcbf29ce484222325) ^ salt;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * UINT64_C(0x100000001b3);
  return h;
}

static size_t shape_numel(const rlx_shape *s) {
  size_t n = 1;
  for (uint32_t i = 0; i < s->rank; i++) n *= (size_t)s->dims[i];
  return n;
}

static rlx_shape operand_shape(const conf_operand *o) { return rlx_shape_make(o->dtype, o->rank, o->dims); }

static bool is_intlike(rlx_dtype t) { return rlx_dtype_is_int(t) || t == RLX_BOOL; }

/* Fills matrices (last two axes, n x n) of a special kind. */
static void fill_matrices(const conf_operand *o, double *v, size_t count, crng *r) {
  size_t n = o->rank >= 2 ? (size_t)o->dims[o->rank - 1] : 1;
  size_t m = o->rank >= 2 ? (size_t)o->dims[o->rank - 2] : 1;
  size_t per = n * m, batches = per ? count / per : 0;
  double *tmp = calloc(per ? per : 1, sizeof(double));
  if (!tmp) return;
  for (size_t b = 0; b < batches; b++) {
    double *a = v + b * per;
    for (size_t i = 0; i < per; i++) tmp[i] = crng_normal(r);
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++) {
        double x = 0;
        switch (o->fill) {
        case CF_SPD:
          for (size_t k = 0; k < n; k++) x += tmp[i * n + k] * tmp[j * n + k];
          x = x / (double)n + (i == j ? (o->a ? o->a : 1.0) : 0.0);
          break;
        case CF_SYM: x = 0.5 * (tmp[i * n + j] + tmp[j * n + i]); break;
        default: /* CF_WELLCOND */ x = tmp[i * n + j] + (i == j ? (o->a ? o->a : (double)n) : 0.0); break;
        }
        a[i * n + j] = x;
      }
  }
  free(tmp);
}

/* Fills each line along `axis` with distinct integers from [0, bound). */
static void fill_perm(const conf_operand *o, double *v, crng *r) {
  uint32_t axis = (uint32_t)o->a;
  int64_t bound = (int64_t)o->b;
  size_t outer = 1, len = o->rank ? (size_t)o->dims[axis] : 1, inner = 1;
  for (uint32_t i = 0; i < axis && i < o->rank; i++) outer *= (size_t)o->dims[i];
  for (uint32_t i = axis + 1; i < o->rank; i++) inner *= (size_t)o->dims[i];
  int64_t *pool = calloc((size_t)(bound > 0 ? bound : 1), sizeof(int64_t));
  if (!pool) return;
  for (size_t a = 0; a < outer; a++)
    for (size_t c = 0; c < inner; c++) {
      for (int64_t k = 0; k < bound; k++) pool[k] = k;
      for (size_t j = 0; j < len; j++) {
        int64_t pick = crng_int(r, (int64_t)j, bound - 1); /* partial Fisher-Yates */
        int64_t t = pool[j];
        pool[j] = pool[pick];
        pool[pick] = t;
        v[(a * len + j) * inner + c] = (double)pool[j];
      }
    }
  free(pool);
}

/* Distinct k-tuples (k = last dim) inside the first k dims of `data`. */
static void fill_nd_unique(const conf_operand *o, const conf_operand *data, double *v, size_t count, crng *r) {
  size_t k = o->rank ? (size_t)o->dims[o->rank - 1] : 1, tuples = k ? count / k : 0, space = 1;
  for (size_t i = 0; i < k && i < data->rank; i++) space *= (size_t)data->dims[i];
  size_t *pool = calloc(space ? space : 1, sizeof(size_t));
  if (!pool) return;
  for (size_t i = 0; i < space; i++) pool[i] = i;
  for (size_t t = 0; t < tuples && t < space; t++) {
    size_t pick = t + (size_t)(crng_next(r) % (space - t)), tmp = pool[t];
    pool[t] = pool[pick];
    pool[pick] = tmp;
    size_t flat = pool[t];
    for (size_t j = k; j-- > 0;) {
      size_t d = (size_t)data->dims[j];
      v[t * k + j] = (double)(flat % d);
      flat /= d;
    }
  }
  free(pool);
}

static const double special_values[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.5};

/* Allocates and fills operand i of case c; returns NULL on OOM. */
static void *make_operand(const conf_case *c, uint32_t i) {
  const conf_operand *o = &c->in[i];
  rlx_shape s = operand_shape(o);
  size_t count = shape_numel(&s), esz = rlx_dtype_size(o->dtype);
  void *data = calloc(count ? count : 1, esz);
  double *v = calloc(count ? count : 1, sizeof(double));
  double *im = calloc(count ? count : 1, sizeof(double));
  if (!data || !v || !im) {
    free(data), free(v), free(im);
    return NULL;
  }
  crng r = {name_hash(c->name, i)};
  conf_fill fill = o->fill;
  double a = o->a, b = o->b;
  if (fill == CF_NORMAL && o->dtype == RLX_BOOL) fill = CF_BOOL;
  if (fill == CF_NORMAL && rlx_dtype_is_int(o->dtype) && a == 0 && b == 0) {
    fill = CF_INT;
    a = rlx_dtype_is_signed_int(o->dtype) ? -5 : 0;
    b = rlx_dtype_is_signed_int(o->dtype) ? 5 : 10;
  }
  switch (fill) {
  case CF_NORMAL:
    for (size_t k = 0; k < count; k++) v[k] = crng_normal(&r) * (a ? a : 1.0) + b;
    for (size_t k = 0; k < count; k++) im[k] = crng_normal(&r) * (a ? a : 1.0);
    break;
  case CF_UNIFORM:
    for (size_t k = 0; k < count; k++) v[k] = a + (b - a) * crng_u01(&r);
    break;
  case CF_INT:
    for (size_t k = 0; k < count; k++) v[k] = (double)crng_int(&r, (int64_t)a, (int64_t)b);
    break;
  case CF_SPECIAL: {
    size_t ns = sizeof special_values / sizeof special_values[0];
    for (size_t k = 0; k < count; k++) v[k] = k < ns ? special_values[k] : crng_normal(&r);
    /* shuffle so the specials meet different partners in broadcasts */
    for (size_t k = count; k > 1; k--) {
      size_t j = (size_t)(crng_next(&r) % k);
      double t = v[k - 1];
      v[k - 1] = v[j];
      v[j] = t;
    }
    break;
  }
  case CF_SPD:
  case CF_SYM:
  case CF_WELLCOND: fill_matrices(o, v, count, &r); break;
  case CF_PERM: fill_perm(o, v, &r); break;
  case CF_NDUNIQUE: fill_nd_unique(o, &c->in[(uint32_t)a], v, count, &r); break;
  case CF_CONST:
    for (size_t k = 0; k < count; k++) v[k] = a;
    break;
  case CF_ARANGE:
    for (size_t k = 0; k < count; k++) v[k] = a + (b ? b : 1.0) * (double)k;
    break;
  case CF_BOOL:
    for (size_t k = 0; k < count; k++) v[k] = (double)(crng_next(&r) & 1);
    break;
  case CF_RAMP: {
    size_t last = o->rank ? (size_t)o->dims[o->rank - 1] : 1;
    for (size_t k = 0; k < count; k++) v[k] = a + b * (double)(k % (last ? last : 1));
    break;
  }
  }
  for (size_t k = 0; k < count; k++) {
    if (rlx_dtype_class_of(o->dtype) == RLX_CLASS_COMPLEX)
      rlx_elem_set_c(data, o->dtype, k, v[k], im[k]);
    else if (is_intlike(o->dtype))
      rlx_elem_set_i64(data, o->dtype, k, (int64_t)v[k]);
    else
      rlx_elem_set(data, o->dtype, k, v[k]);
  }
  free(v);
  free(im);
  return data;
}
