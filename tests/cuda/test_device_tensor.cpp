// Device tensors: CUDA factories, to(Device) transfers and their backward, the strided copy/conversion kernel
// (kernels/cuda/copy.cu) against the CPU kernel bit for bit, and the clear error of ops without a CUDA kernel.
// Every test skips with the reason when no CUDA device can be used.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/device_memory.h"
#include "ops/ops.h"
#include "tensor/tensor.h"
#include "cuda/device_test_util.h"
#include "cuda/stream_gate.h"

namespace vt::test {
namespace {

const std::vector<DType> kAllDtypes = {DType::f64, DType::f32, DType::bf16, DType::i32, DType::i64, DType::u8};

// Raw bytes of a CPU tensor in logical order (made contiguous first).
std::vector<uint8_t> bytes_of(const Tensor& t) {
  Tensor c = t.device().is_cpu() ? t.contiguous() : t.to(cpu()).contiguous();
  std::vector<uint8_t> out(static_cast<size_t>(c.numel()) * dtype_size(c.dtype()));
  if (!out.empty()) std::memcpy(out.data(), c.raw_data(), out.size());
  return out;
}

// Values valid for every dtype (0..250 with fractions for the floats); ints of a dtype get truncated copies.
std::vector<double> values(int64_t n, uint32_t seed, bool floating) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(0.0, 250.0);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = floating ? dist(rng) : std::floor(dist(rng));
  return v;
}

Tensor dv_to_f32(const Tensor& t) { return t.to(DType::f32); }

Tensor random_f32(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0.0, 3.0);
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (auto& x : v) x = dist(rng);
  return Tensor::from_vector(v, shape, DType::f32);
}

TEST(DeviceTensor, RoundTripsEveryDtypeAtOddSizes) {
  VT_REQUIRE_DEVICE();
  for (DType dt : kAllDtypes) {
    for (int64_t n : {int64_t(197), int64_t(1025 * 3), int64_t(1)}) {
      Tensor h = Tensor::from_vector(values(n, 7 + n, is_floating(dt)), {n}, dt);
      Tensor d = h.to(kGpu);
      ASSERT_TRUE(d.device() == kGpu);
      EXPECT_EQ(d.dtype(), dt);
      EXPECT_EQ(d.shape(), h.shape());
      Tensor back = d.to(cpu());
      ASSERT_TRUE(back.device().is_cpu());
      EXPECT_EQ(bytes_of(back), bytes_of(h)) << dtype_name(dt) << " n=" << n;
      EXPECT_EQ(d.to_vector(), h.to_vector()) << dtype_name(dt) << " n=" << n;
    }
  }
  // 0-element and 0-d tensors.
  Tensor e = Tensor::zeros({0, 3}).to(kGpu);
  EXPECT_EQ(e.to(cpu()).numel(), 0);
  EXPECT_EQ(Tensor::scalar(-2.5).to(kGpu).item(), -2.5);
}

