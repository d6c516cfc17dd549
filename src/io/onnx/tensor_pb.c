/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* ONNX TensorProto files (one serialized tensor, as in the ONNX test suite's
 * test_data_set_N/input_K.pb) -> rlx_tensor. */
#include <string.h>

#include "io/onnx/onnx_internal.h"

rlx_status rlx_onnx_tensor_read(const uint8_t *data, size_t len, const rlx_allocator *al, rlx_tensor *out,
                                char **name_out) {
  if (!out) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_onnx_tensor_read: out is NULL");
  memset(out, 0, sizeof *out);
  if (name_out) *name_out = NULL;
  if (!al) al = rlx_default_allocator();
  if (!data && len) return rlx_errorf(RLX_ERR_INVALID_ARG, "rlx_onnx_tensor_read: no data");
  oi_pb pb;
  RLX_TRY(oi_pb_unpack(&pb, &onnx__tensor_proto__descriptor, data, len, al, "tensor"));
  const Onnx__TensorProto *t = (const Onnx__TensorProto *)pb.msg;
  rlx_shape sh;
  void *buf = NULL;
  size_t nb = 0;
  rlx_status st = RLX_OK;
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    st = rlx_errorf(RLX_ERR_UNSUPPORTED, "tensor: external data is not read from a lone tensor file");
  if (st == RLX_OK) st = oi_tensor_bytes(t, "tensor", NULL, al, &sh, &buf, &nb);
  char *name = NULL;
  if (st == RLX_OK && name_out && t->name && t->name[0]) {
    size_t n = strlen(t->name);
    name = al->alloc(al->ctx, n + 1);
    if (!name)
      st = rlx_errorf(RLX_ERR_OOM, "out of memory");
    else
      memcpy(name, t->name, n + 1);
  }
  if (st == RLX_OK && !buf) { /* zero bytes: hand back a valid (1-byte) block */
    buf = al->alloc(al->ctx, 1);
    if (!buf) st = rlx_errorf(RLX_ERR_OOM, "out of memory");
  }
  oi_pb_free(&pb);
  if (st != RLX_OK) {
    al->free(al->ctx, buf);
    al->free(al->ctx, name);
    return st;
  }
  out->data = buf;
  out->shape = sh;
  if (name_out) *name_out = name;
  return RLX_OK;
}

rlx_status rlx_onnx_tensor_load(const char *path, const rlx_allocator *al, rlx_tensor *out, char **name_out) {
  if (!al) al = rlx_default_allocator();
  if (!path) return rlx_errorf(RLX_ERR_INVALID_ARG, "no tensor path");
  uint8_t *data;
  size_t len;
  RLX_TRY(oi_read_file(path, RLX_ONNX_MAX_FILE_BYTES, al, &data, &len));
  rlx_status st = rlx_onnx_tensor_read(data, len, al, out, name_out);
  al->free(al->ctx, data);
  if (st) return rlx_error_context(st, "%s", path);
  return RLX_OK;
}

void rlx_onnx_tensor_free(rlx_tensor *t, const rlx_allocator *al) {
  if (!t) return;
  if (!al) al = rlx_default_allocator();
  al->free(al->ctx, t->data);
  t->data = NULL;
}
