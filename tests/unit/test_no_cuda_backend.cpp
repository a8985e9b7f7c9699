// A build without the CUDA backend links stand-ins behind the launcher headers (kernels/no_cuda): calling one is
// a clear error naming the launcher, and the op front-ends' device plumbing (kernels::dispatch) still runs CPU work.
#include <gtest/gtest.h>

#include "kernels/cuda/softmax.h"
#include "kernels/dispatch.h"
#include "test_util.h"

namespace vt::test {
namespace {

TEST(NoCudaBackend, LauncherStubsRefuseNamingTheLauncher) {
#ifdef VT_WITH_CUDA
  GTEST_SKIP() << "this build has the CUDA backend: the launchers are real (tests/cuda)";
#endif
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  const std::string err = error_of([&] {
    kernels::on_cuda(Device{DeviceType::kCUDA, 0}, [&](kernels::Cuda c) {
      kernels::cuda::softmax_forward(DType::f32, y, x, 1, 4, 1, false, c.stream);
    });
  });
  EXPECT_CONTAINS(err, "[softmax_forward] needs the CUDA backend");
  // A CUDA device takes the CUDA branch (here the guard and stream stand-ins do nothing).
  EXPECT_EQ(kernels::dispatch(
                Device{DeviceType::kCUDA, 0}, [] { return 1; }, [](kernels::Cuda) { return 2; }),
            2);
}

TEST(Dispatch, RunsTheCpuBranchForCpuDevices) {
  int ran = 0;
  kernels::dispatch(
      cpu(), [&] { ran = 1; }, [&](kernels::Cuda) { ran = 2; });
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(kernels::dispatch(
                cpu(), [] { return 7; }, [](kernels::Cuda) { return 8; }),
            7);
}

}  // namespace
}  // namespace vt::test
