// Asking for CUDA tensors where none can exist (a build without CUDA, or a machine without a GPU) is a clear
// error naming the device, not a crash. Skipped when a GPU is present (tests/cuda covers that case).
#include <gtest/gtest.h>

#include "tensor/tensor.h"
#include "test_util.h"
#ifdef VT_WITH_CUDA
#include "kernels/cuda/copy.h"
#endif

namespace vt::test {
namespace {

bool gpu_present() {
#ifdef VT_WITH_CUDA
  return kernels::cuda::device_count() > 0;
#else
  return false;
#endif
}

TEST(DeviceErrors, CudaTensorsWithoutAGpuAreAClearError) {
  if (gpu_present()) GTEST_SKIP() << "a CUDA device is present: tests/cuda covers device tensors";
  const Device gpu0{DeviceType::kCUDA, 0}, gpu3{DeviceType::kCUDA, 3};
  std::string empty = error_of([&] { Tensor::empty({197}, DType::f32, gpu0); });
  EXPECT_CONTAINS(empty, "[empty]");
  EXPECT_CONTAINS(empty, "cuda:0");
#ifdef VT_WITH_CUDA
  EXPECT_CONTAINS(empty, "not available");
#else
  EXPECT_CONTAINS(empty, "no CUDA backend");
#endif
  EXPECT_CONTAINS(error_of([&] { Tensor::zeros({3, 5}, DType::bf16, gpu3); }), "cuda:3");
  EXPECT_CONTAINS(error_of([&] { Tensor::full({7}, 1.5, DType::f64, gpu0); }), "cuda:0");
  Tensor h = Tensor::from_vector({1, 2, 3}, {3});
  std::string to = error_of([&] { h.to(gpu0); });
  EXPECT_CONTAINS(to, "cuda:0");
  EXPECT_CONTAINS(to, "[empty]");
  // The CPU tensor is untouched and still usable.
  EXPECT_EQ(h.to_vector(), (std::vector<double>{1, 2, 3}));
  EXPECT_TRUE(h.to(cpu()).same(h));
}

TEST(DeviceErrors, RequireCpuPassesCpuAndUndefinedTensors) {
  Tensor a = Tensor::zeros({2}), undefined;
  EXPECT_NO_THROW(require_cpu("op", {&a, &undefined, nullptr}));
}

}  // namespace
}  // namespace vt::test
