// DeiT-Tiny against timm on the GPU in f32 (same fixture and tolerances as the CPU test: tests/nn/deit_parity.h).
// cuBLASLt runs f32 GEMMs with TF32 off, so the CPU bounds (>= 30x above the f32 error measured there) apply.
#include "cuda/device_test_util.h"
#include "tests/nn/deit_parity.h"

namespace vt::test {
namespace {

TEST(DeitParityCuda, LogitsLossAndGradientsMatchTimm) {
  VT_REQUIRE_DEVICE();
  deit_parity::check_deit_tiny_parity(kGpu);
}

}  // namespace
}  // namespace vt::test
