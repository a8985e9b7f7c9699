// Flat-buffer optimizers on the GPU against the CPU per-tensor optimizers on the same parameters and gradients: AdamW
// and SGD over several steps with two weight-decay groups and odd shapes, device gradient clipping, state moving
// between CPU and GPU optimizers, a step that does not wait for the host, and clip + update in two launches.
//
// Tolerance (f32): the CPU computes each update in double from the stored f32 values, the GPU in f32 (as torch's fused
// AdamW). The update itself then differs by a few f32 roundings of a quantity of size <= ~lr·3, and the stored
// parameter may round to the neighbouring f32 (1 ulp = 1.2e-7·|p|) at each step; over 6 steps that is below 1e-6·|p| +
// 1e-7. We allow 4e-6·|p| + 1e-6.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "device_test_util.h"
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/stream.h"
#include "optim/adamw.h"
#include "optim/flat_buffers.h"
#include "optim/sgd.h"
#include "stream_gate.h"

namespace vt::test {
namespace {

using optim::ParamGroup;

struct Twin {
  std::vector<Tensor> cpu, gpu;
};

// Odd shapes in timm's two groups: {bias-like 1-D, scalar-ish} without decay, matrices with decay 0.05.
Twin make_twin(uint32_t seed) {
  const std::vector<Shape> shapes = {{37, 19}, {19}, {3, 7, 11}, {1}, {5, 4}, {257}};
  Twin t;
  for (size_t k = 0; k < shapes.size(); ++k) {
    Tensor c = randn_cpu(shapes[k], seed + uint32_t(k), DType::f32, 0.5);
    c.set_requires_grad(true);
    Tensor g = c.detach().to(kGpu);
    g.set_requires_grad(true);
    t.cpu.push_back(c);
    t.gpu.push_back(g);
  }
  return t;
}

std::vector<ParamGroup> groups_of(const std::vector<Tensor>& p) {
  return {{{p[1], p[3], p[5]}, 0.0}, {{p[0], p[2], p[4]}, 0.05}};
}

// Gives both twins the same random gradients: on the GPU either written into the flat view (the training path) or set
// as a new tensor (the optimizer copies it back into the flat buffer).
void give_grads(Twin& t, int step, bool into_view) {
  for (size_t k = 0; k < t.cpu.size(); ++k) {
    Tensor g = randn_cpu(t.cpu[k].shape(), 1000u + 17u * uint32_t(step) + uint32_t(k));
    t.cpu[k].set_grad(g);
    if (into_view) t.gpu[k].grad().copy_(g);
    else t.gpu[k].set_grad(g.to(kGpu));
  }
}

void expect_close(const Twin& t, const char* what, int step) {
  for (size_t k = 0; k < t.cpu.size(); ++k) {
    std::vector<double> c = t.cpu[k].to_vector(), g = t.gpu[k].to(cpu()).to_vector();
    ASSERT_EQ(c.size(), g.size());
    for (size_t i = 0; i < c.size(); ++i)
      ASSERT_NEAR(g[i], c[i], 4e-6 * std::abs(c[i]) + 1e-6)
          << what << " step " << step << " param " << k << " [" << i << "]";
  }
}

TEST(AdamWCuda, FusedFlatStepMatchesCpuAdamWOverSixSteps) {
  VT_REQUIRE_DEVICE();
  Twin t = make_twin(11);
  optim::AdamW cpu_opt(groups_of(t.cpu), 1e-2), gpu_opt(groups_of(t.gpu), 1e-2);
  ASSERT_NE(gpu_opt.flat(), nullptr) << "CUDA parameters use flat buffers";
  EXPECT_TRUE(gpu_opt.flat()->device().is_cuda());
  for (int s = 0; s < 6; ++s) {
    gpu_opt.zero_grad();
    give_grads(t, s, s % 2 == 0);
    cpu_opt.lr = gpu_opt.lr = 1e-2 * (1.0 + s) / 3.0;  // a schedule: lr changes every step
    cpu_opt.step();
    gpu_opt.step();
    expect_close(t, "adamw", s);
  }
  // The moments too (state() of the GPU optimizer gives device tensors).
  auto cs = cpu_opt.state(), gs = gpu_opt.state();
  ASSERT_EQ(cs.size(), gs.size());
  for (size_t i = 0; i < cs.size(); ++i) {
    EXPECT_EQ(cs[i].first, gs[i].first);
    EXPECT_LE(max_abs_diff(cs[i].second, gs[i].second), 4e-6 * max_abs(cs[i].second) + 1e-7) << cs[i].first;
  }
}

void check_sgd(double momentum, bool nesterov) {
  SCOPED_TRACE(::testing::Message() << "momentum " << momentum << " nesterov " << nesterov);
  Twin t = make_twin(23);
  optim::SGD cpu_opt(groups_of(t.cpu), 0.05, momentum, nesterov), gpu_opt(groups_of(t.gpu), 0.05, momentum, nesterov);
  for (int s = 0; s < 5; ++s) {
    gpu_opt.zero_grad();
    give_grads(t, s, true);
    cpu_opt.step();
    gpu_opt.step();
    expect_close(t, "sgd", s);
  }
}

TEST(AdamWCuda, FlatSgdMatchesCpuSgd) {
  VT_REQUIRE_DEVICE();
  check_sgd(0.0, false);
  check_sgd(0.9, false);
  check_sgd(0.9, true);
}

TEST(AdamWCuda, DeviceClipMatchesCpuClipThenStep) {
  VT_REQUIRE_DEVICE();
  Twin t = make_twin(31);
  optim::AdamW cpu_opt(groups_of(t.cpu), 1e-2), gpu_opt(groups_of(t.gpu), 1e-2);
  for (int s = 0; s < 4; ++s) {
    gpu_opt.zero_grad();
    give_grads(t, s, true);
    // Gradient norms here are ~sqrt(1231) ≈ 35: max_norm 5 clips, 1e4 does not.
    const double max_norm = s % 2 == 0 ? 5.0 : 1e4;
    const double cpu_norm = optim::clip_grad_norm(t.cpu, max_norm);
    Tensor gpu_norm = gpu_opt.clip_grad_norm(max_norm);
    EXPECT_TRUE(gpu_norm.device().is_cuda());
    EXPECT_EQ(gpu_norm.dim(), 0);
    cpu_opt.step();
    gpu_opt.step();  // writes the norm
    // f64 sums on both sides; the GPU result is rounded to f32 once.
    EXPECT_NEAR(gpu_norm.to(cpu()).item(), cpu_norm, 2e-7 * cpu_norm) << "step " << s;
    expect_close(t, "clipped adamw", s);
  }
  // Without a clip_grad_norm call before it, a step does not clip (the pending clip was consumed).
  gpu_opt.zero_grad();
  give_grads(t, 9, true);
  cpu_opt.step();
  gpu_opt.step();
  expect_close(t, "unclipped after clipped", 9);
}

TEST(AdamWCuda, GlobalNormOfOddSizesAndNonFiniteGradients) {
  VT_REQUIRE_DEVICE();
  Twin t = make_twin(41);
  optim::SGD gpu_opt(groups_of(t.gpu), 0.1);
  give_grads(t, 0, true);
  const double want = optim::clip_grad_norm(t.cpu, 1e30);
  Tensor norm = gpu_opt.clip_grad_norm(1e30);
  gpu_opt.step();  // the update launch finishes the norm and writes it
  EXPECT_NEAR(norm.to(cpu()).item(), want, 2e-7 * want);
  // A NaN gradient makes the norm NaN and, as torch, every parameter NaN after the clipped step.
  std::vector<double> g = t.cpu[4].grad().to_vector();
  g[3] = NAN;
  t.gpu[4].grad().copy_(Tensor::from_vector(g, t.cpu[4].shape()));
  Tensor nan_norm = gpu_opt.clip_grad_norm(1.0);
  gpu_opt.step();
  EXPECT_TRUE(std::isnan(nan_norm.to(cpu()).item()));
  EXPECT_TRUE(std::isnan(t.gpu[0].to(cpu()).to_vector()[0]));
  // The free function refuses device gradients (it would have to synchronize).
  EXPECT_NE(error_of([&] { optim::clip_grad_norm(t.gpu, 1.0); }).find("Optimizer::clip_grad_norm"), std::string::npos);
}

// global_grad_norm (partial sums + finishing launch) on an optimizer's flat gradients, read back to the host.
float reference_norm(const optim::Optimizer& opt) {
  Tensor norm = Tensor::empty({}, DType::f32, kGpu);
  Tensor workspace = Tensor::empty({kernels::cuda::grad_norm_workspace_size()}, DType::f64, kGpu);
  kernels::cuda::global_grad_norm(norm.data<float>(), workspace.data<double>(), opt.flat()->grads().data<float>(),
                                  opt.flat()->size(), kernels::cuda::current_stream());
  return static_cast<float>(norm.to(cpu()).item());
}

void expect_close_gpu(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const char* what, int step) {
  for (size_t k = 0; k < a.size(); ++k) {
    std::vector<double> x = a[k].to(cpu()).to_vector(), y = b[k].to(cpu()).to_vector();
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_NEAR(x[i], y[i], 4e-6 * std::abs(y[i]) + 1e-6)
          << what << " step " << step << " param " << k << " [" << i << "]";
  }
}

// Clip + update is two launches: clip_grad_norm() launches the partial sums, every block of the update finishes the
// norm from them and block 0 writes it. That norm must be global_grad_norm's bit for bit (same partial sums, same
// order of additions), and the clipped update the update of gradients scaled beforehand by min(1, max_norm /
// (norm + 1e-6)) in f32 (what the three-launch path did) with no clip. Both sides scale g by the same f32 product;
// the tolerance of expect_close only absorbs how the compiler may contract that product into SGD's g + wd·p.
TEST(AdamWCuda, TwoLaunchClipWritesGlobalNormBitForBitAndClipsAsAPrescaledStep) {
  VT_REQUIRE_DEVICE();
  for (const bool adamw : {true, false}) {
    SCOPED_TRACE(adamw ? "adamw" : "sgd momentum");
    Twin a = make_twin(83), b = make_twin(83);
    auto make = [&](const std::vector<Tensor>& p) -> std::unique_ptr<optim::Optimizer> {
      if (adamw) return std::make_unique<optim::AdamW>(groups_of(p), 1e-2);
      return std::make_unique<optim::SGD>(groups_of(p), 0.05, 0.9);
    };
    auto opt_a = make(a.gpu), opt_b = make(b.gpu);
    for (int s = 0; s < 4; ++s) {
      const double max_norm = s % 2 == 0 ? 5.0 : 1e4;  // norms are ~35: 5 clips, 1e4 does not
      give_grads(a, s, true);
      const float norm = reference_norm(*opt_a);
      const float coef = std::min(1.0f, static_cast<float>(max_norm) / (norm + 1e-6f));
      for (size_t k = 0; k < a.cpu.size(); ++k) {
        std::vector<double> g = a.cpu[k].grad().to_vector();
        for (double& v : g) v = static_cast<float>(static_cast<float>(v) * coef);
        b.gpu[k].grad().copy_(Tensor::from_vector(g, a.cpu[k].shape()));
      }
      Tensor returned = opt_a->clip_grad_norm(max_norm);
      if (s == 0) {
        EXPECT_EQ(returned.to(cpu()).item(), 0.0) << "zeros until the first clipped step";
      }
      opt_a->step();
      opt_b->step();
      EXPECT_EQ(static_cast<float>(returned.to(cpu()).item()), norm) << "step " << s;
      expect_close_gpu(a.gpu, b.gpu, "clipped vs prescaled", s);
    }
  }
}

// A ZeRO-1 slice updates part of the flat buffers but clips by the norm of all of them, and still writes that norm
// when its slice is empty (grad_norm_from_partials instead of an update launch).
TEST(AdamWCuda, RangedAdamWClipWritesTheWholeBufferNorm) {
  VT_REQUIRE_DEVICE();
  for (const int64_t end : {int64_t(64), int64_t(0)}) {
    SCOPED_TRACE(end);
    Twin t = make_twin(89);
    optim::AdamW opt(groups_of(t.gpu), 1e-2);
    opt.set_flat_range(0, end);
    give_grads(t, 0, true);
    const float want = reference_norm(opt);
    Tensor norm = opt.clip_grad_norm(1.0);
    opt.step();
    EXPECT_EQ(static_cast<float>(norm.to(cpu()).item()), want);
  }
}

TEST(AdamWCuda, StateMovesBetweenCpuAndGpuOptimizers) {
  VT_REQUIRE_DEVICE();
  Twin t = make_twin(53);
  optim::AdamW cpu_opt(groups_of(t.cpu), 1e-2), gpu_opt(groups_of(t.gpu), 1e-2);
  give_grads(t, 0, false);
  cpu_opt.step();
  for (size_t k = 0; k < t.cpu.size(); ++k) t.gpu[k].detach().copy_(t.cpu[k]);
  gpu_opt.load_state(cpu_opt.state());  // a CPU checkpoint resumed on the GPU
  EXPECT_EQ(gpu_opt.step_count(), 1);
  for (int s = 1; s < 3; ++s) {
    gpu_opt.zero_grad();
    give_grads(t, s, true);
    cpu_opt.step();
    gpu_opt.step();
    expect_close(t, "resumed", s);
  }
  Twin back = make_twin(53);
  optim::AdamW cpu_again(groups_of(back.cpu), 1e-2);
  cpu_again.load_state(gpu_opt.state());  // and back
  auto a = cpu_opt.state(), b = cpu_again.state();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_LE(max_abs_diff(a[i].second, b[i].second), 4e-6 * max_abs(a[i].second) + 1e-7) << a[i].first;
}

TEST(AdamWCuda, ZeroGradIsOneFillAndBackwardAccumulatesIntoTheFlatBuffer) {
  VT_REQUIRE_DEVICE();
  Twin t = make_twin(61);
  optim::AdamW gpu_opt(groups_of(t.gpu), 1e-2);
  const optim::FlatBuffers* flat = gpu_opt.flat();
  give_grads(t, 0, true);
  gpu_opt.zero_grad();  // default set_to_none: still the views, zero-filled
  EXPECT_EQ(max_abs(flat->grads()), 0.0);
  const char* base = static_cast<const char*>(flat->grads().raw_data());
  for (size_t k = 0; k < t.gpu.size(); ++k) {
    ASSERT_TRUE(t.gpu[k].grad().defined());
    const auto* g = static_cast<const char*>(t.gpu[k].grad().raw_data());
    EXPECT_TRUE(g >= base && g < base + flat->size() * 4) << "gradient " << k << " views the flat buffer";
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.gpu[k].raw_data()) % 64, 0u) << "parameter " << k << " 64-byte aligned";
  }
  // A leaf's backward with an existing gradient accumulates in place (autograd engine + CUDA add_).
  Tensor g = randn_cpu(t.cpu[2].shape(), 5);
  t.gpu[2].backward(g.to(kGpu));
  t.gpu[2].backward(g.to(kGpu));
  // Flat order: the no-decay group {19}, {1}, {257}, then {37,19}, {3,7,11}, {5,4}: t.gpu[2] is parameter 4.
  EXPECT_EQ(static_cast<const char*>(t.gpu[2].grad().raw_data()), base + 4 * flat->offset(4));
  std::vector<double> twice = g.to_vector();
  for (double& v : twice) v *= 2;
  EXPECT_LE(max_abs_diff(t.gpu[2].grad(), Tensor::from_vector(twice, g.shape())), 1e-6);
}

