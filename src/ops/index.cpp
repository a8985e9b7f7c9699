// Front-ends of concat / split / index_select / gather / scatter_add / topk and their backward nodes.
// Index tensors are i64 and range-checked here, so the kernels can trust them; CUDA index tensors are not (that
// would synchronize the host): the CUDA kernels read 0 for / skip an out-of-range index (kernels/cuda/index.h).
#include "ops/index.h"

#include <numeric>

#include "autograd/node.h"
#include "kernels/cpu/index.h"
#include "kernels/cuda/index.h"
#include "kernels/dispatch.h"

namespace vt::ops {

namespace {

// Contiguous copy of `index` after checking its dtype and that every value lies in [0, bound).
Tensor checked_index(const Tensor& index, int64_t dim, int64_t bound, const char* op) {
  VT_CHECK(index.defined() && index.dtype() == DType::i64, "[", op, "] index must be i64, got ",
           index.defined() ? index.describe() : std::string("an undefined tensor"));
  Tensor ic = index.contiguous();
  if (ic.device().is_cuda()) return ic;
  const int64_t* p = ic.data<int64_t>();
  for (int64_t i = 0; i < ic.numel(); ++i)
    VT_CHECK(p[i] >= 0 && p[i] < bound, "[", op, "] index ", p[i], " is out of range for dim ", dim, " of size ", bound,
             " (at flat position ", i, " of index ", index.describe(), ")");
  return ic;
}

// Products of the dims before and after `dim`.
void outer_inner(const Shape& s, int64_t dim, int64_t& outer, int64_t& inner) {
  outer = inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s[i];
  for (int64_t i = dim + 1; i < static_cast<int64_t>(s.size()); ++i) inner *= s[i];
}

// The f32 accumulator `acc` as a tensor of `dtype` (itself when that is f32).
Tensor from_f32(const Tensor& acc, DType dtype) { return dtype == DType::f32 ? acc : acc.to(dtype); }

// acc (f32, contiguous) += src scattered along dim at index (contiguous), on the device.
void scatter_add_cuda(kernels::Cuda c, const Tensor& acc, int64_t dim, const Tensor& index, const Tensor& src) {
  check_cuda_float(src, "scatter_add");
  kernels::cuda::scatter_add_strided(acc.data<float>(), acc.strides(), acc.size(dim), src.raw_data(), src.dtype(),
                                     src.strides(), index.data<int64_t>(), index.shape(), dim, c.stream);
}

// out (index's shape, contiguous) = x gathered along dim at index (contiguous), on x's device.
void gather_into(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  kernels::dispatch(
      x.device(),
      [&] {
        kernels::cpu::gather_strided(x.dtype(), out.raw_data(), x.raw_data(), x.strides(), index.data<int64_t>(),
                                     index.shape(), dim);
      },
      [&](kernels::Cuda c) {
        kernels::cuda::gather_strided(x.dtype(), out.raw_data(), x.raw_data(), x.strides(), x.size(dim),
                                      index.data<int64_t>(), index.shape(), dim, c.stream);
      });
}

// A zero tensor of `shape` with src scattered-added into it along dim at `index` (contiguous, src's extent ≥ it).
Tensor zeros_scatter_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src) {
  const Device dev = common_device("scatter_add", {&index, &src});
  return kernels::dispatch(
      dev,
      [&] {
        Tensor out = Tensor::zeros(shape, src.dtype(), src.device());
        kernels::cpu::scatter_add_strided(src.dtype(), out.raw_data(), out.strides(), src.raw_data(), src.strides(),
                                          index.data<int64_t>(), index.shape(), dim);
        return out;
      },
      [&](kernels::Cuda c) {
        Tensor acc = Tensor::zeros(shape, DType::f32, dev);
        scatter_add_cuda(c, acc, dim, index, src);
        return from_f32(acc, src.dtype());
      });
}

struct ConcatBackward : Node {
  int64_t dim;
  std::vector<int64_t> sizes;
  const char* name() const override { return "ConcatBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    std::vector<Tensor> grads(sizes.size());
    int64_t off = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (needs_grad(i)) grads[i] = g.slice(dim, off, off + sizes[i]);
      off += sizes[i];
    }
    return grads;
  }
};

