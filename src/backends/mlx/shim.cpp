/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The MLX shim: the MLX backend's only C++ (C++20) file. It wraps MLX's public C++ API behind the
 * C functions of shim.h: opaque array handles owned by scopes, NULL / non-zero returns with a
 * thread-local message, and no exception leaving any function. */
#include "backends/mlx/shim.h"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <mlx/backend/cpu/encoder.h>
#include <mlx/compile.h>
#include <mlx/fast.h>
#include <mlx/fft.h>
#include <mlx/mlx.h>
#include <mlx/primitives.h>
#include <mlx/transforms.h>
#include <mlx/version.h>

#include "rlx/types.h"

namespace mx = mlx::core;

struct rlxm_arr {
  mx::array a;
  explicit rlxm_arr(mx::array x) : a(std::move(x)) {}
};

struct rlxm_scope {
  std::vector<std::unique_ptr<rlxm_arr>> owned;
};

namespace {

thread_local std::string last_error;

void set_err(const char *what) { last_error = what ? what : "unknown MLX error"; }

/* Runs f, turning every exception into a message and a failure value. */
template <class F> rlxm_arr *guard(rlxm_scope *s, F &&f) {
  try {
    mx::array r = f();
    s->owned.push_back(std::make_unique<rlxm_arr>(std::move(r)));
    return s->owned.back().get();
  } catch (const std::exception &e) {
    set_err(e.what());
  } catch (...) {
    set_err("unknown C++ exception in MLX");
  }
  return nullptr;
}

bool map_dtype(int t, mx::Dtype *out) {
  switch (t) {
  case RLX_F32: *out = mx::float32; return true;
  case RLX_F16: *out = mx::float16; return true;
  case RLX_BF16: *out = mx::bfloat16; return true;
  case RLX_F64: *out = mx::float64; return true;
  case RLX_I8: *out = mx::int8; return true;
  case RLX_I16: *out = mx::int16; return true;
  case RLX_I32: *out = mx::int32; return true;
  case RLX_I64: *out = mx::int64; return true;
  case RLX_U8: *out = mx::uint8; return true;
  case RLX_U32: *out = mx::uint32; return true;
  case RLX_BOOL: *out = mx::bool_; return true;
  case RLX_C64: *out = mx::complex64; return true;
  case RLXM_U64: *out = mx::uint64; return true;
  default: return false;
  }
}

mx::Dtype dt(int t) {
  mx::Dtype d = mx::float32;
  if (!map_dtype(t, &d))
    throw std::invalid_argument("dtype " + std::to_string(t) + " has no MLX equivalent (c128 is not supported by MLX)");
  return d;
}

int rlx_of(mx::Dtype d) {
  if (d == mx::float32) return RLX_F32;
  if (d == mx::float16) return RLX_F16;
  if (d == mx::bfloat16) return RLX_BF16;
  if (d == mx::float64) return RLX_F64;
  if (d == mx::int8) return RLX_I8;
  if (d == mx::int16) return RLX_I16;
  if (d == mx::int32) return RLX_I32;
  if (d == mx::int64) return RLX_I64;
  if (d == mx::uint8) return RLX_U8;
  if (d == mx::uint32) return RLX_U32;
  if (d == mx::bool_) return RLX_BOOL;
  if (d == mx::complex64) return RLX_C64;
  if (d == mx::uint64) return RLXM_U64;
  return -1;
}

mx::Shape shape_of(uint32_t rank, const int64_t *dims) {
  mx::Shape s;
  for (uint32_t i = 0; i < rank; i++) {
    if (dims[i] < 0 || dims[i] > INT32_MAX) throw std::invalid_argument("dimension out of MLX's int32 range");
    s.push_back(static_cast<int32_t>(dims[i]));
  }
  return s;
}

std::vector<int> ints(uint32_t n, const int64_t *v) {
  std::vector<int> r;
  for (uint32_t i = 0; i < n; i++) r.push_back(static_cast<int>(v[i]));
  return r;
}

std::vector<mx::array> arrays(rlxm_arr *const *a, uint32_t n) {
  std::vector<mx::array> r;
  r.reserve(n);
  for (uint32_t i = 0; i < n; i++) r.push_back(a[i]->a);
  return r;
}

bool any_null(rlxm_arr *const *a, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (!a[i]) return true;
  return false;
}

/* A node computed on the host: eval_cpu allocates the output and queues the C callback on the
 * stream's command encoder, after the inputs' own work. */
class HostEval : public mx::UnaryPrimitive {
public:
  HostEval(mx::Stream st, std::string name, rlxm_host_fn fn, void *user)
      : mx::UnaryPrimitive(st), name_(std::move(name)), fn_(fn), user_(user) {}
  void eval_cpu(const std::vector<mx::array> &inputs, mx::array &out) override {
    out.set_data(mx::allocator::malloc(out.nbytes()));
    auto &enc = mx::cpu::get_command_encoder(stream());
    for (const auto &i : inputs) enc.set_input_array(i);
    enc.set_output_array(out);
    enc.dispatch([fn = fn_, user = user_, name = name_, ins = inputs, o = out]() mutable {
      std::vector<const void *> p;
      p.reserve(ins.size());
      for (auto &i : ins) p.push_back(static_cast<const void *>(i.data<uint8_t>()));
      if (fn(user, p.data(), static_cast<uint32_t>(p.size()), static_cast<void *>(o.data<uint8_t>())) != 0)
        throw std::runtime_error(last_error.empty() ? "host-evaluated " + name + " failed" : last_error);
    });
  }
  void eval_gpu(const std::vector<mx::array> &, mx::array &) override {
    throw std::runtime_error("host-evaluated " + name_ + " runs on the CPU stream only");
  }
  const char *name() const override { return name_.c_str(); }

private:
  std::string name_;
  rlxm_host_fn fn_;
  void *user_;
};

} // namespace