TEST(DeviceTensor, DeviceConversionsMatchCpuBitForBit) {
  VT_REQUIRE_DEVICE();
  // Every dtype pair on values valid for all of them.
  for (DType from : kAllDtypes) {
    Tensor h = Tensor::from_vector(values(1025 * 3, 11, true), {3, 1025}, from);
    Tensor d = h.to(kGpu);
    for (DType to : kAllDtypes) {
      Tensor dc = d.to(to);
      ASSERT_TRUE(dc.device() == kGpu);
      EXPECT_EQ(bytes_of(dc), bytes_of(h.to(to))) << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
  // f32/f64 -> bf16 on hard values: ties (round to even), NaN, inf, subnormals, overflow to inf, signed zero.
  std::vector<float> hard = {0.0f,
                             -0.0f,
                             1.0f,
                             1.00390625f,
                             1.01171875f,
                             -1.00390625f,
                             3.14159265f,
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(),
                             std::numeric_limits<float>::quiet_NaN(),
                             std::numeric_limits<float>::denorm_min(),
                             1e-40f,
                             std::numeric_limits<float>::max(),
                             -65504.0f,
                             3.3895314e38f};
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> bits;
  while (hard.size() < 197) {
    uint32_t u = bits(rng);
    float f;
    std::memcpy(&f, &u, 4);
    hard.push_back(f);
  }
  const int64_t n = static_cast<int64_t>(hard.size());
  Tensor hf = Tensor::empty({n}, DType::f32);
  std::memcpy(hf.raw_data(), hard.data(), hard.size() * 4);
  Tensor hd = hf.to(DType::f64);
  for (const Tensor& src : {hf, hd}) {
    Tensor want = src.to(DType::bf16);
    EXPECT_EQ(bytes_of(src.to(kGpu).to(DType::bf16)), bytes_of(want)) << dtype_name(src.dtype()) << " -> bf16";
    EXPECT_EQ(bytes_of(want.to(kGpu).to(DType::f32)), bytes_of(want.to(DType::f32))) << "bf16 -> f32";
  }
}

TEST(DeviceTensor, StridedViewsBecomeContiguousLikeOnCpu) {
  VT_REQUIRE_DEVICE();
  Tensor h = random_f32({5, 7, 9}, 3);
  Tensor d = h.to(kGpu);
  auto check = [&](const Tensor& hv, const Tensor& dv, const char* what) {
    ASSERT_TRUE(dv.device() == kGpu) << what;
    Tensor dc = dv.contiguous();
    EXPECT_TRUE(dc.is_contiguous()) << what;
    EXPECT_TRUE(dc.device() == kGpu) << what;
    EXPECT_EQ(bytes_of(dc), bytes_of(hv.contiguous())) << what;
    EXPECT_EQ(bytes_of(dv.clone()), bytes_of(hv.clone())) << what;
    EXPECT_EQ(bytes_of(dv.to(DType::bf16)), bytes_of(hv.to(DType::bf16))) << what << " to bf16";
    EXPECT_EQ(bytes_of(dv.to(DType::f64)), bytes_of(hv.to(DType::f64))) << what << " to f64";
    EXPECT_EQ(bytes_of(dv.to(cpu())), bytes_of(hv)) << what << " to cpu";
  };
  check(h.permute({2, 0, 1}), d.permute({2, 0, 1}), "permute");
  check(h.transpose(0, 2), d.transpose(0, 2), "transpose");
  check(h.slice(1, 1, 6, 2), d.slice(1, 1, 6, 2), "slice step 2");
  check(h.slice(2, 3, 8).slice(0, 1, 4), d.slice(2, 3, 8).slice(0, 1, 4), "slice with offset");
  Tensor hb = random_f32({1, 7, 1}, 4), db = hb.to(kGpu);
  check(hb.expand({5, 7, 9}), db.expand({5, 7, 9}), "expand");
  check(hb.expand({2, 3, 7, 4}).permute({3, 2, 0, 1}), db.expand({2, 3, 7, 4}).permute({3, 2, 0, 1}),
        "expand + permute");
  // 8 dims that cannot be merged.
  Tensor h8 = random_f32({2, 3, 2, 3, 2, 3, 2, 3}, 5), d8 = h8.to(kGpu);
  check(h8.permute({7, 5, 3, 1, 6, 4, 2, 0}), d8.permute({7, 5, 3, 1, 6, 4, 2, 0}), "8-d permute");
  // Integer views too.
  Tensor hi = Tensor::from_vector(values(5 * 7 * 9, 9, false), {5, 7, 9}, DType::i64), di = hi.to(kGpu);
  check(hi.permute({1, 2, 0}), di.permute({1, 2, 0}), "i64 permute");
}

// The fast paths of the device copy: 16-byte vectors for same-dtype copies with contiguous aligned rows (the
// slices of a packed qkv, in both directions), 32-bit index arithmetic, four values per access for contiguous
// conversions, and the fallbacks next to them (rows not a multiple of a vector, odd offsets, 64-bit offsets).
TEST(DeviceTensor, PackedQkvSlicesCopyLikeOnCpu) {
  VT_REQUIRE_DEVICE();
  for (DType dt : {DType::f32, DType::bf16}) {
    for (int64_t C : {64, 24, 13}) {  // 64 and 24: vectors for both dtypes (24 bf16: no); 13: never
      Tensor h = random_f32({3, 7, 3 * C}, 11).to(dt), d = h.to(kGpu);
      const DType other = dt == DType::f32 ? DType::bf16 : DType::f32;  // contiguous conversion, 4 values at a time
      EXPECT_EQ(bytes_of(d.to(other)), bytes_of(h.to(other))) << dtype_name(dt) << " C " << C << " converted whole";
      for (int part = 0; part < 3; ++part) {
        const Tensor hv = h.slice(2, part * C, (part + 1) * C), dv = d.slice(2, part * C, (part + 1) * C);
        EXPECT_EQ(bytes_of(dv.contiguous()), bytes_of(hv.contiguous()))
            << dtype_name(dt) << " C " << C << " part " << part;
        // Into a slice of a packed buffer (the gradient direction), the rest left as it was.
        Tensor hz = Tensor::full({3, 7, 3 * C}, 2.0, dt), dz = Tensor::full({3, 7, 3 * C}, 2.0, dt, kGpu);
        hz.slice(2, part * C, (part + 1) * C).copy_(hv.contiguous());
        dz.slice(2, part * C, (part + 1) * C).copy_(dv.contiguous());
        EXPECT_EQ(bytes_of(dz), bytes_of(hz)) << dtype_name(dt) << " C " << C << " into part " << part;
      }
      // Heads split and transposed, as the attention ops read them: [B, H, N, d] views of the packed rows.
      const Tensor hh = h.slice(2, C, 2 * C).reshape({3, 7, 1, C}).permute({0, 2, 1, 3});
      const Tensor dh = d.slice(2, C, 2 * C).reshape({3, 7, 1, C}).permute({0, 2, 1, 3});
      EXPECT_EQ(bytes_of(dh.contiguous()), bytes_of(hh.contiguous())) << dtype_name(dt) << " C " << C << " heads";
      EXPECT_EQ(bytes_of(dv_to_f32(dh)), bytes_of(hh.to(DType::f32))) << dtype_name(dt) << " C " << C << " converted";
    }
  }
  // Offsets beyond 2^31 take the 64-bit kernel: 16 columns of a [3, 2^30 + 8] u8 buffer (3 GiB on the device),
  // written from the host and read back, both through strided device copies.
  const int64_t row = (int64_t{1} << 30) + 8;
  Tensor big = Tensor::zeros({3, row}, DType::u8, kGpu);
  Tensor cols = Tensor::from_vector(values(3 * 16, 13, false), {3, 16}, DType::u8);
  big.slice(1, row - 16, row).copy_(cols.to(kGpu));
  EXPECT_EQ(bytes_of(big.slice(1, row - 16, row).contiguous()), bytes_of(cols));
  EXPECT_EQ(bytes_of(big.slice(1, 0, 16).contiguous()), bytes_of(Tensor::zeros({3, 16}, DType::u8)));
}

TEST(DeviceTensor, CopyAndFillIntoStridedDestinations) {
  VT_REQUIRE_DEVICE();
  Tensor h = random_f32({6, 11}, 8);
  Tensor hd = Tensor::zeros({6, 11}, DType::f64), dd = Tensor::zeros({6, 11}, DType::f64, kGpu);
  Tensor src = random_f32({11, 3}, 9);
  // Strided destination on the device, source on the host in another dtype.
  hd.slice(0, 1, 6, 2).copy_(src.transpose(0, 1));
  dd.slice(0, 1, 6, 2).copy_(src.transpose(0, 1));
  EXPECT_EQ(bytes_of(dd), bytes_of(hd));
  // Device source into a host destination, and device -> device with conversion.
  Tensor host_dst = Tensor::zeros({11, 6}, DType::bf16);
  host_dst.copy_(dd.transpose(0, 1));
  EXPECT_EQ(bytes_of(host_dst), bytes_of(hd.transpose(0, 1).to(DType::bf16)));
  Tensor dev_dst = Tensor::empty({6, 11}, DType::f32, kGpu);
  dev_dst.copy_(h.to(kGpu));
  EXPECT_EQ(bytes_of(dev_dst), bytes_of(h));
  // fill_ on a contiguous and on a strided device tensor.
  dev_dst.fill_(1.5);
  dev_dst.slice(1, 2, 9, 3).fill_(-7.25);
  Tensor want = Tensor::full({6, 11}, 1.5);
  want.slice(1, 2, 9, 3).fill_(-7.25);
  EXPECT_EQ(bytes_of(dev_dst), bytes_of(want));
}

TEST(DeviceTensor, ZerosFullOnesForEveryDtype) {
  VT_REQUIRE_DEVICE();
  for (DType dt : kAllDtypes) {
    for (int64_t n : {int64_t(197), int64_t(1025 * 3)}) {
      Tensor z = Tensor::zeros({n}, dt, kGpu);
      EXPECT_TRUE(z.device() == kGpu);
      EXPECT_EQ(z.to_vector(), std::vector<double>(size_t(n), 0.0)) << dtype_name(dt);
      const double v = is_floating(dt) ? 3.3 : 42.0;
      Tensor f = Tensor::full({n}, v, dt, kGpu);
      EXPECT_EQ(bytes_of(f), bytes_of(Tensor::full({n}, v, dt))) << dtype_name(dt);
      EXPECT_EQ(Tensor::ones({n}, dt, kGpu).to_vector(), std::vector<double>(size_t(n), 1.0)) << dtype_name(dt);
    }
  }
  EXPECT_EQ(Tensor::full({}, -0.75, DType::f64, kGpu).item(), -0.75);
  // Zeros really are zero when the allocator hands back a dirty cached block.
  { Tensor dirty = Tensor::full({4099}, 9.0, DType::f32, kGpu); }
  EXPECT_EQ(Tensor::zeros({4099}, DType::f32, kGpu).to_vector(), std::vector<double>(4099, 0.0));
}

TEST(DeviceTensor, ArangeOnTheDeviceHasTheCpuBits) {
  VT_REQUIRE_DEVICE();
  // 300 and 70000 pass bf16's exact integers (both backends round alike); u8 stays within its range.
  for (DType dt : kAllDtypes)
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(256), int64_t(300), int64_t(70000)}) {
      if (dt == DType::u8 && n > 256) continue;
      Tensor t = Tensor::arange(n, dt, kGpu);
      EXPECT_TRUE(t.device() == kGpu);
      EXPECT_EQ(bytes_of(t), bytes_of(Tensor::arange(n, dt))) << dtype_name(dt) << " n=" << n;
    }
}