struct IndexSelectBackward : Node {
  Shape input_shape;
  int64_t dim;
  Tensor index;  // 1-D i64, contiguous
  const char* name() const override { return "IndexSelectBackward"; }
  std::vector<Tensor> backward(const Tensor& g_in) override {
    Tensor g = g_in.contiguous();
    int64_t outer, inner;
    outer_inner(input_shape, dim, outer, inner);
    return {kernels::dispatch(
        g.device(),
        [&] {
          Tensor gx = Tensor::zeros(input_shape, g.dtype());
          kernels::cpu::index_add_rows(g.dtype(), gx.raw_data(), g.raw_data(), index.data<int64_t>(), outer,
                                       input_shape[dim], index.numel(), inner);
          return gx;
        },
        [&](kernels::Cuda c) {
          check_cuda_float(g, "index_select");
          Tensor acc = Tensor::zeros(input_shape, DType::f32, g.device());
          kernels::cuda::index_add_rows(acc.data<float>(), g.raw_data(), g.dtype(), index.data<int64_t>(), outer,
                                        input_shape[dim], index.numel(), inner, c.stream);
          return from_f32(acc, g.dtype());
        })};
  }
  void release() override { index = Tensor(); }
};

// The backward of gather and of topk's values: gradient scattered-added to the picked positions.
struct GatherBackward : Node {
  Shape input_shape;
  int64_t dim;
  Tensor index;  // i64, contiguous, the output's shape
  const char* name() const override { return "GatherBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override { return {zeros_scatter_add(input_shape, dim, index, g)}; }
  void release() override { index = Tensor(); }
};

struct ScatterAddBackward : Node {
  Shape src_shape;
  int64_t dim;
  Tensor index;  // i64, contiguous
  const char* name() const override { return "ScatterAddBackward"; }
  std::vector<Tensor> backward(const Tensor& g) override {
    Tensor gsrc;
    if (needs_grad(1)) {
      Tensor picked = Tensor::empty(index.shape(), g.dtype(), g.device());
      gather_into(picked, g, dim, index);
      gsrc = picked;
      if (index.shape() != src_shape) {
        // src elements outside the index's extent never reach the output: their gradient is zero.
        gsrc = Tensor::zeros(src_shape, g.dtype(), g.device());
        Tensor region = gsrc;
        for (int64_t d = 0; d < index.dim(); ++d) region = region.slice(d, 0, index.size(d));
        region.copy_(picked);
      }
    }
    return {needs_grad(0) ? g : Tensor(), gsrc};
  }
  void release() override { index = Tensor(); }
};

}  // namespace

