// The hook table, keyed by the leaf's TensorImpl (shared by every handle of the parameter). A mutex guards it
// because tests run several models' backward passes as threads at once; each lookup is one hash probe, and the
// table is read only when at least one hook exists.
#include "autograd/grad_hooks.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace vt {

namespace {
std::mutex g_mutex;
std::unordered_map<const TensorImpl*, std::shared_ptr<std::function<void()>>> g_hooks;
std::atomic<size_t> g_count{0};
}  // namespace

void set_post_accumulate_grad_hook(const Tensor& leaf, std::function<void()> hook) {
  VT_CHECK(leaf.defined() && leaf.is_leaf(), "[grad_hooks] hooks attach to leaf tensors");
  std::lock_guard<std::mutex> lock(g_mutex);
  if (hook) g_hooks[&leaf.impl()] = std::make_shared<std::function<void()>>(std::move(hook));
  else g_hooks.erase(&leaf.impl());
  g_count = g_hooks.size();
}

void run_post_accumulate_grad_hook(const TensorImpl* leaf) {
  if (g_count.load(std::memory_order_relaxed) == 0) return;
  std::shared_ptr<std::function<void()>> hook;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_hooks.find(leaf);
    if (it == g_hooks.end()) return;
    hook = it->second;
  }
  (*hook)();  // outside the lock: the hook may communicate and block
}

}  // namespace vt
