// Weights exchange with timm: our state dict has timm's keys (checked against the timm-written DeiT-T fixture),
// pos_embed resampling (against timm/torch's own output, tests/ref/pos_embed_resample.safetensors from
// scripts/gen_posembed_fixture.py; hand-computed PyTorch values, linear ramps exact in the interior),
// head replacement, dense weights into MiTA, export and the safetensors round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "test_util.h"
#include "engine/timm_weights.h"
#include "io/safetensors.h"
#include "io_temp_dir.h"
#include "models/registry.h"
#include "nn/formula_weights.h"

namespace vt::test {
namespace {

const std::string kFixture = std::string(VT_SOURCE_DIR) + "/tests/ref/deit_tiny_ref.safetensors";

// DeiT-Tiny's timm state dict with the formula weights of tests/nn/formula_weights.h (as the fixture's timm run).
io::NamedTensors formula_deit_tiny() {
  io::NamedTensors w;
  for (const auto& [name, shape] : engine::timm_state_dict_spec(models::preset("deit_tiny_patch16_224")))
    w.emplace_back(name, formula_tensor(name, shape));
  return w;
}

const Tensor& get(const io::NamedTensors& w, const std::string& name) {
  for (const auto& [n, t] : w)
    if (n == name) return t;
  static Tensor none;
  ADD_FAILURE() << "no tensor " << name;
  return none;
}

bool has(const io::NamedTensors& w, const std::string& name) {
  for (const auto& [n, t] : w)
    if (n == name) return true;
  return false;
}

// pos_embed [1, 1 + h*w, C] with token (y, x) channel c = a_c + b_c*y + d_c*x and a distinct CLS row.
Tensor ramp_pos_embed(int64_t h, int64_t w, int64_t C) {
  std::vector<double> v;
  for (int64_t c = 0; c < C; ++c) v.push_back(100.0 + c);  // CLS
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t c = 0; c < C; ++c) v.push_back(0.5 * c - 0.25 + (0.1 + 0.01 * c) * y - (0.2 - 0.03 * c) * x);
  return Tensor::from_vector(v, {1, 1 + h * w, C}, DType::f32);
}

TEST(TimmWeights, OurStateDictHasTimmsKeysAndShapes) {
  // The fixture's gstat.* entries are timm's deit_tiny_patch16_224.named_parameters(), written by timm itself.
  io::SafetensorsFile fixture = io::read_safetensors(kFixture);
  std::map<std::string, Shape> timm_params;
  const auto spec = engine::timm_state_dict_spec(models::preset("deit_tiny_patch16_224"));
  for (const auto& [name, t] : fixture.tensors)
    if (name.rfind("gstat.", 0) == 0) timm_params[name.substr(6)] = {};
  ASSERT_EQ(timm_params.size(), spec.size()) << "timm's DeiT-T has no buffers: state dict = parameters";
  for (const auto& [name, shape] : spec) EXPECT_TRUE(timm_params.count(name)) << name << " is not timm's";

  for (const std::string preset : {"deit_tiny_patch16_224", "vit_micro"}) {
    models::VisionTransformer m(models::preset(preset));
    const auto ours = m.state_dict();
    const auto want = engine::timm_state_dict_spec(m.config());
    ASSERT_EQ(ours.size(), want.size()) << preset;
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_EQ(ours[i].first, want[i].first) << preset;
      EXPECT_EQ(ours[i].second.shape(), want[i].second) << ours[i].first;
    }
  }
}