Tensor concat(const std::vector<Tensor>& xs, int64_t dim) {
  VT_CHECK(!xs.empty(), "[concat] needs at least one tensor");
  for (const Tensor& x : xs) VT_CHECK(x.defined(), "[concat] got an undefined tensor");
  const Tensor& first = xs[0];
  for (const Tensor& x : xs) common_device("concat", {&first, &x});
  VT_CHECK(first.dim() >= 1, "[concat] cannot concatenate 0-d tensors");
  dim = wrap_dim(dim, first.dim(), "concat");
  Shape out_shape = first.shape();
  out_shape[dim] = 0;
  bool needs_grad = false;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    VT_CHECK(x.dtype() == first.dtype(), "[concat] tensor ", i, " ", x.describe(), " and tensor 0 ", first.describe(),
             " dtypes differ");
    bool fits = x.dim() == first.dim();
    for (int64_t d = 0; fits && d < x.dim(); ++d) fits = d == dim || x.size(d) == first.size(d);
    VT_CHECK(fits, "[concat] tensor ", i, " ", x.describe(), " does not match tensor 0 ", first.describe(),
             " outside dim ", dim);
    out_shape[dim] += x.size(dim);
    needs_grad = needs_grad || x.requires_grad();
  }
  Tensor out = Tensor::empty(out_shape, first.dtype(), first.device());
  int64_t off = 0;
  for (const Tensor& x : xs) {
    if (x.numel() > 0) out.slice(dim, off, off + x.size(dim)).copy_(x.detach());
    off += x.size(dim);
  }
  if (needs_grad && GradMode::enabled()) {
    auto node = std::make_shared<ConcatBackward>();
    node->dim = dim;
    std::vector<const Tensor*> inputs;
    for (const Tensor& x : xs) {
      node->sizes.push_back(x.size(dim));
      inputs.push_back(&x);
    }
    attach_node(out, node, inputs);
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  VT_CHECK(x.dim() >= 1, "[split] cannot split a 0-d tensor");
  dim = wrap_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    VT_CHECK(s >= 0, "[split] negative size ", s);
    total += s;
  }
  VT_CHECK(total == x.size(dim), "[split] sizes add up to ", total, " but dim ", dim, " of ", x.describe(), " has ",
           x.size(dim));
  std::vector<Tensor> pieces;
  int64_t off = 0;
  for (int64_t s : sizes) {
    pieces.push_back(x.slice(dim, off, off + s));
    off += s;
  }
  return pieces;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const Device dev = common_device("index_select", {&x, &index});
  VT_CHECK(x.dim() >= 1, "[index_select] cannot index a 0-d tensor");
  dim = wrap_dim(dim, x.dim(), "index_select");
  VT_CHECK(index.defined() && index.dim() == 1, "[index_select] index must be 1-D, got ",
           index.defined() ? index.describe() : std::string("an undefined tensor"));
  Tensor ic = checked_index(index, dim, x.size(dim), "index_select");
  Shape out_shape = x.shape();
  out_shape[dim] = ic.numel();
  int64_t outer, inner;
  outer_inner(x.shape(), dim, outer, inner);
  Tensor xc = x.detach().contiguous();
  Tensor out = Tensor::empty(out_shape, x.dtype(), dev);
  kernels::dispatch(
      dev,
      [&] {
        kernels::cpu::index_select_rows(x.dtype(), out.raw_data(), xc.raw_data(), ic.data<int64_t>(), outer,
                                        x.size(dim), ic.numel(), inner);
      },
      [&](kernels::Cuda c) {
        kernels::cuda::index_select_rows(x.dtype(), out.raw_data(), xc.raw_data(), ic.data<int64_t>(), outer,
                                         x.size(dim), ic.numel(), inner, c.stream);
      });
  if (any_requires_grad({&x})) {
    auto node = std::make_shared<IndexSelectBackward>();
    node->input_shape = x.shape();
    node->dim = dim;
    node->index = ic;
    attach_node(out, node, {&x});
  }
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  const Device dev = common_device("gather", {&x, &index});
  VT_CHECK(x.dim() >= 1, "[gather] cannot index a 0-d tensor");
  dim = wrap_dim(dim, x.dim(), "gather");
  VT_CHECK(index.defined() && index.dim() == x.dim(), "[gather] index must have the rank of input ", x.describe(),
           ", got ", index.defined() ? index.describe() : std::string("an undefined tensor"));
  for (int64_t d = 0; d < x.dim(); ++d)
    VT_CHECK(d == dim || index.size(d) <= x.size(d), "[gather] index ", index.describe(), " is larger than input ",
             x.describe(), " in dim ", d);
  Tensor ic = checked_index(index, dim, x.size(dim), "gather");
  Tensor xd = x.detach();
  Tensor out = Tensor::empty(index.shape(), x.dtype(), dev);
  gather_into(out, xd, dim, ic);
  if (any_requires_grad({&x})) {
    auto node = std::make_shared<GatherBackward>();
    node->input_shape = x.shape();
    node->dim = dim;
    node->index = ic;
    attach_node(out, node, {&x});
  }
  return out;
}

