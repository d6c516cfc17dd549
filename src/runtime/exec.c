/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Running the steps of an executable (exec_internal.h), and every copy the runtime makes between
 * host and backend memory, counted in the root executable's rlx_transfer_stats. */
#include <string.h>

#include "runtime/control.h"
#include "runtime/exec_internal.h"

/* ---- counted transfers ---- */

rlx_status rlx_rt_upload(rlx_executable *e, rt_buf *b, const void *src, size_t n, bool param) {
  if (!n) return RLX_OK;
  RLX_TRY(e->dev->vt->upload(e->dev, b->h, 0, src, n));
  rlx_transfer_stats *s = &e->root->stats;
  s->uploads++;
  s->upload_bytes += n;
  s->param_uploads += param;
  return RLX_OK;
}

rlx_status rlx_rt_download(rlx_executable *e, rt_buf *b, void *dst, size_t n, bool param) {
  if (!n) return RLX_OK;
  RLX_TRY(e->dev->vt->download(e->dev, b->h, 0, dst, n));
  if (e->dev->vt->sync) RLX_TRY(e->dev->vt->sync(e->dev));
  rlx_transfer_stats *s = &e->root->stats;
  s->downloads++;
  s->download_bytes += n;
  s->param_downloads += param;
  return RLX_OK;
}

rlx_status rlx_rt_device_copy(rlx_executable *e, rt_buf *dst, rt_buf *src, size_t n) {
  if (!n) return RLX_OK;
  RLX_TRY(e->dev->vt->copy(e->dev, dst->h, 0, src->h, 0, n));
  rlx_transfer_stats *s = &e->root->stats;
  s->device_copies++;
  s->device_bytes += n;
  return RLX_OK;
}

/* ---- steps ---- */

static rlx_status run_segment(rt_step *s) {
  for (uint32_t k = 0; k < s->n_par; k++) {
    exe_leaf *p = s->par[k];
    if (s->par_seen[k] == p->buf->version && s->par_seen[k] != 0) continue;
    RLX_TRY(s->bx->vt->bind_param(s->bx, s->par_node[k], p->buf->h));
    s->par_seen[k] = p->buf->version;
  }
  return s->bx->vt->run(s->bx, s->in_h, s->n_in, s->out_h, s->n_out);
}

/* Downloads a staged/control node's operands into its host copies. */
static rlx_status stage_in(rlx_executable *e, rt_step *s) {
  for (uint32_t k = 0; k < s->n_in; k++)
    RLX_TRY(rlx_rt_download(e, s->in[k], s->host_in[k].data, s->in[k]->bytes, false));
  return RLX_OK;
}

static rlx_status run_staged(rlx_executable *e, rt_step *s) {
  RLX_TRY(stage_in(e, s));
  const rlx_tensor *outs;
  uint32_t n_outs;
  RLX_TRY(rlx_executable_run_positional(s->cpu, s->host_in, s->n_in, &outs, &n_outs));
  if (n_outs != 1) return rlx_errorf(RLX_ERR_INTERNAL, "runtime: a staged node gave %u outputs", n_outs);
  e->root->stats.staged_nodes++;
  return rlx_rt_upload(e, s->out[0], outs[0].data, s->out[0]->bytes, false);
}

typedef struct body_runner {
  rlx_executable *e;
  rt_step *s;
} body_runner;

/* The drivers' body callback: the body's executable (same backend) on uploaded arguments. */
static rlx_status run_body(void *state, const rlx_graph *body, const rlx_tensor *inputs, uint32_t n_inputs,
                           rlx_tensor *outputs, uint32_t n_outputs) {
  body_runner *r = state;
  for (uint32_t k = 0; k < r->s->n_bodies; k++)
    if (r->s->body_graphs[k] == body) return rlx_rt_run_body(r->s->bodies[k], inputs, n_inputs, outputs, n_outputs);
  return rlx_errorf(RLX_ERR_INTERNAL, "runtime: body '%s' was not compiled", rlx_graph_name(body));
}

static rlx_status run_control(rlx_executable *e, rt_step *s) {
  RLX_TRY(stage_in(e, s));
  body_runner r = {e, s};
  RLX_TRY(rlx_rt_control_run(s->node, s->host_in, s->n_in, &s->host_out, run_body, &r));
  return rlx_rt_upload(e, s->out[0], s->host_out.data, s->out[0]->bytes, false);
}

rlx_status rlx_rt_run_steps(rlx_executable *e) {
  for (uint32_t i = 0; i < e->n_steps; i++) {
    rt_step *s = &e->steps[i];
    rlx_status st;
    switch (s->kind) {
    case STEP_SEGMENT: st = run_segment(s); break;
    case STEP_STAGED: st = run_staged(e, s); break;
    default: st = run_control(e, s); break;
    }
    if (st != RLX_OK) return st;
  }
  if (e->dev->vt->sync) RLX_TRY(e->dev->vt->sync(e->dev));
  return RLX_OK;
}
