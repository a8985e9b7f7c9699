// Front-ends of concat / split / index_select / gather / scatter_add / topk and their backward nodes.
// Index tensors are i64 and range-checked here, so the kernels can trust them.
#include "ops/index.h"

#include <numeric>

#include "autograd/node.h"
#include "kernels/cpu/index.h"

namespace vt::ops {

namespace {

// Contiguous copy of `index` after checking its dtype and that every value lies in [0, bound).
Tensor checked_index(const Tensor& index, int64_t dim, int64_t bound, const char* op) {
  VT_CHECK(index.defined() && index.dtype() == DType::i64, "[", op, "] index must be i64, got ",
           index.defined() ? index.describe() : std::string("an undefined tensor"));
  Tensor ic = index.contiguous();
  const int64_t* p = ic.data<int64_t>();
  for (int64_t i = 0; i < ic.numel(); ++i)
    VT_CHECK(p[i] >= 0 && p[i] < bound, "[", op, "] index ", p[i], " is out of range for dim ", dim, " of size ",
             bound, " (at flat position ", i, " of index ", index.describe(), ")");
  return ic;
}

// Products of the dims before and after `dim`.
void outer_inner(const Shape& s, int64_t dim, int64_t& outer, int64_t& inner) {
  outer = inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s[i];
  for (int64_t i = dim + 1; i < static_cast<int64_t>(s.size()); ++i) inner *= s[i];
}

// A zero tensor of `shape` with src scattered-added into it along dim at `index` (contiguous, src's extent ≥ it).
Tensor zeros_scatter_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src) {
  require_cpu("scatter_add", {&index, &src});
  Tensor out = Tensor::zeros(shape, src.dtype(), src.device());
  kernels::cpu::scatter_add_strided(src.dtype(), out.raw_data(), out.strides(), src.raw_data(), src.strides(),
                                    index.data<int64_t>(), index.shape(), dim);
  return out;
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
    Tensor gx = Tensor::zeros(input_shape, g.dtype());
    int64_t outer, inner;
    outer_inner(input_shape, dim, outer, inner);
    kernels::cpu::index_add_rows(g.dtype(), gx.raw_data(), g.raw_data(), index.data<int64_t>(), outer,
                                 input_shape[dim], index.numel(), inner);
    return {gx};
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
      Tensor picked = Tensor::empty(index.shape(), g.dtype());
      kernels::cpu::gather_strided(g.dtype(), picked.raw_data(), g.raw_data(), g.strides(), index.data<int64_t>(),
                                   index.shape(), dim);
      gsrc = picked;
      if (index.shape() != src_shape) {
        // src elements outside the index's extent never reach the output: their gradient is zero.
        gsrc = Tensor::zeros(src_shape, g.dtype());
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
  for (const Tensor& x : xs) require_cpu("concat", {&x});
  VT_CHECK(!xs.empty(), "[concat] needs at least one tensor");
  for (const Tensor& x : xs) VT_CHECK(x.defined(), "[concat] got an undefined tensor");
  const Tensor& first = xs[0];
  VT_CHECK(first.dim() >= 1, "[concat] cannot concatenate 0-d tensors");
  dim = wrap_dim(dim, first.dim(), "concat");
  Shape out_shape = first.shape();
  out_shape[dim] = 0;
  bool needs_grad = false;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    VT_CHECK(x.dtype() == first.dtype(), "[concat] tensor ", i, " ", x.describe(), " and tensor 0 ",
             first.describe(), " dtypes differ");
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
  require_cpu("index_select", {&x, &index});
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
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  kernels::cpu::index_select_rows(x.dtype(), out.raw_data(), xc.raw_data(), ic.data<int64_t>(), outer, x.size(dim),
                                  ic.numel(), inner);
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
  require_cpu("gather", {&x, &index});
  VT_CHECK(x.dim() >= 1, "[gather] cannot index a 0-d tensor");
  dim = wrap_dim(dim, x.dim(), "gather");
  VT_CHECK(index.defined() && index.dim() == x.dim(), "[gather] index must have the rank of input ", x.describe(),
           ", got ", index.defined() ? index.describe() : std::string("an undefined tensor"));
  for (int64_t d = 0; d < x.dim(); ++d)
    VT_CHECK(d == dim || index.size(d) <= x.size(d), "[gather] index ", index.describe(), " is larger than input ",
             x.describe(), " in dim ", d);
  Tensor ic = checked_index(index, dim, x.size(dim), "gather");
  Tensor xd = x.detach();
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());
  kernels::cpu::gather_strided(x.dtype(), out.raw_data(), xd.raw_data(), xd.strides(), ic.data<int64_t>(), ic.shape(),
                               dim);
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
  require_cpu("scatter_add", {&base, &index, &src});
  VT_CHECK(base.dim() >= 1, "[scatter_add] cannot index a 0-d tensor");
  dim = wrap_dim(dim, base.dim(), "scatter_add");
  VT_CHECK(base.dtype() == src.dtype(), "[scatter_add] base ", base.describe(), " and src ", src.describe(),
           " dtypes differ");
  VT_CHECK(index.defined() && index.dim() == base.dim() && src.dim() == base.dim(),
           "[scatter_add] base ", base.describe(), ", index ",
           index.defined() ? index.describe() : std::string("(undefined)"), " and src ", src.describe(),
           " must have the same rank");
  for (int64_t d = 0; d < base.dim(); ++d) {
    VT_CHECK(index.size(d) <= src.size(d), "[scatter_add] index ", index.describe(), " is larger than src ",
             src.describe(), " in dim ", d);
    VT_CHECK(d == dim || index.size(d) <= base.size(d), "[scatter_add] index ", index.describe(),
             " is larger than base ", base.describe(), " in dim ", d);
  }
  Tensor ic = checked_index(index, dim, base.size(dim), "scatter_add");
  Tensor out = Tensor::empty(base.shape(), base.dtype(), base.device());
  out.copy_(base.detach());
  Tensor sd = src.detach();
  kernels::cpu::scatter_add_strided(out.dtype(), out.raw_data(), out.strides(), sd.raw_data(), sd.strides(),
                                    ic.data<int64_t>(), ic.shape(), dim);
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
  require_cpu("topk", {&x});
  VT_CHECK(x.dim() >= 1, "[topk] needs at least 1 dim, got ", x.describe());
  dim = wrap_dim(dim, x.dim(), "topk");
  const int64_t R = x.size(dim), n = x.dim();
  VT_CHECK(k >= 0 && k <= R, "[topk] k = ", k, " is out of range for dim ", dim, " of size ", R, " in ",
           x.describe());
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
  Tensor values = Tensor::empty(moved, x.dtype(), x.device());
  Tensor indices = Tensor::empty(moved, DType::i64, x.device());
  if (k > 0)
    kernels::cpu::topk_rows(x.dtype(), values.raw_data(), indices.data<int64_t>(), xc.raw_data(), outer, R, k);
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
