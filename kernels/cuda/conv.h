// CUDA kernels of the depth-wise K×K conv (K = 3 or 5, stride 1, zero padding K/2) and adaptive average pooling on contiguous
// NCHW / [N, H, W] buffers: the device twins of kernels/cpu/conv.h and kernels/cpu/pool.h. f32 or bf16 storage,
// f32 arithmetic; outputs and gradients have the input's dtype.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// out [B, C, H, W] = depth-wise K×K conv of x with weight [C, K²] (+ bias [C] when not null).
void depthwise_forward(DType dtype, void* out, const void* x, const void* weight, const void* bias, int64_t B,
                       int64_t C, int64_t H, int64_t W, int64_t K, KernelStream stream);
/// Gradients of depthwise_forward given g [B, C, H, W]; any of dx, dweight [C, K²], dbias [C] may be null.
/// dweight/dbias are reduced per channel by one block each, in a fixed order (deterministic).
void depthwise_backward(DType dtype, void* dx, void* dweight, void* dbias, const void* g, const void* x,
                        const void* weight, int64_t B, int64_t C, int64_t H, int64_t W, int64_t K, KernelStream stream);

/// out [N, oh, ow] ← x [N, H, W] with PyTorch's adaptive bins (kernels/cpu/pool.h).
void adaptive_avg_pool2d_forward(DType dtype, void* out, const void* x, int64_t N, int64_t H, int64_t W, int64_t oh,
                                 int64_t ow, KernelStream stream);
/// dx [N, H, W] ← g [N, oh, ow]: every input element sums grad / bin size over the bins that contain it
/// (one thread per input element, no atomics).
void adaptive_avg_pool2d_backward(DType dtype, void* dx, const void* g, int64_t N, int64_t H, int64_t W, int64_t oh,
                                  int64_t ow, KernelStream stream);

}  // namespace vt::kernels::cuda
