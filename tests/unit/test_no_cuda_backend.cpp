// A build without the CUDA backend links stand-ins behind the launcher headers (kernels/no_cuda): calling one is
// a clear error naming the launcher, and the op front-ends' device plumbing (ops::dispatch) still runs CPU work.
#include <gtest/gtest.h>

#include "kernels/cuda/softmax.h"
#include "ops/dispatch.h"
#include "test_util.h"

namespace vt::test {
namespace {

TEST(NoCudaBackend, LauncherStubsRefuseNamingTheLauncher) {
#ifdef VT_WITH_CUDA
  GTEST_SKIP() << "this build has the CUDA backend: the launchers are real (tests/cuda)";
#endif
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  const std::string err = error_of([&] {
    ops::on_cuda(Device{DeviceType::kCUDA, 0}, [&](ops::Cuda c) {
      kernels::cuda::softmax_forward(DType::f32, y, x, 1, 4, 1, false, c.stream);
    });
  });
  EXPECT_CONTAINS(err, "[softmax_forward] needs the CUDA backend");
  // A CUDA device takes the CUDA branch (here the guard and stream stand-ins do nothing).
  EXPECT_EQ(ops::dispatch(Device{DeviceType::kCUDA, 0}, [] { return 1; }, [](ops::Cuda) { return 2; }), 2);
}

TEST(Dispatch, RunsTheCpuBranchForCpuDevices) {
  int ran = 0;
  ops::dispatch(cpu(), [&] { ran = 1; }, [&](ops::Cuda) { ran = 2; });
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(ops::dispatch(cpu(), [] { return 7; }, [](ops::Cuda) { return 8; }), 7);
}

}  // namespace
}  // namespace vt::test