Tensor scatter_add(const Tensor& base, int64_t dim, const Tensor& index, const Tensor& src) {
  const Device dev = common_device("scatter_add", {&base, &index, &src});
  VT_CHECK(base.dim() >= 1, "[scatter_add] cannot index a 0-d tensor");
  dim = wrap_dim(dim, base.dim(), "scatter_add");
  VT_CHECK(base.dtype() == src.dtype(), "[scatter_add] base ", base.describe(), " and src ", src.describe(),
           " dtypes differ");
  VT_CHECK(index.defined() && index.dim() == base.dim() && src.dim() == base.dim(), "[scatter_add] base ",
           base.describe(), ", index ", index.defined() ? index.describe() : std::string("(undefined)"), " and src ",
           src.describe(), " must have the same rank");
  for (int64_t d = 0; d < base.dim(); ++d) {
    VT_CHECK(index.size(d) <= src.size(d), "[scatter_add] index ", index.describe(), " is larger than src ",
             src.describe(), " in dim ", d);
    VT_CHECK(d == dim || index.size(d) <= base.size(d), "[scatter_add] index ", index.describe(),
             " is larger than base ", base.describe(), " in dim ", d);
  }
  Tensor ic = checked_index(index, dim, base.size(dim), "scatter_add");
  Tensor out = Tensor::empty(base.shape(), dev.is_cuda() ? DType::f32 : base.dtype(), dev);  // CUDA: f32 sums
  out.copy_(base.detach());
  Tensor sd = src.detach();
  kernels::dispatch(
      dev,
      [&] {
        kernels::cpu::scatter_add_strided(out.dtype(), out.raw_data(), out.strides(), sd.raw_data(), sd.strides(),
                                          ic.data<int64_t>(), ic.shape(), dim);
      },
      [&](kernels::Cuda c) {
        check_cuda_float(base, "scatter_add");
        scatter_add_cuda(c, out, dim, ic, sd);
        out = from_f32(out, base.dtype());
      });
  if (any_requires_grad({&base, &src})) {
    auto node = std::make_shared<ScatterAddBackward>();
    node->src_shape = src.shape();
    node->dim = dim;
    node->index = ic;
    attach_node(out, node, {&base, &src});
  }
  return out;
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim) {
  const Device dev = common_device("topk", {&x});
  VT_CHECK(x.dim() >= 1, "[topk] needs at least 1 dim, got ", x.describe());
  dim = wrap_dim(dim, x.dim(), "topk");
  const int64_t R = x.size(dim), n = x.dim();
  VT_CHECK(k >= 0 && k <= R, "[topk] k = ", k, " is out of range for dim ", dim, " of size ", R, " in ", x.describe());
  // Work on [outer, R] with `dim` moved last, then move it back.
  std::vector<int64_t> perm, back(n);
  for (int64_t i = 0; i < n; ++i)
    if (i != dim) perm.push_back(i);
  perm.push_back(dim);
  for (int64_t i = 0; i < n; ++i) back[i] = i < dim ? i : (i == dim ? n - 1 : i - 1);
  Tensor xc = x.detach().permute(perm).contiguous();
  Shape moved = xc.shape();
  moved.back() = k;
  const int64_t outer = numel(moved) / std::max<int64_t>(k, 1);
  Tensor values = Tensor::empty(moved, x.dtype(), dev);
  Tensor indices = Tensor::empty(moved, DType::i64, dev);
  if (k > 0)
    kernels::dispatch(
        dev,
        [&] {
          kernels::cpu::topk_rows(x.dtype(), values.raw_data(), indices.data<int64_t>(), xc.raw_data(), outer, R, k);
        },
        [&](kernels::Cuda c) {
          check_cuda_float(x, "topk");
          kernels::cuda::topk_rows(x.dtype(), values.raw_data(), indices.data<int64_t>(), xc.raw_data(), outer, R, k,
                                   c.stream);
        });
  values = values.permute(back).contiguous();
  indices = indices.permute(back).contiguous();
  if (any_requires_grad({&x})) {
    auto node = std::make_shared<GatherBackward>();
    node->input_shape = x.shape();
    node->dim = dim;
    node->index = indices;
    attach_node(values, node, {&x});
  }
  return {values, indices};
}

}  // namespace vt::ops
