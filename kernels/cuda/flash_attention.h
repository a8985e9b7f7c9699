// Fused flash attention (FlashAttention-2 scheme) on bf16 tensors with f32 softmax statistics, for sm_90.
// Operands are [B, H, N, d] AttentionViews (kernels/shapes.h): a pointer and three element strides (batch, head,
// row; the last dim contiguous), so q/k/v can be slices of one qkv tensor and out/dq/dk/dv can be laid out
// [B, N, H, d]. Pointers and strides must be multiples of 16 bytes (8 elements): rows are moved with 16-byte copies
// (flash_attention_aligned).
// Head dims 32, 64 and 128. Forward: flash_attention_fwd.cu; backward: flash_attention_bwd.cu.
#pragma once
#include <cstdint>

#include "kernels/device_handles.h"
#include "kernels/shapes.h"  // AttentionView, AttentionShape

namespace vt::kernels::cuda {

/// True when the fused kernels handle head dim d (32, 64, 128).
bool flash_attention_supports(int64_t d);

/// False when the forward would run few CTAs that each stream a long key sequence (fewer 64-query blocks than a
/// quarter of the SMs, 16K keys or more: the landmarks of MiTA's shared branch at long N), which wants a split over
/// the keys this kernel does not make.
bool flash_attention_fills_device(const AttentionShape& shape);

/// True when `view` meets the kernels' 16-byte alignment needs (pointer and all three strides).
bool flash_attention_aligned(const AttentionView& view);

/// out = softmax(scale·q·kᵀ)·v per (batch, head), bf16; lse[b, h, i] = ln Σ_j exp(scale·q_i·k_j) in f32,
/// contiguous [B, H, N]. q and out have N rows, k and v shape.kv_rows(). `out.data` is written (it is const only so one view type serves inputs and outputs).
void flash_attention_forward(const AttentionView& out, float* lse, const AttentionView& q, const AttentionView& k,
                             const AttentionView& v, const AttentionShape& shape, KernelStream stream);

/// dsum[b, h, n] = Σ_c dout[b, h, n, c]·out[b, h, n, c] in f32 (contiguous [B, H, N]): the softmax backward's row
/// term, the first step of flash_attention_backward and of MiTA's masked flash backward.
void flash_attention_row_dot(float* dsum, const AttentionView& dout, const AttentionView& out,
                             const AttentionShape& shape, KernelStream stream);

/// How flash_attention_backward forms dq: a second pass over the keys that recomputes P and dS (deterministic),
/// or f32 atomics from the dK/dV pass into a scratch accumulator (one pass, last bits vary from run to run).
enum class FlashDqMode { separate_pass, atomics };

/// f32 elements of scratch memory flash_attention_backward needs (the rows' dO·O, and the dq accumulator).
int64_t flash_attention_backward_workspace(const AttentionShape& shape, FlashDqMode mode = FlashDqMode::separate_pass);

/// Gradients of flash_attention_forward: dq, dk, dv (bf16, written through their views) from dout, the inputs,
/// the forward's out and lse. `workspace` holds flash_attention_backward_workspace(shape, mode) floats,
/// 16-byte aligned.
void flash_attention_backward(const AttentionView& dq, const AttentionView& dk, const AttentionView& dv,
                              const AttentionView& dout, const AttentionView& q, const AttentionView& k,
                              const AttentionView& v, const AttentionView& out, const float* lse, float* workspace,
                              const AttentionShape& shape, KernelStream stream,
                              FlashDqMode mode = FlashDqMode::separate_pass);

}  // namespace vt::kernels::cuda