TEST(AdamWCuda, ClipStepAndZeroGradDoNotWaitForTheDevice) {
  VT_REQUIRE_DEVICE();
  Twin t = make_twin(71);
  optim::AdamW gpu_opt(groups_of(t.gpu), 1e-2);
  give_grads(t, 0, true);
  gpu_opt.clip_grad_norm(1.0);  // warm-up: state buffers and the norm workspace exist afterwards
  gpu_opt.step();
  VT_CUDA_CHECK(cudaDeviceSynchronize());
  // A blocking stream: a host synchronization (a device-to-host copy, item(), cudaDeviceSynchronize) would wait for the
  // gate and take the gate's 20 s.
  cudaStream_t s = nullptr;
  VT_CUDA_CHECK(cudaStreamCreate(&s));
  {
    kernels::cuda::StreamGuard on_s(s);
    StreamGate gate(s);
    const auto t0 = std::chrono::steady_clock::now();
    Tensor norm = gpu_opt.clip_grad_norm(1.0);
    gpu_opt.step();
    gpu_opt.zero_grad();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_FALSE(gate.passed()) << "a call waited for the device";
    EXPECT_LT(seconds, 5.0);
    gate.open();
  }
  VT_CUDA_CHECK(cudaStreamSynchronize(s));
  VT_CUDA_CHECK(cudaDeviceSynchronize());
  VT_CUDA_CHECK(cudaStreamDestroy(s));
}

}  // namespace
}  // namespace vt::test
