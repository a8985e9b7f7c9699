// MiTA's expert top-k on the GPU (kernels/cuda/mita/mita_topk.h) against a host reference of the same rule: the k
// largest entries of each row by float order (the ordered-bits map), ties to the lower index, indices ascending.
// Row lengths cover the warp-per-row kernel (N ≤ 1024, each register count) and the block kernel just above it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "device_test_util.h"
#include "kernels/cuda/mita/mita_topk.h"
#include "kernels/cuda/stream.h"

namespace vt::test {
namespace {

uint32_t ordered(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

std::vector<int32_t> host_topk(const std::vector<float>& x, int64_t rows, int N, int k) {
  std::vector<int32_t> out;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int32_t> idx(static_cast<size_t>(N));
    std::iota(idx.begin(), idx.end(), 0);
    const float* row = x.data() + r * N;
    std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return ordered(row[a]) > ordered(row[b]); });
    idx.resize(static_cast<size_t>(k));
    std::sort(idx.begin(), idx.end());
    out.insert(out.end(), idx.begin(), idx.end());
  }
  return out;
}

TEST(MitaTopkCuda, RowsEqualTheHostRuleAcrossRowLengthsAndTies) {
  VT_REQUIRE_DEVICE();
  uint32_t seed = 70;
  for (int N : {1, 5, 33, 64, 100, 197, 300, 600, 1024, 1025, 2048, 4096})
    for (int k : {1, 25, 128, N / 2 + 1, N})
      for (bool ties : {false, true}) {
        if (k < 1 || k > N) continue;
        const int64_t rows = 9;  // not a multiple of the 4 warps per block
        const std::vector<double> drawn = randn_cpu({rows, N}, seed++).to_vector();
        std::vector<float> x(drawn.begin(), drawn.end());
        // Ties: small integers (many equal scores, no signed zeros: ±0 order by their bits here).
        if (ties)
          for (float& v : x) v = static_cast<float>(static_cast<int>(v * 2.f) % 3) + 0.5f;
        const Tensor dev_x =
            Tensor::from_vector(std::vector<double>(x.begin(), x.end()), {rows, N}, DType::f32).to(kGpu);
        Tensor dev_out = Tensor::empty({rows, k}, DType::i32, kGpu);
        kernels::cuda::mita_topk_rows(dev_x.data<float>(), dev_out.data<int32_t>(), rows, N, k,
                                      kernels::cuda::current_stream());
        const Tensor got = dev_out.to(cpu());
        const std::vector<int32_t> want = host_topk(x, rows, N, k);
        const std::vector<int32_t> have(got.data<int32_t>(), got.data<int32_t>() + rows * k);
        EXPECT_EQ(have, want) << "N=" << N << " k=" << k << (ties ? " ties" : "");
      }
}

}  // namespace
}  // namespace vt::test
