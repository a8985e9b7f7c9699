// NcclCommunicator on one GPU (a job of world 1, no rendezvous): every collective on f32, bf16 and f64 device
// tensors (odd sizes), which with one rank must leave the values exactly as they were (all_reduce, reduce_scatter,
// all_gather) or copy them (broadcast), and must order correctly with the compute stream (the inputs are written
// by kernels queued just before). Then the trainer through the data-parallel NCCL path with one rank, DDP and
// ZeRO-1: the same losses as the plain single-GPU run to the bit (a one-rank sum is exact, the scale is skipped and
// the sharded AdamW step covers the whole buffer). The multi-GPU equivalence is scripts/dist_equivalence.sh.
#include <cmath>
#include <filesystem>

#include "cuda/device_test_util.h"
#include "dist/nccl_communicator.h"
#include "engine/trainer.h"
#include "ops/ops.h"
#include "training_runs.h"
#include "unit/io_temp_dir.h"

namespace vt::test {
namespace {

namespace fs = std::filesystem;

TEST(NcclCommunicator, OneRankCollectivesKeepOrCopyValues) {
  VT_REQUIRE_DEVICE();
  ASSERT_TRUE(dist::NcclCommunicator::available());
  dist::NcclCommunicator comm(dist::LaunchEnv{}, kGpu);
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.world(), 1);
  for (DType dt : {DType::f32, DType::bf16, DType::f64}) {
    for (int64_t n : {1, 7, 1000, 4099}) {
      const Tensor host = randn_cpu({n}, static_cast<uint32_t>(n), dt);
      // Written by a kernel on the compute stream right before the collective: tests the event edge (f64: a copy).
      auto make = [&] { return dt == DType::f64 ? host.to(kGpu) : ops::mul(host.to(kGpu), 2.0); };
      Tensor t = make();
      comm.all_reduce_sum(t);
      comm.wait();
      const Tensor expected = make();
      comm.all_reduce_sum(t);
      comm.wait();
      EXPECT_EQ(max_abs_diff(t, expected), 0.0) << dtype_name(dt) << " n=" << n << " all_reduce";
      comm.reduce_scatter_sum(t);
      comm.all_gather(t);
      comm.wait();
      EXPECT_EQ(max_abs_diff(t, expected), 0.0) << dtype_name(dt) << " n=" << n << " reduce_scatter/all_gather";
      comm.broadcast(t, 0);
      comm.wait();
      EXPECT_EQ(max_abs_diff(t, expected), 0.0) << dtype_name(dt) << " n=" << n << " broadcast";
    }
  }
  comm.barrier();
  EXPECT_THROW(comm.broadcast(Tensor::zeros({3}, DType::f32, kGpu), 1), Error);
  EXPECT_THROW(comm.all_reduce_sum(Tensor::zeros({3})), Error);  // a host tensor
}

TEST(NcclCommunicator, TrainerWithOneRankMatchesThePlainRun) {
  VT_REQUIRE_DEVICE();
  if (!fs::exists(vt::test::fmnist_dir())) GTEST_SKIP() << "Fashion-MNIST not at " << vt::test::fmnist_dir();
  TempDir dir;
  io::Config cfg = tiny_training_config(dir.file("plain"), "cuda:0", 64);
  const auto plain = run_losses(cfg);
  for (bool zero1 : {false, true}) {
    cfg.train.output = dir.file(zero1 ? "zero1" : "ddp");
    cfg.dist.zero1 = zero1;
    cfg.dist.bucket_mb = 0.01;  // several buckets
    dist::NcclCommunicator comm(dist::LaunchEnv{}, kGpu);
    std::map<int64_t, double> losses;
    engine::TrainHooks hooks;
    hooks.communicator = &comm;
    hooks.on_update = [&](int64_t step, double loss) { losses[step] = loss; };
    engine::train(cfg, hooks);
    ASSERT_EQ(losses.size(), plain.size());
    for (auto [k, v] : plain) EXPECT_EQ(losses[k], v) << (zero1 ? "zero1" : "ddp") << " update " << k;
  }
}

}  // namespace
}  // namespace vt::test
