// Shared by the CUDA test files: skip without a device (with the reason), tensors on the GPU, and the
// comparison rules of issue 4: f32 within a stated tolerance of the CPU kernel; bf16 by the rule
// "our error vs the f64 reference <= 2x the error of a plain bf16 implementation".
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cuda/copy.h"
#include "kernels/cuda/event.h"
#include "kernels/cuda/stream.h"
#include "tensor/tensor.h"
#include "test_util.h"

namespace vt::test {

#define VT_REQUIRE_DEVICE()                                                                       \
  do {                                                                                            \
    if (::vt::kernels::cuda::device_count() == 0)                                                 \
      GTEST_SKIP() << "no CUDA device: "                                                          \
                   << ::vt::test::error_of([] { ::vt::kernels::cuda::check_device(0, "test"); }); \
  } while (0)

inline const Device kGpu{DeviceType::kCUDA, 0};

/// Normal(mean, std) values as a CPU tensor of `dtype` (bf16 values are the rounded f64 draws).
inline Tensor randn_cpu(const Shape& shape, uint32_t seed, DType dtype = DType::f32, double std = 1.0,
                        double mean = 0.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(mean, std);
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_vector(v, shape, dtype);
}

/// max |a - b| over all elements (any devices, dtypes, layouts; compared as doubles).
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  std::vector<double> x = a.to(cpu()).to_vector(), y = b.to(cpu()).to_vector();
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    double d = std::abs(x[i] - y[i]);
    if (std::isnan(d)) return INFINITY;
    m = std::max(m, d);
  }
  return m;
}

inline double max_abs(const Tensor& a) {
  double m = 0;
  for (double v : a.to(cpu()).to_vector()) m = std::max(m, std::abs(v));
  return m;
}

/// The bf16 rule: err(ours) <= 2 * err(plain) + floor, errors as max |x - ref| against the f64 reference.
/// `plain` is the same computation done the plain way in bf16 (bf16 inputs, f32 math, output rounded to bf16).
/// `floor` (default: 1e-6 * max|ref|) keeps the rule meaningful when plain happens to be exact.
inline void expect_bf16_rule(const Tensor& ours, const Tensor& plain, const Tensor& ref64, const char* what,
                             double floor = -1) {
  double e_ours = max_abs_diff(ours, ref64), e_plain = max_abs_diff(plain, ref64);
  if (floor < 0) floor = 1e-6 * max_abs(ref64);
  EXPECT_LE(e_ours, 2 * e_plain + floor) << what << ": our bf16 error " << e_ours << " vs plain bf16 error " << e_plain;
}

/// A model run on the GPU against the same model on the CPU, both f32, after one backward each: the logits within
/// 2e-4 of their scale, every parameter's gradient within grad_rel of its own scale (different summation orders).
template <class Model>
void expect_gpu_model_equals_cpu(const Tensor& gpu_logits, const Tensor& cpu_logits, Model& gpu_model, Model& cpu_model,
                                 double grad_rel) {
  EXPECT_LE(max_abs_diff(gpu_logits, cpu_logits), 2e-4 * max_abs(cpu_logits)) << "logits";
  auto pc = cpu_model.named_parameters(), pg = gpu_model.named_parameters();
  ASSERT_EQ(pc.size(), pg.size());
  for (size_t i = 0; i < pc.size(); ++i) {
    ASSERT_TRUE(pc[i].second.grad().defined() && pg[i].second.grad().defined()) << pc[i].first;
    EXPECT_LE(max_abs_diff(pg[i].second.grad(), pc[i].second.grad()), grad_rel * max_abs(pc[i].second.grad()) + 1e-9)
        << pc[i].first;
  }
}

/// Mean milliseconds of one f() over 20 runs after 3 warm-up runs, timed by CUDA events on the current stream (for
/// the DISABLED_Timing tests).
template <typename F>
double mean_ms(F&& f) {
  const kernels::KernelStream stream = kernels::cuda::current_stream();
  for (int i = 0; i < 3; ++i) f();
  constexpr int kIters = 20;
  kernels::cuda::CudaEvent start, stop;
  start.record(stream);
  for (int i = 0; i < kIters; ++i) f();
  stop.record(stream);
  return static_cast<double>(stop.elapsed_ms_since(start)) / kIters;
}

}  // namespace vt::test
