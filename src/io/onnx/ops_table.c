/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The op table: {op_type, min opset, max opset, mapping function} rows live in one array per
 * family (ops_<family>.c); this file looks an op type up across all of them. docs/onnx.md lists
 * the rows. */
#include <string.h>

#include "io/onnx/onnx_internal.h"

const oi_op_entry *oi_op_find(const char *op_type) {
#define OI_X(f)                                   \
  for (uint32_t i = 0; i < oi_ops_##f##_len; i++) \
    if (strcmp(oi_ops_##f[i].op_type, op_type) == 0) return &oi_ops_##f[i];
  OI_FAMILY_TABLES(OI_X)
#undef OI_X
  return NULL;
}
