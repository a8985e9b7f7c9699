// Front-ends of the reductions and their backward nodes. CPU kernels take [outer, R] or [R, inner] layouts; the
// CUDA kernels take [outer, R, inner], so a contiguous input reduced over consecutive dims needs no copy.
#include "ops/reduce.h"

#include <algorithm>
#include <numeric>

#include "autograd/node.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cuda/reduce.h"
#include "kernels/dispatch.h"
#include "ops/elementwise.h"

namespace vt::ops {

namespace {

std::vector<int64_t> normalize_dims(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    out.resize(x.dim());
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int64_t d : dims) out.push_back(wrap_dim(d, x.dim(), op));
  if (x.dim() == 0) return {};  // dim 0 (or -1) of a 0-d tensor: nothing to reduce
  std::sort(out.begin(), out.end());
  VT_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), "[", op, "] repeated dim");
  return out;
}

Shape reduced_shape(const Shape& s, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    bool reduced = std::binary_search(dims.begin(), dims.end(), i);
    if (!reduced) out.push_back(s[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

// Moves the reduced dims last: the result is [kept..., reduced...] contiguous.
Tensor reduced_last(const Tensor& x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.dim(); ++i)
    if (!std::binary_search(dims.begin(), dims.end(), i)) perm.push_back(i);
  perm.insert(perm.end(), dims.begin(), dims.end());
  return x.permute(perm).contiguous();
}

// x viewed as [outer, R, inner] with `dims` (sorted) as R: a contiguous copy of x when the dims are consecutive
// (no copy if x already is), else x with the reduced dims moved last (inner = 1).
struct ReduceLayout {
  Tensor data;
  int64_t outer = 1, R = 1, inner = 1;
};

ReduceLayout reduce_layout(const Tensor& x, const std::vector<int64_t>& dims) {
  ReduceLayout L;
  for (int64_t d : dims) L.R *= x.shape()[d];
  bool consecutive = true;
  for (size_t k = 0; k < dims.size(); ++k) consecutive = consecutive && dims[k] == dims[0] + static_cast<int64_t>(k);
  if (consecutive) {
    L.data = x.detach().contiguous();
    const int64_t first = dims.empty() ? x.dim() : dims.front();
    const int64_t last = dims.empty() ? x.dim() : dims.back() + 1;
    for (int64_t i = 0; i < first; ++i) L.outer *= x.shape()[i];
    for (int64_t i = last; i < x.dim(); ++i) L.inner *= x.shape()[i];
  } else {
    L.data = reduced_last(x.detach(), dims);
    L.outer = x.numel() / std::max<int64_t>(L.R, 1);
  }
  return L;
}

// scale · sum over dims (scale = 1/count for mean).
Tensor sum_raw(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, double scale, const char* op) {
  Tensor out = Tensor::empty(reduced_shape(x.shape(), dims, keepdim), x.dtype(), x.device());
  if (x.device().is_cuda()) {
    kernels::on_cuda(x.device(), [&](kernels::Cuda c) {
      ReduceLayout L = reduce_layout(x, dims);
      const int64_t ws_size = kernels::cuda::sum_workspace_size(L.outer, L.R, L.inner);
      Tensor ws;
      if (ws_size > 0) ws = Tensor::empty({ws_size}, x.dtype() == DType::f64 ? DType::f64 : DType::f32, x.device());
      kernels::cuda::sum_forward(x.dtype(), out.raw_data(), L.data.raw_data(), L.outer, L.R, L.inner, scale,
                                 ws.defined() ? ws.raw_data() : nullptr, c.stream);
    });
    return out;
  }
  int64_t R = 1;
  for (int64_t d : dims) R *= x.shape()[d];
  const int64_t outer = x.numel() / std::max<int64_t>(R, 1);
  bool prefix = true;
  for (size_t i = 0; i < dims.size(); ++i) prefix = prefix && dims[i] == static_cast<int64_t>(i);
  if (prefix && x.is_contiguous()) {
    kernels::cpu::sum_leading(x.dtype(), out.raw_data(), x.raw_data(), R, outer);
  } else {
    Tensor xc = reduced_last(x.detach(), dims);
    kernels::cpu::sum_rows(x.dtype(), out.raw_data(), xc.raw_data(), outer, R);
  }
  if (scale != 1.0) mul_(out, scale);
  return out;
}

struct SumBackward : Node {
  Shape input_shape, kept_shape;  // kept_shape: output shape with keepdim
  double scale = 1.0;             // 1/count for mean
  const char* name() const override { return "SumBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gk = g.reshape(kept_shape);
    if (scale != 1.0) gk = mul(gk, scale);
    return {gk.expand(input_shape).contiguous()};
  }
};

Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& dims_in, bool keepdim, bool mean, const char* op) {
  std::vector<int64_t> dims = normalize_dims(x, dims_in, op);
  int64_t count = 1;
  for (int64_t d : dims) count *= x.shape()[d];
  Tensor out = sum_raw(x, dims, keepdim, mean ? 1.0 / static_cast<double>(std::max<int64_t>(count, 1)) : 1.0, op);
  if (any_requires_grad({&x})) {
    auto node = std::make_shared<SumBackward>();
    node->input_shape = x.shape();
    node->kept_shape = reduced_shape(x.shape(), dims, true);
    node->scale = mean ? 1.0 / static_cast<double>(count) : 1.0;
    attach_node(out, node, {&x});
  }
  return out;
}

struct MaxBackward : Node {
  Shape input_shape;
  int64_t dim;
  Tensor indices;  // i64, keepdim shape
  const char* name() const override { return "MaxBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    if (g.device().is_cuda()) return {backward_cuda(g)};
    // Build the gradient with `dim` moved last, then move it back.
    Shape moved;
    for (int64_t i = 0; i < static_cast<int64_t>(input_shape.size()); ++i)
      if (i != dim) moved.push_back(input_shape[i]);
    const int64_t R = input_shape[dim];
    moved.push_back(R);
    Tensor gm = Tensor::zeros(moved, g.dtype());
    Tensor gc = g.contiguous();
    const int64_t* idx = indices.data<int64_t>();
    VT_DISPATCH_FLOAT(g.dtype(), "max_backward", [&] {
      scalar_t* dst = gm.data<scalar_t>();
      const scalar_t* src = gc.data<scalar_t>();
      for (int64_t o = 0; o < indices.numel(); ++o) dst[o * R + idx[o]] = src[o];
    });
    const int64_t n = static_cast<int64_t>(input_shape.size());
    std::vector<int64_t> perm(n);
    for (int64_t i = 0; i < n; ++i) perm[i] = i < dim ? i : (i == dim ? n - 1 : i - 1);
    return {gm.permute(perm).contiguous()};
  }
  // Scatters g into zeros of the input's shape, viewed as [outer, R, inner], at the arg-max of each (o, i).
  Tensor backward_cuda(const Tensor& g) const {
    Tensor dx = Tensor::zeros(input_shape, g.dtype(), g.device());
    Tensor gc = g.contiguous();
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < dim; ++i) outer *= input_shape[i];
    for (int64_t i = dim + 1; i < static_cast<int64_t>(input_shape.size()); ++i) inner *= input_shape[i];
    kernels::on_cuda(g.device(), [&](kernels::Cuda c) {
      kernels::cuda::max_backward(g.dtype(), dx.raw_data(), gc.raw_data(), indices.data<int64_t>(), outer,
                                  input_shape[dim], inner, c.stream);
    });
    return dx;
  }
  void release() override { indices = Tensor(); }
};

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_sum(x, dims, keepdim, false, "sum");
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce_sum(x, dims, keepdim, true, "mean");
}