TEST(DeviceTensor, AllocatesThroughTheCachingAllocator) {
  VT_REQUIRE_DEVICE();
  auto& alloc = kernels::cuda::cuda_allocator(0);
  const auto before = alloc.stats();
  {
    Tensor t = Tensor::empty({1 << 20}, DType::f32, kGpu);
    EXPECT_GE(alloc.stats().allocated_bytes, before.allocated_bytes + (size_t(4) << 20));
  }
  EXPECT_EQ(alloc.stats().allocated_bytes, before.allocated_bytes);
}

TEST(DeviceTensor, ToDeviceIsDifferentiable) {
  VT_REQUIRE_DEVICE();
  Tensor x = Tensor::from_vector({1, -2, 3, 0.5, 7, -1.25, 2}, {7}, DType::f64);
  x.set_requires_grad(true);
  Tensor y = x.to(kGpu);
  ASSERT_TRUE(y.requires_grad());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_STREQ(y.grad_fn()->name(), "ToDeviceBackward");
  // A strided device view back to the host, then a CPU loss: the slice backward runs on the device.
  Tensor z = y.reshape({7, 1}).transpose(0, 1).slice(1, 1, 7, 2).to(cpu());
  ASSERT_EQ(z.shape(), (Shape{1, 3}));
  Tensor w = Tensor::from_vector({0.5, 2, -1}, {1, 3}, DType::f64);
  ops::sum(ops::mul(z, w)).backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_TRUE(x.grad().device().is_cpu());
  EXPECT_EQ(x.grad().to_vector(), (std::vector<double>{0, 0.5, 0, 2, 0, -1, 0}));

  // A device leaf gets a device gradient.
  Tensor leaf = Tensor::from_vector({1, 2, 3, 4, 5}, {5}, DType::f32).to(kGpu).detach();
  leaf.set_requires_grad(true);
  Tensor g = Tensor::from_vector({3, -1, 0.5, 2, 8}, {5}, DType::f32);
  ops::sum(ops::mul(leaf.to(cpu()), g)).backward();
  ASSERT_TRUE(leaf.grad().defined());
  EXPECT_TRUE(leaf.grad().device() == kGpu);
  EXPECT_EQ(leaf.grad().to_vector(), g.to_vector());
}

