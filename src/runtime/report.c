/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The dispatch report as text: one line per op kind present in the input graph (how it runs and
 * how many nodes had it), node counts before and after compilation, and the arena size against
 * the sum of all tensor sizes (what running without memory reuse would take). */
#include <string.h>

#include "rlx/session.h"
#include "strbuf.h"

const char *rlx_dispatch_path_name(rlx_dispatch_path p) {
  switch (p) {
  case RLX_PATH_NONE: return "none";
  case RLX_PATH_NATIVE: return "native";
  case RLX_PATH_DECOMPOSED: return "decomposed";
  case RLX_PATH_HOST_STAGED: return "host-staged";
  case RLX_PATH_UNSUPPORTED: return "unsupported";
  case RLX_PATH_RUNTIME: return "runtime control flow";
  }
  return "unknown";
}

rlx_status rlx_dispatch_report_format(const rlx_dispatch_report *r, const rlx_allocator *al, char **out, size_t *len) {
  if (!r || !out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_dispatch_report_format: NULL argument");
  *out = NULL;
  if (len) *len = 0;
  rlx_strbuf b;
  rlx_sb_init(&b, al);
  uint32_t per_path[RLX_PATH_RUNTIME + 1] = {0};
  rlx_sb_printf(&b, "%-28s %7s  %s\n", "op kind", "nodes", "path");
  for (int k = 0; k < RLX_OP_COUNT; k++) {
    if (r->path[k] == RLX_PATH_NONE && r->count[k] == 0) continue;
    rlx_dispatch_path p = r->path[k] <= RLX_PATH_RUNTIME ? (rlx_dispatch_path)r->path[k] : RLX_PATH_NONE;
    per_path[p] += r->count[k];
    rlx_sb_printf(&b, "%-28s %7u  %s\n", rlx_op_name((rlx_op)k), r->count[k], rlx_dispatch_path_name(p));
  }
  rlx_sb_printf(&b, "paths: %u native, %u decomposed, %u host-staged, %u unsupported nodes\n",
                per_path[RLX_PATH_NATIVE], per_path[RLX_PATH_DECOMPOSED], per_path[RLX_PATH_HOST_STAGED],
                per_path[RLX_PATH_UNSUPPORTED]);
  if (per_path[RLX_PATH_RUNTIME])
    rlx_sb_printf(&b, "control flow: %u nodes whose bodies the runtime runs on the backend\n",
                  per_path[RLX_PATH_RUNTIME]);
  if (r->steps > 1) rlx_sb_printf(&b, "steps: %u (segments, host-staged nodes, control flow)\n", r->steps);
  if (r->nodes_after > 0)
    rlx_sb_printf(&b, "nodes: %u before, %u after\n", r->nodes_before, r->nodes_after);
  else
    rlx_sb_printf(&b, "nodes: %u before (compilation did not finish)\n", r->nodes_before);
  if (r->arena_bytes == 0 && r->tensor_bytes == 0)
    rlx_sb_printf(&b, "memory: not planned\n");
  else if (r->tensor_bytes > 0)
    rlx_sb_printf(&b, "memory: arena %zu bytes, tensors %zu bytes without reuse (arena is %.1f%%)\n", r->arena_bytes,
                  r->tensor_bytes, 100.0 * (double)r->arena_bytes / (double)r->tensor_bytes);
  else
    rlx_sb_printf(&b, "memory: arena %zu bytes, tensors %zu bytes without reuse\n", r->arena_bytes, r->tensor_bytes);
  rlx_sb_printf(&b, "compile-ready: %s\n", per_path[RLX_PATH_UNSUPPORTED] ? "no" : "yes");
  size_t n;
  rlx_status st = rlx_sb_finish(&b, out, &n);
  if (st != RLX_OK) return rlx_errorf(st, "out of memory formatting the dispatch report");
  if (len) *len = n;
  return RLX_OK;
}