TEST(TimmWeights, FormulaWeightsMatchTheFixturesChecksums) {
  // The state dict built here is the one timm evaluated: the fixture's check.* sums confirm the formula.
  io::SafetensorsFile fixture = io::read_safetensors(kFixture);
  const io::NamedTensors w = formula_deit_tiny();
  int checked = 0;
  for (const auto& [key, t] : fixture.tensors) {
    if (key.rfind("check.", 0) != 0 || key == "check.input") continue;
    const auto v = get(w, key.substr(6)).to_vector();
    double s = 0, q = 0;
    for (double x : v) s += x, q += x * x;
    const auto r = t.to_vector();
    EXPECT_NEAR(s, r[0], 1e-6 * std::sqrt(r[1])) << key;
    EXPECT_NEAR(q, r[1], 1e-6 * r[1]) << key;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(TimmWeights, ResampleMatchesHandComputedPyTorchValues) {
  // F.interpolate([[0, 1]], size=(1, 4), mode='bicubic', align_corners=False), by hand from PyTorch's kernels.
  const Tensor pe = Tensor::from_vector({7, 0, 1}, {1, 3, 1}, DType::f32);  // CLS = 7, grid 1x2
  auto plain = engine::resample_pos_embed(pe, 1, 2, 1, 4, 1, engine::PosEmbedResize::deit).to_vector();
  const std::vector<double> want_plain = {7, -0.10546875, 0.2265625, 0.7734375, 1.10546875};
  // antialias=True: PIL's cubic (a = -0.5) over the taps inside the input, renormalised.
  auto aa = engine::resample_pos_embed(pe, 1, 2, 1, 4, 1, engine::PosEmbedResize::timm).to_vector();
  const double a0 = -0.0703125 / 0.796875, a1 = 0.2265625 / 1.09375;
  const std::vector<double> want_aa = {7, a0, a1, 1 - a1, 1 - a0};
  ASSERT_EQ(plain.size(), 5u);
  ASSERT_EQ(aa.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_NEAR(plain[i], want_plain[i], 1e-6) << i;
    EXPECT_NEAR(aa[i], want_aa[i], 1e-6) << i;
  }
}

TEST(TimmWeights, BicubicOfALinearRampIsExactInTheInterior) {
  const int64_t C = 5;
  const Tensor pe = ramp_pos_embed(14, 14, C);
  // timm's filter (a = -0.5) reproduces linear functions; DeiT's plain bicubic (a = -0.75) does not (its taps'
  // first moment is off by up to ~0.05 of a pixel), so only the former is exact.
  for (auto mode : {engine::PosEmbedResize::timm}) {
    const Tensor up = engine::resample_pos_embed(pe, 14, 14, 16, 16, 1, mode);
    ASSERT_EQ(up.shape(), (Shape{1, 1 + 16 * 16, C}));
    const auto v = up.to_vector();
    for (int64_t c = 0; c < C; ++c) EXPECT_EQ(v[static_cast<size_t>(c)], 100.0 + c) << "CLS changed";
    const double scale = 14.0 / 16.0;
    double worst = 0;
    for (int64_t y = 2; y < 14; ++y)  // all 4 taps inside the input: |src - edge| ≥ 1.5
      for (int64_t x = 2; x < 14; ++x)
        for (int64_t c = 0; c < C; ++c) {
          const double sy = scale * (y + 0.5) - 0.5, sx = scale * (x + 0.5) - 0.5;
          const double want = 0.5 * c - 0.25 + (0.1 + 0.01 * c) * sy - (0.2 - 0.03 * c) * sx;
          const double err = std::abs(v[static_cast<size_t>(C + (y * 16 + x) * C + c)] - want);
          worst = std::max(worst, err);
        }
    EXPECT_LT(worst, 2e-6) << "f32 rounding only (values ≤ 4)";
  }
}

TEST(TimmWeights, PosEmbedRoundTrip14To16AndBack) {
  io::NamedTensors w = formula_deit_tiny();
  // A smooth embedding (as trained ones are), so going up and back down nearly restores it.
  std::vector<double> v;
  for (int64_t t = 0; t < 197; ++t)
    for (int64_t c = 0; c < 192; ++c) {
      const double y = t == 0 ? 0 : (t - 1) / 14, x = t == 0 ? 0 : (t - 1) % 14;
      v.push_back(t == 0 ? 0.5 : std::sin(0.2 * y + 0.01 * c) * std::cos(0.15 * x - 0.02 * c));
    }
  for (auto& [n, t] : w)
    if (n == "pos_embed") t = Tensor::from_vector(v, {1, 197, 192}, DType::f32);
  models::ViTConfig big = models::preset("deit_tiny_patch16_224");
  big.img_size = 256;
  const auto notes = engine::adapt_timm_weights(w, big);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_CONTAINS(notes[0], "pos_embed: grid 14x14 -> 16x16");
  EXPECT_EQ(get(w, "pos_embed").shape(), (Shape{1, 257, 192}));
  engine::check_timm_compatible(w, big);
  engine::adapt_timm_weights(w, models::preset("deit_tiny_patch16_224"));
  const auto back = get(w, "pos_embed").to_vector();
  ASSERT_EQ(back.size(), v.size());
  double worst = 0;
  for (size_t i = 0; i < v.size(); ++i) worst = std::max(worst, std::abs(back[i] - v[i]));
  EXPECT_LT(worst, 0.02) << "smooth embedding, up then down";
  for (size_t c = 0; c < 192; ++c) EXPECT_EQ(back[c], 0.5) << "CLS kept exactly";
  EXPECT_EQ(get(w, "blocks.3.attn.qkv.weight").to_vector(),
            formula_tensor("blocks.3.attn.qkv.weight", {576, 192}).to_vector());
}

TEST(TimmWeights, HeadIsDroppedOrReplacedForAnotherClassCount) {
  models::ViTConfig ten = models::preset("deit_tiny_patch16_224");
  ten.num_classes = 10;
  io::NamedTensors w = formula_deit_tiny();
  auto notes = engine::adapt_timm_weights(w, ten);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_CONTAINS(notes[0], "head: 1000 classes -> 10, dropped");
  EXPECT_FALSE(has(w, "head.weight"));
  EXPECT_FALSE(has(w, "head.bias"));

  w = formula_deit_tiny();
  engine::TimmAdaptOptions opt;
  opt.zero_new_head = true;
  notes = engine::adapt_timm_weights(w, ten, opt);
  EXPECT_CONTAINS(notes.at(0), "replaced by a zero head");
  EXPECT_EQ(get(w, "head.weight").shape(), (Shape{10, 192}));
  EXPECT_EQ(get(w, "head.bias").to_vector(), std::vector<double>(10, 0.0));
  engine::check_timm_compatible(w, ten);

  models::ViTConfig none = ten;
  none.num_classes = 0;
  w = formula_deit_tiny();
  engine::adapt_timm_weights(w, none, opt);
  EXPECT_FALSE(has(w, "head.weight"));
  engine::check_timm_compatible(w, none);
  EXPECT_CONTAINS(error_of([&] { engine::check_timm_compatible(w, ten); }), "lack 'head.bias' [10]");
}

// A small model (vit_micro with 2 blocks) so loading and forward stay fast.
models::ViTConfig micro(const std::string& type) {
  models::ViTConfig c = models::preset("vit_micro");
  c.embed_dim = 12, c.depth = 2, c.num_heads = 3;
  c.attention.type = type;
  c.attention.m = 4, c.attention.k = 4;
  c.attention.dwc = type == "mita";
  return c;
}

TEST(TimmWeights, LoadKeepsTheModelsHeadAndPutsDenseWeightsIntoMita) {
  models::VisionTransformer dense(micro("dense"));
  const io::NamedTensors exported = engine::export_timm_weights(dense);
  models::ViTConfig target = micro("mita");
  target.num_classes = 3;
  target.img_size = 35;  // 7x7 patches: grid 4x4 -> 5x5
  models::VisionTransformer mita(target);
  const Tensor own_head = get(mita.state_dict(), "head.weight").detach().to(DType::f32);
  const auto own_head_values = own_head.to_vector();
  const auto own_dwc = get(mita.state_dict(), "blocks.0.attn.dwc.weight").to_vector();
  const engine::TimmLoadReport r = engine::load_timm_weights(mita, exported);
  ASSERT_EQ(r.adapted.size(), 4u);
  EXPECT_CONTAINS(r.adapted[0], "grid 4x4 -> 5x5");
  EXPECT_CONTAINS(r.adapted[1], "10 classes -> 3, dropped");
  EXPECT_CONTAINS(r.adapted[2], "own initial head");
  EXPECT_CONTAINS(r.adapted[3], "4 tensor(s) timm's ViT lacks keep the model's initial values, e.g. blocks.0.attn.dwc");
  const auto state = mita.state_dict();
  EXPECT_EQ(get(state, "head.weight").to_vector(), own_head_values);
  EXPECT_EQ(get(state, "blocks.0.attn.dwc.weight").to_vector(), own_dwc);
  EXPECT_EQ(get(state, "blocks.1.attn.qkv.weight").to_vector(), get(exported, "blocks.1.attn.qkv.weight").to_vector());
  EXPECT_EQ(get(state, "blocks.0.attn.proj.bias").to_vector(), get(exported, "blocks.0.attn.proj.bias").to_vector());
  EXPECT_EQ(get(state, "pos_embed").shape(), (Shape{1, 26, 12}));

  // MiTA's DWC has no place in timm's ViT: export names it.
  EXPECT_CONTAINS(error_of([&] { engine::export_timm_weights(mita); }), "dwc");
}

TEST(TimmWeights, ExportRoundTripsThroughSafetensors) {
  models::VisionTransformer m(micro("dense"));
  const io::NamedTensors w = engine::export_timm_weights(m);
  TempDir dir;
  io::save_safetensors(dir.file("w.safetensors"), w, {{"format", "pt"}});
  io::SafetensorsFile back = io::read_safetensors(dir.file("w.safetensors"));
  engine::check_timm_compatible(back.tensors, m.config());
  EXPECT_EQ(back.metadata.at("format"), "pt");
  const models::ViTConfig inferred = engine::infer_vit_config(back.tensors);
  EXPECT_EQ(inferred.embed_dim, 12);
  EXPECT_EQ(inferred.depth, 2);
  EXPECT_EQ(inferred.img_size, 28);
  EXPECT_EQ(inferred.patch_size, 7);
  EXPECT_EQ(inferred.num_classes, 10);
  models::VisionTransformer again(m.config());
  engine::load_timm_weights(again, back.tensors);
  for (const auto& [name, t] : m.state_dict()) EXPECT_EQ(get(again.state_dict(), name).to_vector(), t.to_vector());

  // bf16 weights are cast to f32; a mis-shaped tensor is named.
  io::NamedTensors half = w;
  for (auto& [n, t] : half) t = t.to(DType::bf16);
  EXPECT_CONTAINS(error_of([&] { engine::check_timm_compatible(half, m.config()); }), "is bf16");
  EXPECT_CONTAINS(engine::adapt_timm_weights(half, m.config()).at(0), "cast to f32");
  engine::check_timm_compatible(half, m.config());
  models::ViTConfig wider = m.config();
  wider.embed_dim = 24;
  EXPECT_CONTAINS(error_of([&] { engine::check_timm_compatible(w, wider); }), "'cls_token' has shape [1, 1, 12]");
}

// Against torch itself: timm 1.0.29's resample_abs_pos_embed (antialiased bicubic) and DeiT's plain bicubic
// F.interpolate of a seeded 14x14 grid (C 8) to 16x16, 7x7 and 12x20, computed in f64 on the GPU machine
// (scripts/gen_posembed_fixture.py). Ours runs in f32 from the f32-rounded input: 1e-5 absolute on values ~N(0,1).
TEST(TimmWeights, PosEmbedResamplingMatchesTimmAndDeitComputedByTorch) {
  const io::NamedTensors w =
      io::load_safetensors(std::string(VT_SOURCE_DIR) + "/tests/ref/pos_embed_resample.safetensors");
  const Tensor& in = get(w, "input");
  ASSERT_EQ(in.shape(), Shape({1, 197, 8}));
  struct Grid {
    const char* name;
    int64_t h, w;
  };
  for (const Grid g : {Grid{"up_16x16", 16, 16}, Grid{"down_7x7", 7, 7}, Grid{"rect_12x20", 12, 20}})
    for (const auto& [prefix, mode] :
         {std::pair<std::string, engine::PosEmbedResize>{"timm_", engine::PosEmbedResize::timm},
          {"deit_", engine::PosEmbedResize::deit}}) {
      const Tensor& ref = get(w, prefix + g.name);
      const Tensor ours = engine::resample_pos_embed(in, 14, 14, g.h, g.w, 1, mode);
      ASSERT_EQ(ours.shape(), ref.shape()) << prefix << g.name;
      const std::vector<double> a = ours.to_vector(), b = ref.to_vector();
      double worst = 0;
      for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
      EXPECT_LE(worst, 1e-5) << prefix << g.name;
    }
}

}  // namespace
}  // namespace vt::test
