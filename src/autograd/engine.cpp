// The backward engine: orders the graph reachable from the root topologically (iterative DFS), then runs
// each node once with the sum of the gradients that reached it, and frees its saved tensors right after.
// A node may fold a gradient already waiting for one of its inputs into its own backward (Node::can_fold_pending).
#include <optional>
#include <unordered_map>

#include "autograd/grad_hooks.h"
#include "autograd/node.h"
#include "ops/elementwise.h"

namespace vt {

namespace {
thread_local bool g_grad_enabled = true;
}

bool GradMode::enabled() { return g_grad_enabled; }
void GradMode::set_enabled(bool on) { g_grad_enabled = on; }

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::enabled()) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

void attach_node(Tensor& out, const std::shared_ptr<Node>& node, std::initializer_list<const Tensor*> inputs) {
  attach_node(out, node, std::vector<const Tensor*>(inputs));
}

void attach_node(Tensor& out, const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs) {
  node->next.clear();
  for (const Tensor* t : inputs) {
    if (!t || !t->defined() || !t->requires_grad()) {
      node->next.push_back(nullptr);
    } else if (t->grad_fn()) {
      node->next.push_back(t->grad_fn());
    } else {
      node->next.push_back(std::make_shared<AccumulateGrad>(t->impl_ptr()));
    }
  }
  out.impl().grad_fn = node;
  out.impl().requires_grad = true;
}

std::vector<Tensor> AccumulateGrad::backward(const Tensor& grad_out) {
  VT_CHECK(grad_out.shape() == leaf_->shape, "[backward] gradient ", grad_out.describe(), " does not match leaf shape ",
           to_string(leaf_->shape));
  if (!leaf_->grad) {
    Tensor g = grad_out.dtype() == leaf_->dtype ? grad_out : grad_out.to(leaf_->dtype);
    // Own the gradient memory: the incoming tensor may be a view shared with other nodes.
    bool exclusive = g.is_contiguous() && g.impl_ptr().use_count() <= 2 && g.impl().storage.use_count() == 1;
    leaf_->grad = exclusive ? g.impl_ptr() : g.clone().impl_ptr();
  } else {
    // A bf16 gradient (autocast) adds into an f32 .grad in one kernel; other dtypes are cast first.
    const bool mixed_add = leaf_->dtype == DType::f32 && grad_out.dtype() == DType::bf16;
    ops::add_(Tensor(leaf_->grad),
              grad_out.dtype() == leaf_->dtype || mixed_add ? grad_out : grad_out.to(leaf_->dtype));
  }
  run_post_accumulate_grad_hook(leaf_.get());
  return {};
}

std::vector<Tensor> Node::backward_folding(const Tensor& grad_out, size_t input, const Tensor& pending) {
  std::vector<Tensor> grads = backward(grad_out);
  if (input < grads.size() && grads[input].defined()) grads[input] = ops::add(pending, grads[input]);
  else if (input < grads.size()) grads[input] = pending;
  return grads;
}

namespace {

// The input of `node` whose producer already has a gradient waiting that the node accepts to fold, if any.
std::optional<size_t> foldable_input(const Node& node, const std::unordered_map<Node*, Tensor>& pending) {
  for (size_t k = 0; k < node.next.size(); ++k) {
    if (!node.next[k]) continue;
    auto slot = pending.find(node.next[k].get());
    if (slot != pending.end() && node.can_fold_pending(k, slot->second)) return k;
  }
  return std::nullopt;
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad) {
  NoGradGuard no_grad;
  std::shared_ptr<Node> start = root.grad_fn();
  if (!start) {
    if (root.requires_grad()) AccumulateGrad(root.impl_ptr()).backward(grad);
    return;
  }
  // Topological order: a node comes before every node it points to.
  std::vector<Node*> order;
  std::unordered_map<Node*, int> state;  // 1 = on stack, 2 = done
  std::vector<std::pair<Node*, size_t>> stack{{start.get(), 0}};
  state[start.get()] = 1;
  while (!stack.empty()) {
    auto& [node, i] = stack.back();
    if (i < node->next.size()) {
      Node* child = node->next[i++].get();
      if (child && !state.count(child)) {
        state[child] = 1;
        stack.push_back({child, 0});
      }
    } else {
      order.push_back(node);
      state[node] = 2;
      stack.pop_back();
    }
  }
  std::unordered_map<Node*, Tensor> pending;
  pending[start.get()] = grad;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    auto found = pending.find(node);
    if (found == pending.end()) continue;  // no gradient flows here
    Tensor g = std::move(found->second);
    pending.erase(found);
    const std::optional<size_t> fold = foldable_input(*node, pending);
    std::vector<Tensor> grads =
        fold ? node->backward_folding(g, *fold, pending.at(node->next[*fold].get())) : node->backward(g);
    node->release();
    if (fold && *fold < grads.size() && grads[*fold].defined()) {
      // Already summed with what was waiting: replace it, before any other input of this node adds to the slot.
      pending[node->next[*fold].get()] = std::move(grads[*fold]);
      grads[*fold] = Tensor();
    }
    for (size_t k = 0; k < node->next.size() && k < grads.size(); ++k) {
      Node* child = node->next[k].get();
      if (!child || !grads[k].defined()) continue;
      auto slot = pending.find(child);
      if (slot == pending.end()) pending.emplace(child, std::move(grads[k]));
      else slot->second = ops::add(slot->second, grads[k]);
    }
  }
}

}  // namespace vt
