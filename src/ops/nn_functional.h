// Fused neural-network ops: softmax, log_softmax, layer_norm, the losses and L2 normalization.
#pragma once
#include <optional>
#include <utility>

#include "tensor/tensor.h"

namespace vt::ops {

/// Softmax along `dim`; output in x's dtype (on CUDA: f32 or bf16 with f32 math).
Tensor softmax(const Tensor& x, int64_t dim = -1);
/// Log-softmax along `dim`; output in x's dtype (on CUDA: f32 or bf16 with f32 math).
Tensor log_softmax(const Tensor& x, int64_t dim = -1);
/// LayerNorm over the last dim; weight/bias [C] may be undefined. The output has dtype `out_dtype` (default:
/// x's dtype). CPU: weight/bias in x's dtype. CUDA: x f32 or bf16, weight/bias f32, statistics in f32, the
/// gradient of x in x's dtype and of weight/bias in f32.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                  std::optional<DType> out_dtype = {});
/// The pre-norm block's residual add and the LayerNorm after it: {h = x + y, layer_norm(h, ...)}, each with its
/// own autograd (as ops::add and ops::layer_norm). On CUDA, for an f32 stream x (y f32 or bf16), one kernel reads
/// x and y once and writes both; elsewhere the two ops.
std::pair<Tensor, Tensor> add_layer_norm(const Tensor& x, const Tensor& y, const Tensor& weight, const Tensor& bias,
                                         double eps, std::optional<DType> out_dtype = {});
/// Mean cross-entropy of logits [B, C] against i64 class indices [B], with label smoothing s
/// (target = (1-s)·onehot + s/C, as torch.nn.CrossEntropyLoss(label_smoothing=s)). The loss has the logits'
/// dtype on the CPU and is f32 on CUDA (logits f32 or bf16), where an out-of-range target gives a NaN loss
/// instead of an error (checking it would need a host sync).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing = 0.0);
/// Mean over the batch of −Σ target·log_softmax(logits), target [B, C] rows summing to 1 (mixup targets).
/// CPU: target in the logits' dtype. CUDA: logits f32 or bf16, target f32 or the logits' dtype, f32 loss.
Tensor soft_target_cross_entropy(const Tensor& logits, const Tensor& target);
/// Mean cross-entropy over the pixels whose target != ignore_index: logits [B, K, H, W] (f32/f64 CPU; f32/bf16
/// CUDA), target i64 [B, H, W]. Loss f32 on CUDA (logits' dtype on CPU); 0 when every pixel is ignored.
/// The gradient of the logits has their dtype. On CUDA an out-of-range target gives a NaN loss (no host sync).
Tensor pixel_cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index = 255);
/// x / max(‖x‖₂, eps) along the last dim (torch.nn.functional.normalize(x, dim=-1)). Differentiable.
/// CPU f32/f64; CUDA f32/bf16 with f32 sums; output and gradient in x's dtype.
Tensor l2_normalize(const Tensor& x, double eps = 1e-12);

}  // namespace vt::ops
