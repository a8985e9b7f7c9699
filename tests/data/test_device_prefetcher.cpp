// DevicePrefetcher: on the CPU it forwards the loader's batches; on a GPU (skipped without one) the batches it
// copies ahead through pinned buffers on its own stream equal the loader's, for several depths, across epochs and
// a restart mid-epoch, and a loader error surfaces through it.
#include <gtest/gtest.h>

#include <stdexcept>

#include "data/device_prefetcher.h"
#include "data/samplers.h"
#ifdef VT_WITH_CUDA
#include "cuda/device_test_util.h"
#endif

namespace vt::test {
namespace {

class CountingSource : public data::SampleSource {
 public:
  explicit CountingSource(int64_t n, int64_t fail_at = -1) : n_(n), fail_at_(fail_at) {}
  int64_t size() const override { return n_; }
  std::array<int64_t, 3> image_shape() const override { return {3, 5, 7}; }
  std::string describe(int64_t i) const override { return "sample " + std::to_string(i); }
  int64_t load(int64_t i, data::SampleRng& rng, float* image) const override {
    if (i == fail_at_) throw std::runtime_error("disk on fire");
    for (int k = 0; k < 105; ++k) image[k] = static_cast<float>(rng.uniform()) + static_cast<float>(i);
    return i * 3;
  }

 private:
  int64_t n_, fail_at_;
};

data::LoaderOptions small_batches() {
  data::LoaderOptions o;
  o.batch_size = 6;
  o.threads = 2;
  o.drop_last = false;
  return o;
}

std::vector<std::vector<double>> epoch_values(data::DevicePrefetcher& p, int64_t epoch) {
  p.start_epoch(epoch);
  std::vector<std::vector<double>> out;
  data::Batch b;
  while (p.next(b)) {
    EXPECT_EQ(b.images.device(), p.device());
    out.push_back(b.images.to(cpu()).to_vector());
    out.push_back(b.labels.to(cpu()).to_vector());
  }
  return out;
}

TEST(DevicePrefetcher, OnTheCpuForwardsTheLoader) {
  CountingSource src(29);
  auto sampler = [](int64_t epoch) { return data::shuffled_order(29, 5, epoch); };
  data::Loader direct(src, sampler, small_batches()), wrapped(src, sampler, small_batches());
  data::DevicePrefetcher ref(direct, cpu(), 1), p(wrapped, cpu(), 3);
  EXPECT_EQ(epoch_values(p, 2), epoch_values(ref, 2));
  EXPECT_THROW(data::DevicePrefetcher(direct, cpu(), 0), Error);
}

#ifdef VT_WITH_CUDA
TEST(DevicePrefetcher, GpuBatchesEqualTheLoadersForEveryDepth) {
  VT_REQUIRE_DEVICE();
  CountingSource src(41);
  auto sampler = [](int64_t epoch) { return data::shuffled_order(41, 5, epoch); };
  data::Loader cpu_loader(src, sampler, small_batches());
  data::DevicePrefetcher ref(cpu_loader, cpu(), 1);
  const auto e0 = epoch_values(ref, 0), e1 = epoch_values(ref, 1);
  ASSERT_EQ(e0.size(), 2u * 7u);
  for (int depth : {1, 2, 5}) {
    data::Loader loader(src, sampler, small_batches());
    data::DevicePrefetcher p(loader, kGpu, depth);
    EXPECT_EQ(epoch_values(p, 0), e0) << "depth " << depth;
    p.start_epoch(1);  // restart mid-epoch: the batches in flight are dropped
    data::Batch b;
    ASSERT_TRUE(p.next(b));
    EXPECT_EQ(epoch_values(p, 1), e1) << "depth " << depth;
  }
}

TEST(DevicePrefetcher, GpuSurfacesTheLoadersError) {
  VT_REQUIRE_DEVICE();
  CountingSource src(30, 17);
  data::Loader loader(
      src, [](int64_t) { return data::shuffled_order(30, 0, 0); }, small_batches());
  data::DevicePrefetcher p(loader, kGpu, 2);
  p.start_epoch(0);
  data::Batch b;
  try {
    while (p.next(b)) {
    }
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("disk on fire"), std::string::npos) << e.what();
  }
}
#endif

}  // namespace
}  // namespace vt::test