// Uploading a batch must not wait for the work already queued (the training step's only upload): with the
// default stream held shut, to(kGpu) returns, and the values arrive once the stream runs; the host source may be
// freed right away.
TEST(DeviceTensor, HostToDeviceCopyDoesNotWaitForQueuedWork) {
  VT_REQUIRE_DEVICE();
  Tensor host = random_f32({257, 33}, 9);
  const std::vector<double> want = host.to_vector();
  host.to(kGpu).to(cpu());  // warm the device and pinned caches: no cudaMalloc/cudaHostAlloc behind the gate
  Tensor dev;
  {
    StreamGate gate(nullptr);
    dev = host.to(kGpu);
    host = Tensor();  // the staging copy was taken before to() returned
    EXPECT_FALSE(gate.passed()) << "to(cuda) waited for the device";
    gate.open();
  }
  EXPECT_EQ(dev.to(cpu()).to_vector(), want);
}

TEST(DeviceTensor, OpsOnTensorsOfTwoDevicesNameBoth) {
  VT_REQUIRE_DEVICE();
  Tensor a = random_f32({3, 4}, 1).to(kGpu), b = random_f32({3, 4}, 2);
  std::string msg = error_of([&] { ops::add(a, b); });
  EXPECT_CONTAINS(msg, "devices differ");
  EXPECT_CONTAINS(msg, "cuda:0");
  EXPECT_CONTAINS(msg, "cpu");
}

}  // namespace
}  // namespace vt::test
