// Runs one differentiable op on the GPU and on the CPU from the same f32 inputs and compares the outputs and the
// input gradients (backward from one random output gradient), by the rules of issue 4:
//  - f32: the GPU result vs the f64 CPU reference must err at most 4× the f32 CPU result's error plus
//    1e-5·max|ref|. Both are f32 evaluations of the same sums in other orders (typical error ~√K·u·scale, far
//    below the floor for K ≤ a few hundred); a wrong index, operand or layout is off by O(max|ref|).
//  - bf16: expect_bf16_rule against "plain" = the f64 CPU op on bf16-rounded inputs and output gradient, with its
//    results rounded to bf16.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "cuda/device_test_util.h"
#include "tensor/tensor.h"

namespace vt::test {

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct OpRun {
  Tensor out;                 // on the CPU
  std::vector<Tensor> grads;  // per input, on the CPU (undefined when the input was undefined or not floating)
};

/// f applied to the inputs converted to `dt` on `dev` (leaves requiring grad), then backward from a N(0,1) output
/// gradient drawn with `seed` and rounded through `gout_round` (use f64 for no rounding).
inline OpRun run_op(const OpFn& f, const std::vector<Tensor>& inputs, Device dev, DType dt, uint32_t seed,
                    DType gout_round = DType::f64, bool backward = true) {
  std::vector<Tensor> leaves;
  for (const Tensor& x : inputs) {
    if (!x.defined()) {
      leaves.emplace_back();
      continue;
    }
    Tensor l = x.to(dt).to(dev).detach();
    if (backward) l.set_requires_grad(true);
    leaves.push_back(l);
  }
  Tensor out = f(leaves);
  OpRun r;
  r.out = out.detach().to(cpu());
  if (backward) {
    Tensor gout = randn_cpu(out.shape(), seed, DType::f64).to(gout_round).to(out.dtype()).to(dev);
    out.backward(gout);
  }
  for (const Tensor& l : leaves) r.grads.push_back(l.defined() && l.grad().defined() ? l.grad().to(cpu()) : Tensor());
  return r;
}

/// The f32 rule above for one result.
inline void expect_f32_rule(const Tensor& gpu, const Tensor& cpu32, const Tensor& ref64, const std::string& what) {
  ASSERT_EQ(gpu.shape(), ref64.shape()) << what;
  EXPECT_EQ(gpu.dtype(), DType::f32) << what;
  const double e_gpu = max_abs_diff(gpu, ref64), e_cpu = max_abs_diff(cpu32, ref64);
  EXPECT_LE(e_gpu, 4 * e_cpu + 1e-5 * max_abs(ref64) + 1e-30)
      << what << ": GPU f32 error " << e_gpu << ", CPU f32 error " << e_cpu << ", max|ref| " << max_abs(ref64);
}

/// Forward and every gradient of f in f32 (and in bf16 when `bf16`) on the GPU against the CPU.
inline void check_op(const std::string& what, const OpFn& f, const std::vector<Tensor>& inputs, uint32_t seed,
                     bool bf16 = true, bool backward = true) {
  const OpRun ref = run_op(f, inputs, cpu(), DType::f64, seed, DType::f64, backward);
  const OpRun c32 = run_op(f, inputs, cpu(), DType::f32, seed, DType::f64, backward);
  const OpRun g32 = run_op(f, inputs, kGpu, DType::f32, seed, DType::f64, backward);
  expect_f32_rule(g32.out, c32.out, ref.out, what + " f32 forward");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!ref.grads[i].defined()) continue;
    ASSERT_TRUE(g32.grads[i].defined()) << what << " f32: no gradient for input " << i;
    expect_f32_rule(g32.grads[i], c32.grads[i], ref.grads[i], what + " f32 gradient of input " + std::to_string(i));
  }
  if (!bf16) return;
  std::vector<Tensor> rounded;
  for (const Tensor& x : inputs) rounded.push_back(x.defined() ? x.to(DType::bf16).to(DType::f32) : Tensor());
  const OpRun plain = run_op(f, rounded, cpu(), DType::f64, seed, DType::bf16, backward);
  const OpRun gb = run_op(f, inputs, kGpu, DType::bf16, seed, DType::f64, backward);
  EXPECT_EQ(gb.out.dtype(), DType::bf16) << what;
  expect_bf16_rule(gb.out, plain.out.to(DType::bf16), ref.out, (what + " bf16 forward").c_str());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!ref.grads[i].defined()) continue;
    ASSERT_TRUE(gb.grads[i].defined()) << what << " bf16: no gradient for input " << i;
    EXPECT_EQ(gb.grads[i].dtype(), DType::bf16) << what << " gradient " << i;
    expect_bf16_rule(gb.grads[i], plain.grads[i].to(DType::bf16), ref.grads[i],
                     (what + " bf16 gradient of input " + std::to_string(i)).c_str());
  }
}

}  // namespace vt::test
