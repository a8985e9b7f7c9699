// Fused neural-network ops: softmax, log_softmax, layer_norm and the losses.
#pragma once
#include "tensor/tensor.h"

namespace vt::ops {

Tensor softmax(const Tensor& x, int64_t dim = -1);
Tensor log_softmax(const Tensor& x, int64_t dim = -1);
/// LayerNorm over the last dim; weight/bias [C] may be undefined.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);
/// Mean cross-entropy of logits [B, C] against i64 class indices [B], with label smoothing s
/// (target = (1-s)·onehot + s/C, as torch.nn.CrossEntropyLoss(label_smoothing=s)).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing = 0.0);
/// Mean over the batch of −Σ target·log_softmax(logits), target [B, C] rows summing to 1 (mixup targets).
Tensor soft_target_cross_entropy(const Tensor& logits, const Tensor& target);

}  // namespace vt::ops
