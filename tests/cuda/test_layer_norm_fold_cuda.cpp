// LayerNorm backward with a pending residual gradient folded in (dx = dres + LN backward): the CUDA kernel's
// packed and generic paths against the CPU kernel on the same inputs and statistics, and the fold through the
// autograd engine on CUDA against the same graph on the CPU.
//
// f32 tolerance: as in test_nn_functional_cuda.cpp, an f32 row sum of C terms is within (8 + C/32)·2^-23
// relative; dx cancels, so the bound is taken relative to max |dx| (4× for the two sums it uses). A missing or
// doubled dres is off by |dres| ≈ 1, far above it. bf16: expect_bf16_rule against the f64 CPU kernel, `plain`
// being the CPU f32 kernel on the same bf16 values with dx rounded to bf16 once.
#include <gtest/gtest.h>

#include <string>

#include "cuda/device_test_util.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/stream.h"
#include "ops/ops.h"

namespace vt::test {
namespace {

double chain_tol(int64_t n) { return (8.0 + static_cast<double>(n) / 32.0) * 0x1p-23; }

void* ptr(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

/// Row statistics of x [rows, C] from the CPU forward in `dtype` (f32 for the CUDA kernels, f64 for the oracle).
std::pair<Tensor, Tensor> cpu_stats(const Tensor& x, DType dtype) {
  const int64_t C = x.shape().back(), rows = x.numel() / C;
  Tensor xc = x.to(dtype).contiguous(), y = Tensor::empty(x.shape(), dtype);
  Tensor mean = Tensor::empty({rows}, dtype), rstd = Tensor::empty({rows}, dtype);
  kernels::cpu::layer_norm_forward(dtype, y.raw_data(), mean.raw_data(), rstd.raw_data(), xc.raw_data(), nullptr,
                                   nullptr, rows, C, 1e-5);
  return {mean, rstd};
}

/// dx of the CPU kernel in `dtype` (inputs converted to it), dres added.
Tensor cpu_dx(const Tensor& x, const Tensor& dy, const Tensor& dres, const Tensor& w, DType dtype) {
  const int64_t C = x.shape().back(), rows = x.numel() / C;
  auto [mean, rstd] = cpu_stats(x, dtype);
  Tensor xc = x.to(dtype), dyc = dy.to(dtype), rc = dres.to(dtype), wc = w.to(dtype);
  Tensor dx = Tensor::empty(x.shape(), dtype);
  kernels::cpu::layer_norm_backward(dtype, dx.raw_data(), rc.raw_data(), nullptr, nullptr, dyc.raw_data(),
                                    xc.raw_data(), mean.raw_data(), rstd.raw_data(), wc.raw_data(), rows, C);
  return dx;
}

/// dx (x's dtype) and dw, db of the CUDA kernel; `misalign` moves dres one element off its 16-byte alignment,
/// which must send the call to the generic kernel.
struct GpuGrads {
  Tensor dx, dw, db;
};
GpuGrads gpu_backward(const Tensor& x, const Tensor& dy, const Tensor& dres, const Tensor& w, bool misalign) {
  const int64_t C = x.shape().back(), rows = x.numel() / C;
  auto [mean, rstd] = cpu_stats(x, DType::f32);
  Tensor xg = x.to(kGpu), dyg = dy.to(kGpu), wg = w.to(kGpu), mg = mean.to(kGpu), rg = rstd.to(kGpu);
  Tensor rbuf = Tensor::zeros({rows * C + 1}, x.dtype(), kGpu);
  Tensor rg_res = rbuf.slice(0, misalign ? 1 : 0, rows * C + (misalign ? 1 : 0));
  rg_res.copy_(dres.reshape({rows * C}).to(kGpu));
  GpuGrads out{Tensor::empty(x.shape(), x.dtype(), kGpu), Tensor::empty({C}, DType::f32, kGpu),
               Tensor::empty({C}, DType::f32, kGpu)};
  Tensor scratch = Tensor::empty({kernels::cuda::layer_norm_backward_scratch(rows, C)}, DType::f32, kGpu);
  kernels::cuda::layer_norm_backward(x.dtype(), dy.dtype(), ptr(out.dx), ptr(rg_res), out.dw.data<float>(),
                                     out.db.data<float>(), dyg.raw_data(), xg.raw_data(), mg.data<float>(),
                                     rg.data<float>(), wg.data<float>(), rows, C, scratch.data<float>(),
                                     kernels::cuda::current_stream());
  return out;
}

struct FoldCase {
  int64_t rows, C;
  bool misalign;
};

// 384 and 192 (DeiT-S/Ti) packed, 100 packed for f32 only, 390 and 7000 generic; odd row counts.
const std::vector<FoldCase> kFoldCases = {{1001, 384, false}, {37, 192, false}, {13, 100, false},
                                          {5, 390, false},    {3, 7000, false}, {45, 384, true}};

TEST(LayerNormFoldCuda, F32DxWithResidualMatchesCpu) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 500;
  for (const auto& c : kFoldCases) {
    for (DType dy_dtype : {DType::f32, DType::bf16}) {  // bf16 dy: the autocast case (f32 x, bf16 LN output)
      const std::string what = "rows " + std::to_string(c.rows) + " C " + std::to_string(c.C) + " dy " +
                               dtype_name(dy_dtype) + (c.misalign ? " misaligned dres" : "");
      SCOPED_TRACE(what);
      Tensor x = randn_cpu({c.rows, c.C}, seed++, DType::f32, 2.0, 0.5);
      Tensor dy = randn_cpu({c.rows, c.C}, seed++, dy_dtype), dres = randn_cpu({c.rows, c.C}, seed++);
      Tensor w = randn_cpu({c.C}, seed++, DType::f32, 0.3, 1.0);
      Tensor want = cpu_dx(x, dy, dres, w, DType::f32);
      GpuGrads got = gpu_backward(x, dy, dres, w, c.misalign);
      ASSERT_EQ(got.dx.dtype(), DType::f32);
      const double err = max_abs_diff(got.dx, want), tol = 4 * chain_tol(c.C) * max_abs(want);
      EXPECT_LE(err, tol) << what;
      // dw, db do not see dres: the CPU kernel without it.
      Tensor dw = Tensor::empty({c.C}), db = Tensor::empty({c.C});
      auto [mean, rstd] = cpu_stats(x, DType::f32);
      Tensor dyc = dy.to(DType::f32);
      kernels::cpu::layer_norm_backward(DType::f32, nullptr, nullptr, dw.raw_data(), db.raw_data(), dyc.raw_data(),
                                        x.raw_data(), mean.raw_data(), rstd.raw_data(), w.raw_data(), c.rows, c.C);
      // Σ over rows of terms |dy·x̂| ≲ 10 in f32: a loose bound, far below a missing or doubled row.
      const double wb_tol = 1e-5 * static_cast<double>(c.rows) * 10;
      EXPECT_LE(max_abs_diff(got.dw, dw), wb_tol) << what;
      EXPECT_LE(max_abs_diff(got.db, db), wb_tol) << what;
    }
  }
}

TEST(LayerNormFoldCuda, Bf16DxWithResidualFollowsTheBf16Rule) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 600;
  for (const auto& c : kFoldCases) {
    const std::string what =
        "bf16 rows " + std::to_string(c.rows) + " C " + std::to_string(c.C) + (c.misalign ? " misaligned dres" : "");
    SCOPED_TRACE(what);
    Tensor x = randn_cpu({c.rows, c.C}, seed++, DType::bf16, 2.0, 0.5);
    Tensor dy = randn_cpu({c.rows, c.C}, seed++, DType::bf16), dres = randn_cpu({c.rows, c.C}, seed++, DType::bf16);
    Tensor w = randn_cpu({c.C}, seed++, DType::f32, 0.3, 1.0);
    GpuGrads got = gpu_backward(x, dy, dres, w, c.misalign);
    ASSERT_EQ(got.dx.dtype(), DType::bf16);
    Tensor ref = cpu_dx(x, dy, dres, w, DType::f64);
    Tensor plain = cpu_dx(x, dy, dres, w, DType::f32).to(DType::bf16);
    expect_bf16_rule(got.dx, plain, ref, what.c_str());
  }
}

// h + layer_norm(h)·s with h = 1.5·x, as a pre-norm block: the add's gradient for h waits while the mul and
// LayerNorm run, and LayerNorm folds it. The same graph on the CPU (which folds too) is the reference.
struct GraphGrads {
  Tensor dx, dw, db;
};
GraphGrads residual_graph(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& s, const Tensor& dz,
                          Device dev, DType ln_out) {
  Tensor xi = x.to(dev).detach().set_requires_grad(true);
  Tensor wi = w.to(dev).detach().set_requires_grad(true), bi = b.to(dev).detach().set_requires_grad(true);
  Tensor h = xi * 1.5;
  Tensor z = h + ops::layer_norm(h, wi, bi, 1e-5, ln_out) * s.to(dev);
  z.backward(dz.to(dev));
  return {xi.grad(), wi.grad(), bi.grad()};
}

TEST(LayerNormFoldCuda, EngineFoldMatchesCpuGraph) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 700;
  for (int64_t C : {384, 100, 390}) {
    for (DType ln_out : {DType::f32, DType::bf16}) {
      const std::string what = "C " + std::to_string(C) + " LN output " + dtype_name(ln_out);
      SCOPED_TRACE(what);
      const Shape shape{3, 67, C};
      // dz and s hold bf16 values, so dz·s is exact in f32 and its rounding to a bf16 LN-output gradient is the
      // same on both devices whatever precision their mul backward uses.
      Tensor x = randn_cpu(shape, seed++, DType::f32, 2.0), dz = randn_cpu(shape, seed++, DType::bf16).to(DType::f32);
      Tensor s = randn_cpu(shape, seed++, DType::bf16).to(DType::f32), w = randn_cpu({C}, seed++, DType::f32, 0.3, 1.0);
      Tensor b = randn_cpu({C}, seed++);
      GraphGrads gpu = residual_graph(x, w, b, s, dz, kGpu, ln_out);
      GraphGrads ref = residual_graph(x, w, b, s, dz, cpu(), ln_out);
      ASSERT_EQ(gpu.dx.dtype(), DType::f32);
      // What differs is the f32 summation order of the LN backward's row sums.
      EXPECT_LE(max_abs_diff(gpu.dx, ref.dx), 4 * chain_tol(C) * max_abs(ref.dx)) << what;
      const double wb_tol = 1e-5 * 3 * 67 * 10;
      EXPECT_LE(max_abs_diff(gpu.dw, ref.dw), wb_tol) << what;
      EXPECT_LE(max_abs_diff(gpu.db, ref.db), wb_tol) << what;
    }
  }
}

}  // namespace
}  // namespace vt::test
