// Data parallel on the CPU with ranks as threads (ThreadCommunicator): a tiny ViT in f64, each rank on its shard
// of a batch, against one process on the whole batch. The gradients are not bit-identical to the single process:
// the single process sums the per-sample gradients of 2b (or 4b) samples inside each GEMM and divides by 4b, the
// ranks sum b samples, scale by 1/world and sum across ranks, a different association of the same f64 terms. So
// the tolerance is a few f64 ulps of the gradient scale (1e-12 on gradients of order 1e-2..1); between ranks,
// and between ZeRO-1 and plain DDP (same sums in the same order), the results are bitwise equal.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <exception>
#include <memory>
#include <thread>

#include "ddp_runs.h"
#include "dist/data_parallel.h"
#include "dist/thread_communicator.h"
#include "models/vit.h"
#include "ops/ops.h"
#include "optim/adamw.h"
#include "optim/flat_buffers.h"
#include "optim/param_groups.h"

extern "C" void openblas_set_num_threads(int);

namespace vt::test {
namespace {

using dist::DataParallel;
using dist::DataParallelOptions;
using dist::ThreadCommunicator;
using dist::ThreadGroup;

constexpr int64_t kPerRank = 2;  // samples per rank and micro-batch

models::ViTConfig tiny_vit() {
  models::ViTConfig c;
  c.img_size = 8;
  c.patch_size = 4;
  c.in_chans = 1;
  c.num_classes = 5;
  c.embed_dim = 16;
  c.depth = 2;
  c.num_heads = 2;
  c.seed = 7;
  return c;
}

// The model's parameters re-pointed to f64 copies (the CPU kernels compute f64 end to end).
void to_f64(models::VisionTransformer& model) {
  for (auto& [name, p] : model.named_parameters()) {
    Tensor d = p.detach().to(DType::f64).contiguous();
    TensorImpl& impl = p.impl();
    impl.storage = d.impl().storage;
    impl.dtype = DType::f64;
    impl.strides = d.strides();
    impl.offset = d.offset();
  }
}

struct Replica {
  std::unique_ptr<models::VisionTransformer> model;
  std::unique_ptr<optim::AdamW> opt;
  Replica() : model(std::make_unique<models::VisionTransformer>(tiny_vit())) {
    to_f64(*model);
    opt = std::make_unique<optim::AdamW>(optim::make_param_groups(model->named_parameters(), 0.05), 1e-2);
    opt->use_flat_buffers();
  }
  std::vector<Tensor> params() const {
    std::vector<Tensor> out;
    for (auto& [n, p] : model->named_parameters()) out.push_back(p);
    return out;
  }
};

// Batch `step`: images [n, 1, 8, 8] f64 and labels [n], rows [first, first + n) of a fixed stream.
std::pair<Tensor, Tensor> batch(int64_t step, int64_t first, int64_t n) {
  std::vector<double> img, lab;
  for (int64_t i = first; i < first + n; ++i) {
    for (int64_t j = 0; j < 64; ++j) img.push_back(std::sin(0.37 * double(j) + 1.3 * double(i) + 0.71 * double(step)));
    lab.push_back(static_cast<double>((i * 3 + step) % 5));
  }
  return {Tensor::from_vector(img, {n, 1, 8, 8}, DType::f64), Tensor::from_vector(lab, {n}, DType::i64)};
}

// loss.backward() of the mean cross-entropy of rows [first, first + n) of batch `step`, scaled by `scale`.
void forward_backward(Replica& r, int64_t step, int64_t first, int64_t n, double scale = 1.0) {
  auto [x, y] = batch(step, first, n);
  Tensor loss = ops::cross_entropy(r.model->forward(x), y);
  if (scale != 1.0) loss = ops::mul(loss, scale);
  loss.backward();
}

std::vector<double> flat_grads(const Replica& r) { return r.opt->flat()->grads().to_vector(); }
std::vector<double> flat_params(const Replica& r) { return r.opt->flat()->params().to_vector(); }

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Runs fn(comm) on `world` threads, one rank each; rethrows the first failure.
// The ranks of these tests run their small GEMMs single-threaded (OpenBLAS threads would oversubscribe the
// machine with `world` ranks at once), with a 30 s communicator timeout.
void run_blas1_ranks(int world, const std::function<void(ThreadCommunicator&)>& fn) {
  openblas_set_num_threads(1);
  test::run_ranks(world, fn, std::chrono::seconds(30));
}

// One single-process run over `world`·kPerRank samples per step; returns the params after each step and the first
// step's gradient.
struct Reference {
  std::vector<double> grad0;
  std::vector<std::vector<double>> params;
};
Reference single_process(int world, int steps) {
  Reference ref;
  Replica r;
  for (int s = 0; s < steps; ++s) {
    r.opt->zero_grad();
    forward_backward(r, s, 0, world * kPerRank);
    if (s == 0) ref.grad0 = flat_grads(r);
    r.opt->step();
    ref.params.push_back(flat_params(r));
  }
  return ref;
}

class Ddp : public ::testing::TestWithParam<int> {};

TEST_P(Ddp, AveragedGradientsEqualTheConcatenatedBatchAndBucketsFireDuringBackward) {
  const int world = GetParam();
  const Reference ref = single_process(world, 1);
  std::vector<std::vector<double>> grads(static_cast<size_t>(world));
  std::vector<std::vector<std::pair<size_t, bool>>> launches(static_cast<size_t>(world));  // (bucket, in backward)
  std::vector<size_t> num_buckets(static_cast<size_t>(world));
  run_blas1_ranks(world, [&](ThreadCommunicator& comm) {
    Replica r;
    DataParallelOptions o;
    o.bucket_mb = 2e-3;  // ~2 KB: several buckets for this 10K-parameter model
    DataParallel dp(*r.opt, comm, o, r.params());
    std::atomic<bool> in_backward{false};
    auto& log = launches[static_cast<size_t>(comm.rank())];
    dp.on_launch = [&](size_t b) { log.emplace_back(b, in_backward.load()); };
    r.opt->zero_grad();
    dp.begin_backward(true);
    in_backward = true;
    forward_backward(r, 0, comm.rank() * kPerRank, kPerRank);
    in_backward = false;
    dp.finish_backward();
    grads[static_cast<size_t>(comm.rank())] = flat_grads(r);
    num_buckets[static_cast<size_t>(comm.rank())] = dp.buckets().size();
  });
  for (int r = 0; r < world; ++r) {
    EXPECT_LE(max_abs_diff(grads[static_cast<size_t>(r)], ref.grad0), 1e-12) << "rank " << r;
    EXPECT_EQ(grads[static_cast<size_t>(r)], grads[0]) << "rank " << r << " differs from rank 0";
    const auto& log = launches[static_cast<size_t>(r)];
    ASSERT_GE(num_buckets[static_cast<size_t>(r)], 3u);
    ASSERT_EQ(log.size(), num_buckets[static_cast<size_t>(r)]);
    for (size_t i = 0; i < log.size(); ++i) EXPECT_EQ(log[i].first, i) << "buckets launch in their fixed order";
    EXPECT_TRUE(log.front().second) << "the first bucket's all-reduce starts before backward has finished";
  }
}

TEST_P(Ddp, AdamWStepsEqualTheSingleProcessRun) {
  const int world = GetParam();
  constexpr int kSteps = 3;
  const Reference ref = single_process(world, kSteps);
  std::vector<std::vector<std::vector<double>>> params(static_cast<size_t>(world));
  run_blas1_ranks(world, [&](ThreadCommunicator& comm) {
    Replica r;
    DataParallel dp(*r.opt, comm, DataParallelOptions{}, r.params());
    for (int s = 0; s < kSteps; ++s) {
      r.opt->zero_grad();
      dp.begin_backward(true);
      forward_backward(r, s, comm.rank() * kPerRank, kPerRank);
      dp.finish_backward();
      r.opt->step();
      dp.after_step();
      params[static_cast<size_t>(comm.rank())].push_back(flat_params(r));
    }
  });
  // AdamW divides m by sqrt(v): early on that maps gradient differences of 1e-16 relative to about the same in
  // the update, so the parameters (of order 0.1, moved by lr = 1e-2) agree to ~1e-13.
  for (int r = 0; r < world; ++r)
    for (int s = 0; s < kSteps; ++s)
      EXPECT_LE(
          max_abs_diff(params[static_cast<size_t>(r)][static_cast<size_t>(s)], ref.params[static_cast<size_t>(s)]),
          1e-10)
          << "rank " << r << " step " << s;
}

TEST_P(Ddp, GradientAccumulationCommunicatesOnlyOnTheLastMicroBatch) {
  const int world = GetParam();
  // Single process: 2 micro-batches of world·kPerRank, each loss scaled by 1/2 (as the trainer does).
  Replica ref;
  ref.opt->zero_grad();
  forward_backward(ref, 0, 0, world * kPerRank, 0.5);
  forward_backward(ref, 1, 0, world * kPerRank, 0.5);
  const std::vector<double> expected = flat_grads(ref);
  std::vector<std::vector<double>> grads(static_cast<size_t>(world));
  run_blas1_ranks(world, [&](ThreadCommunicator& comm) {
    Replica r;
    DataParallel dp(*r.opt, comm, DataParallelOptions{}, r.params());
    size_t launched = 0;
    dp.on_launch = [&](size_t) { ++launched; };
    r.opt->zero_grad();
    dp.begin_backward(false);
    forward_backward(r, 0, comm.rank() * kPerRank, kPerRank, 0.5);
    EXPECT_EQ(launched, 0u) << "no_sync micro-batch communicated";
    dp.begin_backward(true);
    forward_backward(r, 1, comm.rank() * kPerRank, kPerRank, 0.5);
    dp.finish_backward();
    EXPECT_EQ(launched, dp.buckets().size());
    grads[static_cast<size_t>(comm.rank())] = flat_grads(r);
  });
  for (int r = 0; r < world; ++r) EXPECT_LE(max_abs_diff(grads[static_cast<size_t>(r)], expected), 1e-12);
}

TEST_P(Ddp, ParameterNotReachedByBackwardStillCounts) {
  const int world = GetParam();
  std::vector<std::vector<double>> grads(static_cast<size_t>(world));
  run_blas1_ranks(world, [&](ThreadCommunicator& comm) {
    Replica r;
    DataParallel dp(*r.opt, comm, DataParallelOptions{}, r.params());
    r.opt->zero_grad();
    dp.begin_backward(true);
    // Only the head is reached; rank r's head gradient is its own constant.
    Tensor w = r.model->named_parameters().back().second;  // head.bias
    ops::sum(ops::mul(w, static_cast<double>(comm.rank() + 1))).backward();
    dp.finish_backward();
    grads[static_cast<size_t>(comm.rank())] = flat_grads(r);
  });
  double mean = 0;
  for (int r = 1; r <= world; ++r) mean += r;
  mean /= world;
  double sum = 0;
  for (double g : grads[0]) sum += g;
  EXPECT_DOUBLE_EQ(sum, mean * 5.0);  // head.bias has 5 elements, every other gradient is zero
  for (int r = 1; r < world; ++r) EXPECT_EQ(grads[static_cast<size_t>(r)], grads[0]);
}

// n AdamW steps with DataParallel (ZeRO-1 or not); `state` receives rank 0's gathered optimizer state.
std::vector<std::vector<double>> dp_run(int world, bool zero1, int steps, optim::NamedTensors* state = nullptr,
                                        const optim::NamedTensors* resume_state = nullptr,
                                        const std::vector<double>* resume_params = nullptr, int first_step = 0) {
  std::vector<std::vector<double>> params;
  run_blas1_ranks(world, [&](ThreadCommunicator& comm) {
    Replica r;
    if (resume_params) {
      r.opt->flat()->params().copy_(Tensor::from_vector(*resume_params, {int64_t(resume_params->size())}, DType::f64));
      r.opt->load_state(*resume_state);
    }
    DataParallelOptions o;
    o.zero1 = zero1;
    DataParallel dp(*r.opt, comm, o, r.params());
    for (int s = first_step; s < first_step + steps; ++s) {
      r.opt->zero_grad();
      dp.begin_backward(true);
      forward_backward(r, s, comm.rank() * kPerRank, kPerRank);
      dp.finish_backward();
      r.opt->step();
      dp.after_step();
      if (comm.rank() == 0) params.push_back(flat_params(r));
    }
    dp.gather_state();
    if (state && comm.rank() == 0) *state = r.opt->state();
  });
  return params;
}

TEST_P(Ddp, ZeroOneEqualsPlainDataParallelBitwise) {
  const int world = GetParam();
  const auto plain = dp_run(world, false, 3);
  const auto zero1 = dp_run(world, true, 3);
  ASSERT_EQ(plain.size(), zero1.size());
  for (size_t s = 0; s < plain.size(); ++s) EXPECT_EQ(zero1[s], plain[s]) << "step " << s;
}

TEST_P(Ddp, ZeroOneCheckpointResumesAtTheSameAndAnotherWorldSize) {
  const int world = GetParam();
  const auto full = dp_run(world, true, 3);
  optim::NamedTensors state;
  const auto first = dp_run(world, true, 2, &state);
  // Every parameter's exp_avg must be complete (gathered): compare with plain DDP's state.
  optim::NamedTensors plain_state;
  dp_run(world, false, 2, &plain_state);
  ASSERT_EQ(state.size(), plain_state.size());
  for (size_t i = 0; i < state.size(); ++i)
    EXPECT_EQ(state[i].second.to_vector(), plain_state[i].second.to_vector()) << state[i].first;
  const auto resumed = dp_run(world, true, 1, nullptr, &state, &first.back(), 2);
  EXPECT_EQ(resumed.back(), full.back());
  // At another world size the data shards differ, so the sums round differently: agreement to f64 precision.
  const int other = world == 2 ? 4 : 2;
  const auto moved = dp_run(other, true, 1, nullptr, &state, &first.back(), 2);
  // The batch of step 2 has other·kPerRank samples now: compare with a plain DDP run of that world from the
  // same checkpoint.
  const auto moved_plain = dp_run(other, false, 1, nullptr, &state, &first.back(), 2);
  EXPECT_EQ(moved.back(), moved_plain.back());
}

// ZeRO-1 shards the memory too: between checkpoints each rank holds the AdamW state of its slice only; a gather
// for a checkpoint assembles the whole state, and releasing it goes back to the slice (with the values intact).
TEST_P(Ddp, ZeroOneHoldsOnlyItsSliceOfTheState) {
  const int world = GetParam();
  std::vector<int64_t> resident(static_cast<size_t>(world)), gathered(resident), released(resident);
  int64_t flat_size = 0;
  std::vector<std::vector<double>> after_release(static_cast<size_t>(world));
  run_blas1_ranks(world, [&](ThreadCommunicator& comm) {
    Replica r;
    DataParallelOptions o;
    o.zero1 = true;
    DataParallel dp(*r.opt, comm, o, r.params());
    for (int s = 0; s < 2; ++s) {
      r.opt->zero_grad();
      dp.begin_backward(true);
      forward_backward(r, s, comm.rank() * kPerRank, kPerRank);
      dp.finish_backward();
      r.opt->step();
      dp.after_step();
    }
    auto& adamw = static_cast<optim::AdamW&>(*r.opt);
    const size_t rank = static_cast<size_t>(comm.rank());
    resident[rank] = adamw.resident_state_numel();
    dp.gather_state();
    gathered[rank] = adamw.resident_state_numel();
    const optim::NamedTensors whole = r.opt->state();
    dp.release_state();
    released[rank] = adamw.resident_state_numel();
    dp.gather_state();  // the slice kept its values: a second gather gives the same state
    const optim::NamedTensors again = r.opt->state();
    dp.release_state();
    ASSERT_EQ(whole.size(), again.size());
    for (size_t i = 0; i < whole.size(); ++i)
      EXPECT_EQ(again[i].second.to_vector(), whole[i].second.to_vector()) << whole[i].first;
    if (rank == 0) flat_size = r.opt->flat()->size();
  });
  int64_t sum = 0;
  for (int r = 0; r < world; ++r) {
    const auto [b, e] = dist::shard_range(flat_size, world, r);
    EXPECT_EQ(resident[static_cast<size_t>(r)], 2 * (e - b)) << "rank " << r;  // exp_avg + exp_avg_sq of the slice
    EXPECT_EQ(gathered[static_cast<size_t>(r)], 2 * (e - b) + 2 * flat_size) << "rank " << r;
    EXPECT_EQ(released[static_cast<size_t>(r)], 2 * (e - b)) << "rank " << r;
    sum += resident[static_cast<size_t>(r)];
  }
  EXPECT_EQ(sum, 2 * flat_size);
}

INSTANTIATE_TEST_SUITE_P(Worlds, Ddp, ::testing::Values(2, 4),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

TEST(ThreadCommunicator, CollectivesOnUnevenShards) {
  constexpr int kWorld = 3;
  std::vector<std::vector<double>> out(kWorld);
  run_blas1_ranks(kWorld, [&](ThreadCommunicator& comm) {
    const int r = comm.rank();
    std::vector<double> v(10);
    for (int i = 0; i < 10; ++i) v[size_t(i)] = r * 100 + i;
    Tensor t = Tensor::from_vector(v, {10}, DType::f64);
    comm.all_reduce_sum(t);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(t.to_vector()[size_t(i)], 300 + 3 * i);
    Tensor b = Tensor::full({4}, r, DType::f32);
    comm.broadcast(b, 2);
    EXPECT_EQ(b.to_vector(), std::vector<double>(4, 2.0));
    Tensor rs = Tensor::from_vector(v, {10}, DType::f64);
    comm.reduce_scatter_sum(rs);  // slices of 4: [0, 4), [4, 8), [8, 10)
    const auto [begin, end] = dist::shard_range(10, kWorld, r);
    for (int64_t i = begin; i < end; ++i) EXPECT_EQ(rs.to_vector()[size_t(i)], 300 + 3 * i);
    Tensor ag = Tensor::full({10}, -1, DType::f64);
    for (int64_t i = begin; i < end; ++i) ag.data<double>()[i] = static_cast<double>(i);
    comm.all_gather(ag);
    out[size_t(r)] = ag.to_vector();
  });
  for (int r = 0; r < kWorld; ++r)
    for (int i = 0; i < 10; ++i) EXPECT_EQ(out[size_t(r)][size_t(i)], i);
}

}  // namespace
}  // namespace vt::test
