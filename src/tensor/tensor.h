// Tensor: a handle to a view (shape, strides in elements, offset, dtype) of a Storage, plus autograd state.
// Copying a Tensor shares the view (like torch.Tensor); views made by reshape/permute/slice share the Storage.
#pragma once
#include <initializer_list>
#include <memory>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"
#include "tensor/storage.h"

namespace vt {

class Node;

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape shape;
  Shape strides;
  int64_t offset = 0;
  DType dtype = DType::f32;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<Node> grad_fn;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- factories (never record autograd) ----
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = cpu());
  static Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Device device = cpu());
  /// Copies `values` (converted to dtype) into a new tensor of `shape`.
  static Tensor from_vector(const std::vector<double>& values, const Shape& shape, DType dtype = DType::f32);
  /// 0, 1, .., n − 1 (exact in every dtype up to its integer range), made on `device` (no host→device copy).
  static Tensor arange(int64_t n, DType dtype = DType::i64, Device device = cpu());
  static Tensor scalar(double value, DType dtype = DType::f32) { return full({}, value, dtype); }

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  const Shape& strides() const { return impl().strides; }
  int64_t offset() const { return impl().offset; }
  int64_t dim() const { return static_cast<int64_t>(impl().shape.size()); }
  int64_t size(int64_t d) const;
  int64_t numel() const { return vt::numel(impl().shape); }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  bool is_contiguous() const;
  std::string describe() const;  // "f32[2, 3]"

  // ---- raw data (no copies; use contiguous() first when the layout matters) ----
  void* raw_data() const;
  template <typename T>
  T* data() const {
    VT_CHECK(dtype_of<T>::value == dtype(), "[data] tensor is ", dtype_name(dtype()), ", asked for ",
             dtype_name(dtype_of<T>::value));
    return static_cast<T*>(raw_data());
  }
  /// Values as doubles in logical (row-major) order, whatever the layout and dtype.
  std::vector<double> to_vector() const;
  double item() const;

  // ---- autograd ----
  bool requires_grad() const { return impl().requires_grad; }
  Tensor& set_requires_grad(bool r);
  Tensor grad() const { return impl().grad ? Tensor(impl().grad) : Tensor(); }
  void set_grad(const Tensor& g) { impl().grad = g.impl_; }
  const std::shared_ptr<Node>& grad_fn() const { return impl().grad_fn; }
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  /// Runs reverse-mode autodiff from this tensor; `grad` defaults to 1 for a one-element tensor.
  void backward(const Tensor& grad = Tensor()) const;
  /// Same storage, no autograd history.
  Tensor detach() const;

  // ---- views and copies (differentiable; defined in ops/shape.cpp) ----
  Tensor reshape(const Shape& shape) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor expand(const Shape& shape) const;
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(DType dtype) const;
  /// A copy on `device` (this tensor itself when already there); differentiable: the gradient is copied back.
  /// CUDA work runs on the legacy default stream for now; host<->device copies return when finished.
  Tensor to(Device device) const;

  /// Copies src (same shape, any layout/dtype) into this tensor in place; no autograd.
  void copy_(const Tensor& src) const;
  void fill_(double value) const;

  TensorImpl& impl() const {
    VT_CHECK(impl_ != nullptr, "[tensor] use of an undefined tensor");
    return *impl_;
  }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

/// Front-ends of ops that only have a CPU kernel call this first: a defined tensor not on the CPU throws
/// "[op] no CUDA kernel yet ..." instead of letting the CPU kernel read device memory.
void require_cpu(const char* op, std::initializer_list<const Tensor*> tensors);

/// The device all defined tensors share (CPU when none is defined); throws "[op] devices differ: ..." otherwise.
/// Op front-ends run their kernel on it with kernels::dispatch (kernels/dispatch.h).
Device common_device(const char* op, std::initializer_list<const Tensor*> tensors);
/// Throws "[op] <device> tensor in a build without CUDA" (data's device kernels, which have no stand-ins).
[[noreturn]] void fail_without_cuda(const char* op, Device device);
/// Throws "[op] CUDA needs f32 or bf16, got ..." unless x is f32 or bf16 (what the float CUDA kernels take).
void check_cuda_float(const Tensor& x, const char* op);
/// The same on CUDA; on the CPU throws "[op] CPU needs f32 or f64, got ..." unless x is f32 or f64.
void check_device_float(const Tensor& x, const char* op);

/// A new view of `base`'s storage with the given geometry (no autograd).
Tensor make_view(const Tensor& base, const Shape& shape, const Shape& strides, int64_t offset);

/// `cast`, which holds t's values in another floating dtype (an autocast cache entry), with the autograd of
/// t.to(cast.dtype()): t's gradient is the incoming one converted back to t's dtype.
Tensor as_cast_of(const Tensor& t, const Tensor& cast);

}  // namespace vt