std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  dim = wrap_dim(dim, x.dim(), "max");
  VT_CHECK(x.dim() > 0, "[max] needs a tensor with dims, got ", x.describe());
  VT_CHECK(x.shape()[dim] > 0, "[max] cannot reduce the empty dim ", dim, " of ", x.describe());
  Shape out_shape = reduced_shape(x.shape(), {dim}, keepdim);
  Tensor values = Tensor::empty(out_shape, x.dtype(), x.device());
  Tensor indices = Tensor::empty(out_shape, DType::i64, x.device());
  const int64_t R = x.shape()[dim];
  kernels::dispatch(
      x.device(),
      [&] {
        Tensor xc = reduced_last(x.detach(), {dim});
        kernels::cpu::max_rows(x.dtype(), values.raw_data(), indices.data<int64_t>(), xc.raw_data(), x.numel() / R, R);
      },
      [&](kernels::Cuda c) {
        ReduceLayout L = reduce_layout(x, {dim});
        kernels::cuda::max_forward(x.dtype(), values.raw_data(), indices.data<int64_t>(), L.data.raw_data(), L.outer, R,
                                   L.inner, c.stream);
      });
  if (any_requires_grad({&x})) {
    auto node = std::make_shared<MaxBackward>();
    node->input_shape = x.shape();
    node->dim = dim;
    node->indices = indices;
    attach_node(values, node, {&x});
  }
  return {values, indices};
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  NoGradGuard no_grad;
  return max(x, dim, keepdim).second;
}

}  // namespace vt::ops