struct rlxm_fn {
  std::function<std::vector<mx::array>(const std::vector<mx::array> &)> f;
  uint32_t n_out = 0;
};

extern "C" {

const char *rlxm_error(void) { return last_error.c_str(); }
void rlxm_set_error(const char *msg) { set_err(msg); }
const char *rlxm_version(void) {
  static std::string v = mx::version();
  return v.c_str();
}

rlxm_scope *rlxm_scope_new(void) {
  try {
    return new rlxm_scope();
  } catch (...) {
    set_err("out of memory creating an MLX scope");
    return nullptr;
  }
}
void rlxm_scope_free(rlxm_scope *s) {
  try {
    delete s;
  } catch (...) {
  }
}
rlxm_arr *rlxm_keep(rlxm_arr *a) {
  if (!a) return nullptr;
  try {
    return new rlxm_arr(a->a);
  } catch (...) {
    set_err("out of memory keeping an MLX array");
    return nullptr;
  }
}
void rlxm_release(rlxm_arr *a) {
  try {
    delete a;
  } catch (...) {
  }
}
void rlxm_assign(rlxm_arr *dst, rlxm_arr *src) {
  if (dst && src) dst->a = src->a;
}
rlxm_arr *rlxm_ref(rlxm_scope *s, rlxm_arr *a) {
  if (!a) return nullptr;
  return guard(s, [&] { return a->a; });
}

bool rlxm_dtype_ok(int t) {
  mx::Dtype d = mx::float32;
  return t != RLXM_U64 && map_dtype(t, &d);
}

rlxm_arr *rlxm_from_host(rlxm_scope *s, const void *data, int dtype, uint32_t rank, const int64_t *dims) {
  return guard(s, [&] {
    mx::Shape sh = shape_of(rank, dims);
    mx::Dtype d = dt(dtype);
    size_t n = d.size();
    for (auto x : sh) n *= static_cast<size_t>(x);
    auto buf = mx::allocator::malloc(n);
    if (n) std::memcpy(buf.buffer().raw_ptr(), data, n);
    return mx::array(std::move(buf), sh, d);
  });
}
rlxm_arr *rlxm_full(rlxm_scope *s, double value, int dtype, uint32_t rank, const int64_t *dims) {
  /* mx::array(double) would be float32: build the fill value in the target dtype directly */
  return guard(s, [&] { return mx::full(shape_of(rank, dims), mx::array(value, dt(dtype)), dt(dtype)); });
}
rlxm_arr *rlxm_scalar(rlxm_scope *s, double value, int dtype) {
  return guard(s, [&] { return mx::array(value, dt(dtype)); });
}
rlxm_arr *rlxm_arange(rlxm_scope *s, double start, double stop, double step, int dtype) {
  return guard(s, [&] { return mx::arange(start, stop, step, dt(dtype)); });
}

int rlxm_dtype(const rlxm_arr *a) { return a ? rlx_of(a->a.dtype()) : -1; }
uint32_t rlxm_rank(const rlxm_arr *a) { return a ? static_cast<uint32_t>(a->a.ndim()) : 0; }
int64_t rlxm_dim(const rlxm_arr *a, uint32_t axis) {
  return a && axis < a->a.ndim() ? a->a.shape(static_cast<int>(axis)) : 0;
}
size_t rlxm_nbytes(const rlxm_arr *a) { return a ? a->a.nbytes() : 0; }

rlxm_arr *rlxm_unary(rlxm_scope *s, rlxm_unary_op op, rlxm_arr *x) {
  if (!x) return nullptr;
  return guard(s, [&]() -> mx::array {
    const mx::array &a = x->a;
    switch (op) {
    case RLXM_NEG: return mx::negative(a);
    case RLXM_ABS: return mx::abs(a);
    case RLXM_EXP: return mx::exp(a);
    case RLXM_LOG: return mx::log(a);
    case RLXM_SQRT: return mx::sqrt(a);
    case RLXM_RSQRT: return mx::rsqrt(a);
    case RLXM_SIN: return mx::sin(a);
    case RLXM_COS: return mx::cos(a);
    case RLXM_TAN: return mx::tan(a);
    case RLXM_ATAN: return mx::arctan(a);
    case RLXM_TANH: return mx::tanh(a);
    case RLXM_SIGMOID: return mx::sigmoid(a);
    case RLXM_ERF: return mx::erf(a);
    case RLXM_FLOOR: return mx::floor(a);
    case RLXM_CEIL: return mx::ceil(a);
    case RLXM_ROUND: return mx::round(a);
    case RLXM_SIGN: return mx::sign(a);
    case RLXM_RECIP: return mx::reciprocal(a);
    case RLXM_LOG1P: return mx::log1p(a);
    case RLXM_EXPM1: return mx::expm1(a);
    case RLXM_NOT: return mx::logical_not(a);
    case RLXM_SQUARE: return mx::square(a);
    case RLXM_ISNAN: return mx::isnan(a);
    case RLXM_STOP_GRAD: return mx::stop_gradient(a);
    case RLXM_REAL: return mx::real(a);
    case RLXM_IMAG: return mx::imag(a);
    case RLXM_CONJ: return mx::conjugate(a);
    case RLXM_BIT_NOT: return mx::bitwise_invert(a);
    }
    throw std::invalid_argument("unknown unary op");
  });
}

rlxm_arr *rlxm_binary(rlxm_scope *s, rlxm_binary_op op, rlxm_arr *x, rlxm_arr *y) {
  if (!x || !y) return nullptr;
  return guard(s, [&]() -> mx::array {
    const mx::array &a = x->a, &b = y->a;
    switch (op) {
    case RLXM_ADD: return mx::add(a, b);
    case RLXM_SUB: return mx::subtract(a, b);
    case RLXM_MUL: return mx::multiply(a, b);
    case RLXM_DIV: return mx::divide(a, b);
    case RLXM_MAX: return mx::maximum(a, b);
    case RLXM_MIN: return mx::minimum(a, b);
    case RLXM_POW: return mx::power(a, b);
    case RLXM_REM: return mx::remainder(a, b);
    case RLXM_BIT_AND: return mx::bitwise_and(a, b);
    case RLXM_BIT_OR: return mx::bitwise_or(a, b);
    case RLXM_BIT_XOR: return mx::bitwise_xor(a, b);
    case RLXM_SHL: return mx::left_shift(a, b);
    case RLXM_SHR: return mx::right_shift(a, b);
    case RLXM_ATAN2: return mx::arctan2(a, b);
    case RLXM_EQ: return mx::equal(a, b);
    case RLXM_NE: return mx::not_equal(a, b);
    case RLXM_LT: return mx::less(a, b);
    case RLXM_LE: return mx::less_equal(a, b);
    case RLXM_GT: return mx::greater(a, b);
    case RLXM_GE: return mx::greater_equal(a, b);
    case RLXM_AND: return mx::logical_and(a, b);
    case RLXM_OR: return mx::logical_or(a, b);
    case RLXM_FLOOR_DIV: return mx::floor_divide(a, b);
    }
    throw std::invalid_argument("unknown binary op");
  });
}

rlxm_arr *rlxm_where(rlxm_scope *s, rlxm_arr *c, rlxm_arr *a, rlxm_arr *b) {
  if (!c || !a || !b) return nullptr;
  return guard(s, [&] { return mx::where(c->a, a->a, b->a); });
}
rlxm_arr *rlxm_astype(rlxm_scope *s, rlxm_arr *a, int dtype) {
  if (!a) return nullptr;
  return guard(s, [&] { return mx::astype(a->a, dt(dtype)); });
}
rlxm_arr *rlxm_bitcast(rlxm_scope *s, rlxm_arr *a, int dtype) {
  if (!a) return nullptr;
  return guard(s, [&] { return mx::view(a->a, dt(dtype)); });
}
rlxm_arr *rlxm_complex(rlxm_scope *s, rlxm_arr *re, rlxm_arr *im) {
  if (!re || !im) return nullptr;
  return guard(s, [&] {
    mx::array j(std::complex<float>(0.0f, 1.0f));
    return mx::add(mx::astype(re->a, mx::complex64), mx::multiply(mx::astype(im->a, mx::complex64), j));
  });
}

rlxm_arr *rlxm_reshape(rlxm_scope *s, rlxm_arr *a, uint32_t rank, const int64_t *dims) {
  if (!a) return nullptr;
  return guard(s, [&] { return mx::reshape(a->a, shape_of(rank, dims)); });
}
rlxm_arr *rlxm_transpose(rlxm_scope *s, rlxm_arr *a, uint32_t rank, const int64_t *perm) {
  if (!a) return nullptr;
  return guard(s, [&] { return mx::transpose(a->a, ints(rank, perm)); });
}
rlxm_arr *rlxm_broadcast(rlxm_scope *s, rlxm_arr *a, uint32_t rank, const int64_t *dims) {
  if (!a) return nullptr;
  return guard(s, [&] { return mx::broadcast_to(a->a, shape_of(rank, dims)); });
}
rlxm_arr *rlxm_slice(rlxm_scope *s, rlxm_arr *a, const int64_t *start, const int64_t *stop, const int64_t *step) {
  if (!a) return nullptr;
  return guard(s, [&] {
    mx::Shape b, e, st;
    for (size_t i = 0; i < a->a.ndim(); i++) {
      b.push_back(static_cast<int32_t>(start[i]));
      e.push_back(static_cast<int32_t>(stop[i]));
      st.push_back(static_cast<int32_t>(step[i]));
    }
    return mx::slice(a->a, b, e, st);
  });
}
rlxm_arr *rlxm_slice_update(rlxm_scope *s, rlxm_arr *a, rlxm_arr *upd, const int64_t *start, const int64_t *stop,
                            const int64_t *step) {
  if (!a || !upd) return nullptr;
  return guard(s, [&] {
    mx::Shape b, e, st;
    for (size_t i = 0; i < a->a.ndim(); i++) {
      b.push_back(static_cast<int32_t>(start[i]));
      e.push_back(static_cast<int32_t>(stop[i]));
      st.push_back(static_cast<int32_t>(step[i]));
    }
    return mx::slice_update(a->a, upd->a, b, e, st);
  });
}
rlxm_arr *rlxm_narrow(rlxm_scope *s, rlxm_arr *a, uint32_t axis, int64_t start, int64_t len, int64_t step) {
  if (!a) return nullptr;
  return guard(s, [&] {
    if (axis >= a->a.ndim()) throw std::invalid_argument("narrow: axis out of range");
    mx::Shape b(a->a.ndim(), 0), e = a->a.shape(), st(a->a.ndim(), 1);
    b[axis] = static_cast<int32_t>(start);
    e[axis] = static_cast<int32_t>(step > 0 ? start + (len - 1) * step + 1 : start + (len - 1) * step - 1);
    if (step < 0 && e[axis] < 0) e[axis] = -static_cast<int32_t>(a->a.shape(axis)) - 1;
    st[axis] = static_cast<int32_t>(step);
    return mx::slice(a->a, b, e, st);
  });
}
rlxm_arr *rlxm_concat(rlxm_scope *s, rlxm_arr *const *a, uint32_t n, int64_t axis) {
  if (any_null(a, n)) return nullptr;
  return guard(s, [&] { return mx::concatenate(arrays(a, n), static_cast<int>(axis)); });
}
rlxm_arr *rlxm_flip(rlxm_scope *s, rlxm_arr *a, uint32_t n_axes, const int64_t *axes) {
  if (!a) return nullptr;
  return guard(s, [&] { return mx::flip(a->a, ints(n_axes, axes)); });
}
rlxm_arr *rlxm_pad(rlxm_scope *s, rlxm_arr *a, const int64_t *lo, const int64_t *hi, double value) {
  if (!a) return nullptr;
  return guard(s, [&] {
    std::vector<std::pair<int, int>> w;
    for (size_t i = 0; i < a->a.ndim(); i++) w.emplace_back(static_cast<int>(lo[i]), static_cast<int>(hi[i]));
    return mx::pad(a->a, w, mx::array(value, a->a.dtype()));
  });
}
rlxm_arr *rlxm_contiguous(rlxm_scope *s, rlxm_arr *a) {
  if (!a) return nullptr;
  return guard(s, [&] { return mx::contiguous(a->a); });
}

rlxm_arr *rlxm_reduce(rlxm_scope *s, rlxm_reduce_op op, rlxm_arr *x, uint32_t n_axes, const int64_t *axes, bool keep) {
  if (!x) return nullptr;
  return guard(s, [&]() -> mx::array {
    std::vector<int> ax = ints(n_axes, axes);
    const mx::array &a = x->a;
    switch (op) {
    case RLXM_R_SUM: return mx::sum(a, ax, keep);
    case RLXM_R_MEAN: return mx::mean(a, ax, keep);
    case RLXM_R_MAX: return mx::max(a, ax, keep);
    case RLXM_R_MIN: return mx::min(a, ax, keep);
    case RLXM_R_PROD: return mx::prod(a, ax, keep);
    case RLXM_R_ANY: return mx::any(a, ax, keep);
    case RLXM_R_ALL: return mx::all(a, ax, keep);
    case RLXM_R_LOGSUMEXP: return mx::logsumexp(a, ax, keep);
    }
    throw std::invalid_argument("unknown reduction");
  });
}
rlxm_arr *rlxm_argreduce(rlxm_scope *s, bool is_max, rlxm_arr *a, int64_t axis, bool keep) {
  if (!a) return nullptr;
  return guard(s, [&] {
    return is_max ? mx::argmax(a->a, static_cast<int>(axis), keep) : mx::argmin(a->a, static_cast<int>(axis), keep);
  });
}
rlxm_arr *rlxm_softmax(rlxm_scope *s, rlxm_arr *a, int64_t axis) {
  if (!a) return nullptr;
  return guard(s, [&] { return mx::softmax(a->a, std::vector<int>{static_cast<int>(axis)}, true); });
}
rlxm_arr *rlxm_cumulative(rlxm_scope *s, rlxm_reduce_op op, rlxm_arr *x, int64_t axis, bool reverse, bool inclusive) {
  if (!x) return nullptr;
  return guard(s, [&]() -> mx::array {
    int ax = static_cast<int>(axis);
    switch (op) {
    case RLXM_R_SUM: return mx::cumsum(x->a, ax, reverse, inclusive);
    case RLXM_R_PROD: return mx::cumprod(x->a, ax, reverse, inclusive);
    case RLXM_R_MAX: return mx::cummax(x->a, ax, reverse, inclusive);
    case RLXM_R_MIN: return mx::cummin(x->a, ax, reverse, inclusive);
    default: break;
    }
    throw std::invalid_argument("unsupported cumulative op");
  });
}
rlxm_arr *rlxm_sort(rlxm_scope *s, rlxm_arr *a, int64_t axis, bool indices) {
  if (!a) return nullptr;
  return guard(
      s, [&] { return indices ? mx::argsort(a->a, static_cast<int>(axis)) : mx::sort(a->a, static_cast<int>(axis)); });
}
rlxm_arr *rlxm_topk(rlxm_scope *s, rlxm_arr *a, int64_t k, int64_t axis) {
  if (!a) return nullptr;
  return guard(s, [&] { return mx::topk(a->a, static_cast<int>(k), static_cast<int>(axis)); });
}

rlxm_arr *rlxm_matmul(rlxm_scope *s, rlxm_arr *a, rlxm_arr *b) {
  if (!a || !b) return nullptr;
  return guard(s, [&] { return mx::matmul(a->a, b->a); });
}
rlxm_arr *rlxm_conv(rlxm_scope *s, rlxm_arr *in, rlxm_arr *w, uint32_t nd, const int64_t *stride, const int64_t *pad_lo,
                    const int64_t *pad_hi, const int64_t *kdil, const int64_t *idil, int64_t groups, bool flip) {
  if (!in || !w) return nullptr;
  return guard(s, [&] {
    return mx::conv_general(in->a, w->a, ints(nd, stride), ints(nd, pad_lo), ints(nd, pad_hi), ints(nd, kdil),
                            ints(nd, idil), static_cast<int>(groups), flip);
  });
}
rlxm_arr *rlxm_conv_grad(rlxm_scope *s, rlxm_arr *x, rlxm_arr *w, rlxm_arr *dy, bool wrt_weight, uint32_t rank,
                         const int64_t *in_shape, uint32_t nd, const int64_t *stride, const int64_t *pad_lo,
                         const int64_t *pad_hi, const int64_t *kdil, int64_t groups) {
  if (!dy || (wrt_weight ? !x : !w)) return nullptr;
  return guard(s, [&] {
    /* the other operand only gives the shape: zeros, never evaluated (the vjp does not read it) */
    mx::array other = mx::zeros(shape_of(rank, in_shape), dy->a.dtype());
    mx::array xa = wrt_weight ? x->a : other, wa = wrt_weight ? other : w->a;
    std::vector<int> one(nd, 1);
    auto f = [&](const std::vector<mx::array> &p) {
      return std::vector<mx::array>{mx::conv_general(p[0], p[1], ints(nd, stride), ints(nd, pad_lo), ints(nd, pad_hi),
                                                     ints(nd, kdil), one, static_cast<int>(groups), false)};
    };
    auto [outs, grads] = mx::vjp(f, {xa, wa}, {dy->a});
    return grads[wrt_weight ? 1 : 0];
  });
}
rlxm_arr *rlxm_sdpa(rlxm_scope *s, rlxm_arr *q, rlxm_arr *k, rlxm_arr *v, float scale, bool causal, rlxm_arr *mask) {
  if (!q || !k || !v) return nullptr;
  return guard(s, [&] {
    std::optional<mx::array> m;
    if (mask) m = mask->a;
    return mx::fast::scaled_dot_product_attention(q->a, k->a, v->a, scale, causal ? "causal" : (mask ? "array" : ""),
                                                  m);
  });
}
rlxm_arr *rlxm_layer_norm(rlxm_scope *s, rlxm_arr *x, rlxm_arr *w, rlxm_arr *b, float eps) {
  if (!x) return nullptr;
  return guard(s, [&] {
    std::optional<mx::array> ow, ob;
    if (w) ow = w->a;
    if (b) ob = b->a;
    return mx::fast::layer_norm(x->a, ow, ob, eps);
  });
}
rlxm_arr *rlxm_rms_norm(rlxm_scope *s, rlxm_arr *x, rlxm_arr *w, float eps) {
  if (!x) return nullptr;
  return guard(s, [&] {
    std::optional<mx::array> ow;
    if (w) ow = w->a;
    return mx::fast::rms_norm(x->a, ow, eps);
  });
}

rlxm_arr *rlxm_take(rlxm_scope *s, rlxm_arr *a, rlxm_arr *idx, int64_t axis) {
  if (!a || !idx) return nullptr;
  return guard(s, [&] { return mx::take(a->a, idx->a, static_cast<int>(axis)); });
}
rlxm_arr *rlxm_take_along(rlxm_scope *s, rlxm_arr *a, rlxm_arr *idx, int64_t axis) {
  if (!a || !idx) return nullptr;
  return guard(s, [&] { return mx::take_along_axis(a->a, idx->a, static_cast<int>(axis)); });
}
rlxm_arr *rlxm_put_along(rlxm_scope *s, rlxm_arr *a, rlxm_arr *idx, rlxm_arr *v, int64_t axis) {
  if (!a || !idx || !v) return nullptr;
  return guard(s, [&] { return mx::put_along_axis(a->a, idx->a, v->a, static_cast<int>(axis)); });
}
rlxm_arr *rlxm_scatter(rlxm_scope *s, int op, rlxm_arr *a, rlxm_arr *const *idx, uint32_t n, rlxm_arr *upd) {
  if (!a || !upd || any_null(idx, n)) return nullptr;
  return guard(s, [&]() -> mx::array {
    std::vector<int> axes;
    for (uint32_t i = 0; i < n; i++) axes.push_back(static_cast<int>(i));
    std::vector<mx::array> ix = arrays(idx, n);
    switch (op) {
    case 0: return mx::scatter(a->a, ix, upd->a, axes);
    case 1: return mx::scatter_add(a->a, ix, upd->a, axes);
    case 2: return mx::scatter_prod(a->a, ix, upd->a, axes);
    case 3: return mx::scatter_max(a->a, ix, upd->a, axes);
    case 4: return mx::scatter_min(a->a, ix, upd->a, axes);
    default: break;
    }
    throw std::invalid_argument("unknown scatter op");
  });
}
rlxm_arr *rlxm_gather(rlxm_scope *s, rlxm_arr *a, rlxm_arr *const *idx, uint32_t n, const int64_t *slice_sizes) {
  if (!a || any_null(idx, n)) return nullptr;
  return guard(s, [&] {
    std::vector<int> axes;
    for (uint32_t i = 0; i < n; i++) axes.push_back(static_cast<int>(i));
    return mx::gather(a->a, arrays(idx, n), axes, shape_of(static_cast<uint32_t>(a->a.ndim()), slice_sizes));
  });
}

rlxm_arr *rlxm_fft(rlxm_scope *s, rlxm_arr *a, bool inverse, int norm) {
  if (!a) return nullptr;
  return guard(s, [&] {
    mx::fft::FFTNorm nm = norm == 1   ? mx::fft::FFTNorm::Forward
                          : norm == 2 ? mx::fft::FFTNorm::Ortho
                                      : mx::fft::FFTNorm::Backward;
    int ax = static_cast<int>(a->a.ndim()) - 1;
    int n = a->a.shape(ax);
    return inverse ? mx::fft::ifftn(a->a, {n}, {ax}, nm) : mx::fft::fftn(a->a, {n}, {ax}, nm);
  });
}

rlxm_arr *rlxm_host(rlxm_scope *s, const char *name, rlxm_host_fn fn, void *user, rlxm_arr *const *in, uint32_t n_in,
                    int dtype, uint32_t rank, const int64_t *dims) {
  if (any_null(in, n_in)) return nullptr;
  return guard(s, [&] {
    std::vector<mx::array> ins;
    for (uint32_t i = 0; i < n_in; i++) ins.push_back(mx::contiguous(in[i]->a));
    auto st = mx::default_stream(mx::Device::cpu);
    return mx::array(shape_of(rank, dims), dt(dtype), std::make_shared<HostEval>(st, name ? name : "host", fn, user),
                     std::move(ins));
  });
}

int rlxm_eval(rlxm_arr *const *a, uint32_t n) {
  if (any_null(a, n)) return 1;
  try {
    mx::eval(arrays(a, n));
    return 0;
  } catch (const std::exception &e) {
    set_err(e.what());
  } catch (...) {
    set_err("unknown C++ exception in MLX eval");
  }
  return 1;
}

int rlxm_read(rlxm_arr *x, size_t offset, void *dst, size_t n) {
  if (!x) return 1;
  try {
    mx::array a = x->a;
    if (offset > a.nbytes() || n > a.nbytes() - offset) throw std::out_of_range("read past the end of an MLX array");
    a.eval();
    if (!a.flags().row_contiguous) {
      a = mx::contiguous(a);
      a.eval();
    }
    if (n) std::memcpy(dst, a.data<uint8_t>() + offset, n);
    return 0;
  } catch (const std::exception &e) {
    set_err(e.what());
  } catch (...) {
    set_err("unknown C++ exception reading an MLX array");
  }
  return 1;
}

rlxm_arr *rlxm_bytes_new(size_t n) {
  try {
    auto buf = mx::allocator::malloc(n ? n : 1);
    if (n > static_cast<size_t>(INT32_MAX)) throw std::invalid_argument("MLX buffers hold at most 2^31-1 bytes");
    return new rlxm_arr(mx::array(std::move(buf), mx::Shape{static_cast<int32_t>(n)}, mx::uint8));
  } catch (const std::exception &e) {
    set_err(e.what());
  } catch (...) {
    set_err("unknown C++ exception allocating an MLX buffer");
  }
  return nullptr;
}

int rlxm_write(rlxm_arr *x, size_t offset, const void *src, size_t n) {
  if (!x) return 1;
  try {
    mx::array &a = x->a;
    if (offset > a.nbytes() || n > a.nbytes() - offset) throw std::out_of_range("write past the end of an MLX buffer");
    a.eval();
    if (!a.flags().row_contiguous || !a.is_donatable()) {
      mx::array c = a.flags().row_contiguous ? a : mx::contiguous(a);
      c.eval();
      auto buf = mx::allocator::malloc(a.nbytes() ? a.nbytes() : 1);
      if (a.nbytes()) std::memcpy(buf.buffer().raw_ptr(), c.data<uint8_t>(), a.nbytes());
      a = mx::array(std::move(buf), a.shape(), a.dtype());
    }
    if (n) std::memcpy(a.data<uint8_t>() + offset, src, n);
    return 0;
  } catch (const std::exception &e) {
    set_err(e.what());
  } catch (...) {
    set_err("unknown C++ exception writing an MLX buffer");
  }
  return 1;
}

rlxm_arr *rlxm_as(rlxm_scope *s, rlxm_arr *x, int dtype, uint32_t rank, const int64_t *dims) {
  if (!x) return nullptr;
  return guard(s, [&] {
    mx::Dtype d = dt(dtype);
    mx::Shape sh = shape_of(rank, dims);
    size_t want = d.size();
    for (auto e : sh) want *= static_cast<size_t>(e);
    if (want != x->a.nbytes())
      throw std::invalid_argument("buffer of " + std::to_string(x->a.nbytes()) + " bytes viewed as " +
                                  std::to_string(want));
    mx::array a = x->a;
    if (a.dtype() == d && a.shape() == sh) return a;
    /* A materialized row-major buffer (an upload, an evaluated output) becomes the typed array by
     * sharing its data: no primitive enters the graph, so a run schedules no view / reshape
     * kernels for its inputs and params (on small shapes those dominated the run). */
    if (a.status() != mx::array::Status::unscheduled && a.is_available() && a.flags().row_contiguous &&
        a.data_size() == a.size() && a.size() * a.itemsize() == want) {
      mx::array out(sh, d, nullptr, {});
      mx::Strides st(sh.size(), 1);
      for (int i = static_cast<int>(sh.size()) - 2; i >= 0; i--) st[i] = st[i + 1] * sh[i + 1];
      size_t big = 0;
      for (auto e : sh) big += e > 1;
      mx::array::Flags fl{};
      fl.contiguous = true;
      fl.row_contiguous = true;
      fl.col_contiguous = big <= 1;
      size_t n = 1;
      for (auto e : sh) n *= static_cast<size_t>(e);
      out.copy_shared_buffer(a, st, fl, n, 0);
      out.set_status(mx::array::Status::available);
      return out;
    }
    if (a.dtype() != d) {
      a = mx::reshape(a, {-1});
      if (a.dtype().size() != d.size() && a.dtype() != mx::uint8) a = mx::view(a, mx::uint8);
      a = mx::view(a, d);
    }
    return mx::reshape(a, sh);
  });
}

void rlxm_set_compile_dir(const char *dir) {
  if (dir && dir[0]) setenv("TMPDIR", dir, 1);
}

rlxm_fn *rlxm_compile(rlxm_build_fn build, void *user, uint32_t n_out) {
  try {
    auto *f = new rlxm_fn();
    f->n_out = n_out;
    auto body = [build, user, n_out](const std::vector<mx::array> &ins) -> std::vector<mx::array> {
      rlxm_scope sc;
      std::vector<rlxm_arr *> in;
      for (const auto &a : ins) {
        sc.owned.push_back(std::make_unique<rlxm_arr>(a));
        in.push_back(sc.owned.back().get());
      }
      std::vector<rlxm_arr *> out(n_out, nullptr);
      if (build(user, &sc, in.data(), static_cast<uint32_t>(in.size()), out.data(), n_out) != 0)
        throw std::runtime_error(last_error);
      std::vector<mx::array> r;
      for (auto *o : out) {
        if (!o) throw std::runtime_error("compiled MLX function produced no output");
        r.push_back(o->a);
      }
      return r;
    };
    f->f = mx::compile(std::function<std::vector<mx::array>(const std::vector<mx::array> &)>(body));
    return f;
  } catch (const std::exception &e) {
    set_err(e.what());
  } catch (...) {
    set_err("unknown C++ exception in mx::compile");
  }
  return nullptr;
}
void rlxm_fn_free(rlxm_fn *f) {
  try {
    delete f;
  } catch (...) {
  }
}
int rlxm_fn_call(rlxm_fn *f, rlxm_scope *s, rlxm_arr *const *in, uint32_t n_in, rlxm_arr **out, uint32_t n_out) {
  if (!f || any_null(in, n_in)) return 1;
  try {
    std::vector<mx::array> r = f->f(arrays(in, n_in));
    if (r.size() != n_out) throw std::runtime_error("compiled MLX function returned the wrong number of outputs");
    for (uint32_t i = 0; i < n_out; i++) {
      s->owned.push_back(std::make_unique<rlxm_arr>(r[i]));
      out[i] = s->owned.back().get();
    }
    return 0;
  } catch (const std::exception &e) {
    set_err(e.what());
  } catch (...) {
    set_err("unknown C++ exception calling a compiled MLX function");
  }
  return 1;
}

} // extern "C"
