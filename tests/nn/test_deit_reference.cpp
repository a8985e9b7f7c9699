// DeiT-Tiny against timm on the CPU (the check itself and its tolerances: tests/nn/deit_parity.h).
#include "tests/nn/deit_parity.h"

namespace vt::test {
namespace {

TEST(DeitReference, LogitsLossAndGradientsMatchTimm) { deit_parity::check_deit_tiny_parity(cpu()); }

}  // namespace
}  // namespace vt::test
