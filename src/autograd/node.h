// Autograd graph: each op that records history makes one Node with one output. Its `next` edges point at the
// nodes that produced its inputs (or an AccumulateGrad for a leaf); a null edge means that input needs no
// gradient. Saved tensors are named members of each Node subclass so retained memory is visible, and
// release() drops them once the node has run.
#pragma once
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace vt {

class Node {
 public:
  virtual ~Node() = default;
  virtual const char* name() const = 0;
  /// Gradients w.r.t. each input (one per edge, undefined where the edge is null), given d(loss)/d(output).
  virtual std::vector<Tensor> backward(const Tensor& grad_out) = 0;
  /// Drops saved tensors after backward has used them.
  virtual void release() {}

  // Folding a gradient sum into backward (opt-in; every node that does not override these keeps the plain path).
  // When a tensor feeds two nodes (x into norm1 and into the residual add), the engine sums the two gradients
  // for x's producer. If the first has already arrived (`pending`) when this node runs, a node that opts in
  // adds it inside its own backward kernel and the engine replaces the waiting gradient by the result instead
  // of launching a separate add. At most one input per call is offered.

  /// Whether backward_folding can return input `input`'s gradient summed with `pending` (shape, dtype, device).
  virtual bool can_fold_pending(size_t /*input*/, const Tensor& /*pending*/) const { return false; }
  /// backward() whose result for `input` is `pending` + this node's gradient for it, in a fresh tensor: `pending`
  /// may be shared and is never written. Called only after can_fold_pending(input, pending) returned true;
  /// the default runs backward() and adds.
  virtual std::vector<Tensor> backward_folding(const Tensor& grad_out, size_t input, const Tensor& pending);

  bool needs_grad(size_t input) const { return input < next.size() && next[input] != nullptr; }

  std::vector<std::shared_ptr<Node>> next;
};

/// Adds incoming gradient into a leaf tensor's .grad.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  const char* name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> backward(const Tensor& grad_out) override;
  const std::shared_ptr<TensorImpl>& leaf() const { return leaf_; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

/// Thread-local switch: while a NoGradGuard lives, ops record no history.
class GradMode {
 public:
  static bool enabled();
  static void set_enabled(bool on);
};

class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

/// True when grad mode is on and any input requires grad: the op should record a node.
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);

/// Wires `node` to the inputs' producers and makes it `out`'s grad_fn. Call only after any_requires_grad.
void attach_node(Tensor& out, const std::shared_ptr<Node>& node, std::initializer_list<const Tensor*> inputs);
/// Same for a run-time number of inputs (concat).
void attach_node(Tensor& out, const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs);

/// Runs backward from `root` with seed gradient `grad`.
void run_backward(const Tensor& root, const Tensor& grad);

}  // namespace vt
