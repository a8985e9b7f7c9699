// The Segmenter of Table 4 (models/segmenter, cbt_decoder, linear_decoder): output shapes of every decoder ×
// attention pair, the CBT decoder against plain loops and a finite-difference gradcheck in f64, the official
// parameter names, and timm-format backbone loading (pos_embed resized bilinearly, head skipped).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "autograd/gradcheck.h"
#include "engine/timm_weights.h"
#include "io/safetensors.h"
#include "models/cbt_decoder.h"
#include "models/linear_decoder.h"
#include "models/registry.h"
#include "models/segmenter.h"
#include "ops/ops.h"
#include "tests/nn/mita_test_util.h"

namespace vt::test {
namespace {

// A tiny Segmenter: 64² images, patch 16 (4x4 grid, N = 17 = G² + 1), dim 48, 3 heads, depth 2, 5 classes.
models::SegmenterConfig tiny(const std::string& decoder, const std::string& attention) {
  io::ModelConfig m;
  m.name = "vit_tiny_patch16_384";
  m.img_size = 64;
  m.embed_dim = 48;
  m.depth = 2;
  m.num_heads = 3;
  m.num_classes = 5;
  m.layer_norm_eps = 1e-5;
  m.attention.type = attention;
  if (attention == "mita") m.attention.m = m.attention.k = 4;
  if (attention == "bra") m.attention.n_win = 2, m.attention.topk = 2;  // 2x2 regions of the 4x4 grid
  m.decoder.type = decoder;
  m.decoder.layers = 2;
  m.decoder.heads = 2;
  m.decoder.head_dim = 8;
  m.decoder.reps_grid = 2;
  return models::segmenter_config(m, 7);
}

Tensor images(int64_t B, int64_t S, uint64_t seed) { return randn_t({B, 3, S, S}, seed, 1.0, DType::f32); }

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

TEST(Segmenter, OutputShapesOfEveryDecoderAndAttention) {
  for (const char* decoder : {"cbt", "linear"})
    for (const char* attention : {"dense", "mita", "bra"}) {
      models::Segmenter seg(tiny(decoder, attention));
      const Tensor x = images(2, 64, 1);
      const Tensor masks = seg.forward_masks(x);
      EXPECT_EQ(masks.shape(), (Shape{2, 5, 4, 4})) << decoder << " " << attention;
      const Tensor logits = seg.forward(x);
      EXPECT_EQ(logits.shape(), (Shape{2, 5, 64, 64})) << decoder << " " << attention;
      EXPECT_EQ(logits.dtype(), DType::f32);
      EXPECT_TRUE(all_finite(logits)) << decoder << " " << attention;
      // The loss of the training step runs and reaches every parameter.
      const Tensor target = Tensor::zeros({2, 64, 64}, DType::i64);
      ops::pixel_cross_entropy(logits, target).backward();
      for (const auto& [name, p] : seg.named_parameters())
        EXPECT_TRUE(p.grad().defined()) << decoder << " " << attention << ": no gradient for " << name;
    }
}

TEST(Segmenter, ConfigFromModelSection) {
  io::ModelConfig m;
  m.name = "vit_small_patch16_384";
  m.img_size = 512;
  m.layer_norm_eps = 1e-5;
  m.decoder.type = "cbt";
  const models::SegmenterConfig c = models::segmenter_config(m, 3);
  EXPECT_EQ(c.backbone.embed_dim, 384);
  EXPECT_EQ(c.backbone.num_heads, 6);
  EXPECT_EQ(c.backbone.img_size, 512);
  EXPECT_EQ(c.backbone.num_classes, 0);
  EXPECT_EQ(c.backbone.layer_norm_eps, 1e-5);
  EXPECT_EQ(c.num_classes, 150);  // model.num_classes 0: ADE20K's 150
  EXPECT_EQ(c.decoder.heads, 3);
  EXPECT_EQ(c.decoder.head_dim, 100);
  m.decoder.type = "mlp";
  EXPECT_THROW(models::Segmenter{models::segmenter_config(m, 3)}, Error);
}

TEST(Segmenter, EncoderWithoutHeadReturnsFeatures) {
  models::Segmenter seg(tiny("linear", "dense"));
  EXPECT_EQ(seg.encoder->head, nullptr);
  EXPECT_EQ(seg.encoder->forward(images(2, 64, 2)).shape(), (Shape{2, 48}));
}

// ---- parameter names (the official MaskTransformer's and Segmenter's, for weight exchange) ----

TEST(Segmenter, ParameterNamesAreTheOfficialOnes) {
  models::Segmenter cbt(tiny("cbt", "dense"));
  std::map<std::string, Shape> shapes;
  for (const auto& [name, t] : cbt.state_dict()) shapes[name] = t.shape();
  const std::map<std::string, Shape> expected = {
      {"encoder.cls_token", {1, 1, 48}},
      {"encoder.pos_embed", {1, 17, 48}},
      {"encoder.patch_embed.proj.weight", {48, 3, 16, 16}},
      {"encoder.blocks.1.attn.qkv.weight", {144, 48}},
      {"encoder.norm.weight", {48}},
      {"decoder.cls_emb", {1, 5, 48}},
      {"decoder.net.layers.0.norm.weight", {48}},
      {"decoder.net.layers.0.norm.bias", {48}},
      {"decoder.net.layers.1.fn.proj.weight", {16, 48}},
      {"decoder.net.layers.1.fn.step_x", {2, 1, 1}},
      {"decoder.net.layers.1.fn.step_rep", {2, 1, 1}},
      {"decoder.net.layers.1.fn.to_out.weight", {48, 16}},
      {"decoder.net.layers.1.fn.to_out.bias", {48}},
      {"decoder.decoder_norm.weight", {48}},
      {"decoder.decoder_norm.bias", {48}},
      {"decoder.mask_norm.weight", {5}},
      {"decoder.mask_norm.bias", {5}},
  };
  for (const auto& [name, shape] : expected) {
    ASSERT_TRUE(shapes.count(name)) << "missing " << name;
    EXPECT_EQ(shapes[name], shape) << name;
  }
  EXPECT_FALSE(shapes.count("encoder.head.weight"));
  EXPECT_FALSE(shapes.count("decoder.net.layers.0.fn.proj.bias"));  // P_in has no bias
  int64_t decoder_tensors = 0;
  for (const auto& [name, s] : shapes) decoder_tensors += name.rfind("decoder.", 0) == 0;
  EXPECT_EQ(decoder_tensors, 1 + 2 * 7 + 4);

  models::Segmenter lin(tiny("linear", "dense"));
  std::map<std::string, Shape> lin_shapes;
  for (const auto& [name, t] : lin.state_dict())
    if (name.rfind("decoder.", 0) == 0) lin_shapes[name] = t.shape();
  EXPECT_EQ(lin_shapes, (std::map<std::string, Shape>{{"decoder.head.weight", {5, 48}}, {"decoder.head.bias", {5}}}));
}

TEST(Segmenter, DecoderInitialisation) {
  models::Segmenter seg(tiny("cbt", "dense"));
  auto& dec = dynamic_cast<models::CbtDecoder&>(*seg.decoder);
  double sq = 0;
  const auto emb = dec.cls_emb.to_vector();
  for (double v : emb) sq += v * v;
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(emb.size())), 0.02, 0.004);  // trunc_normal(.02), 240 draws
  for (double v : dec.layers[0]->fn->to_out->bias.to_vector()) EXPECT_EQ(v, 0.0);
  for (double v : dec.mask_norm->weight.to_vector()) EXPECT_EQ(v, 1.0);
  EXPECT_EQ(dec.mask_norm->eps, 1e-5);
  // step_x / step_rep are N(0, 1) draws, not constants.
  const auto sx = dec.layers[0]->fn->step_x.to_vector();
  EXPECT_NE(sx[0], sx[1]);
}

// ---- the CBT decoder against plain loops, and its gradients ----

constexpr int64_t kB = 2, kG = 3, kNp = kG * kG, kD = 6, kK = 3, kHeads = 2, kHeadDim = 3, kReps = 2;

models::CbtDecoderConfig small_cbt() {
  models::CbtDecoderConfig c;
  c.dim = kD, c.num_classes = kK, c.layers = 2, c.heads = kHeads, c.head_dim = kHeadDim, c.reps_grid = kReps;
  return c;
}

// Every parameter member of the decoder (the handles its forward reads).
std::vector<Tensor*> parameter_slots(models::CbtDecoder& d) {
  std::vector<Tensor*> s = {&d.cls_emb};
  for (auto& l : d.layers)
    for (Tensor* t : {&l->norm->weight, &l->norm->bias, &l->fn->proj->weight, &l->fn->step_x, &l->fn->step_rep,
                      &l->fn->to_out->weight, &l->fn->to_out->bias})
      s.push_back(t);
  for (Tensor* t : {&d.decoder_norm->weight, &d.decoder_norm->bias, &d.mask_norm->weight, &d.mask_norm->bias})
    s.push_back(t);
  return s;
}

// Random f64 values for every parameter (norm weights around 1).
std::vector<Tensor> random_parameters(models::CbtDecoder& d, uint64_t seed) {
  std::vector<const Tensor*> norm_weights = {&d.decoder_norm->weight, &d.mask_norm->weight};
  for (auto& l : d.layers) norm_weights.push_back(&l->norm->weight);
  std::vector<Tensor> out;
  for (Tensor* t : parameter_slots(d)) {
    Tensor v = randn_t(t->shape(), seed + out.size(), 0.5);
    if (std::find(norm_weights.begin(), norm_weights.end(), t) != norm_weights.end()) v = v + 1.0;
    out.push_back(v);
  }
  return out;
}

using Mat = std::vector<double>;  // row-major

Mat layer_norm_rows(const Mat& x, int64_t rows, int64_t w, const Mat& g, const Mat& b, double eps) {
  Mat y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < w; ++c) mean += x[r * w + c];
    mean /= static_cast<double>(w);
    for (int64_t c = 0; c < w; ++c) var += (x[r * w + c] - mean) * (x[r * w + c] - mean);
    var /= static_cast<double>(w);
    for (int64_t c = 0; c < w; ++c) y[r * w + c] = (x[r * w + c] - mean) / std::sqrt(var + eps) * g[c] + b[c];
  }
  return y;
}

// a [M, K] · bᵀ with b [N, K].
Mat mm_t(const Mat& a, const Mat& b, int64_t M, int64_t N, int64_t K) {
  Mat y(static_cast<size_t>(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) y[i * N + j] += a[i * K + k] * b[j * K + k];
  return y;
}

Mat transpose(const Mat& a, int64_t M, int64_t N) {
  Mat y(a.size());
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) y[j * M + i] = a[i * N + j];
  return y;
}

void softmax_rows(Mat& x, int64_t rows, int64_t w) {
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -1e300, s = 0;
    for (int64_t c = 0; c < w; ++c) mx = std::max(mx, x[r * w + c]);
    for (int64_t c = 0; c < w; ++c) s += (x[r * w + c] = std::exp(x[r * w + c] - mx));
    for (int64_t c = 0; c < w; ++c) x[r * w + c] /= s;
  }
}

// Spec §5 written out for one image: patches [Np, D] → masks [K, Np].
Mat reference_cbt(const Mat& patches, const std::vector<Mat>& p) {
  const int64_t n = kNp + kK, inner = kHeads * kHeadDim, m = kReps * kReps;
  const double scale = 1.0 / std::sqrt(static_cast<double>(kHeadDim));
  Mat x = patches;
  x.insert(x.end(), p[0].begin(), p[0].end());  // classes after the patches
  for (int64_t l = 0; l < 2; ++l) {
    const Mat* q = &p[1 + 7 * l];  // norm.w, norm.b, proj, step_x, step_rep, to_out.w, to_out.b
    const Mat h = layer_norm_rows(x, n, kD, q[0], q[1], 1e-5);
    const Mat w = mm_t(h, q[2], n, inner, kD);  // [n, inner]
    Mat rep(static_cast<size_t>(m * inner), 0.0);
    for (int64_t i = 0; i < kReps; ++i)
      for (int64_t j = 0; j < kReps; ++j) {  // torch adaptive_avg_pool2d bins
        const int64_t r0 = i * kG / kReps, r1 = ((i + 1) * kG + kReps - 1) / kReps;
        const int64_t c0 = j * kG / kReps, c1 = ((j + 1) * kG + kReps - 1) / kReps;
        const double count = static_cast<double>((r1 - r0) * (c1 - c0));
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c)
            for (int64_t e = 0; e < inner; ++e) rep[(i * kReps + j) * inner + e] += w[(r * kG + c) * inner + e] / count;
      }
    Mat delta(static_cast<size_t>(n * inner), 0.0);
    for (int64_t hd = 0; hd < kHeads; ++hd) {
      auto head_of = [&](const Mat& src, int64_t rows) {
        Mat o(static_cast<size_t>(rows * kHeadDim));
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t e = 0; e < kHeadDim; ++e) o[r * kHeadDim + e] = src[r * inner + hd * kHeadDim + e];
        return o;
      };
      const Mat wh = head_of(w, n);
      Mat rh = head_of(rep, m);
      Mat a = mm_t(rh, wh, m, n, kHeadDim);
      for (double& v : a) v *= scale;
      softmax_rows(a, m, n);
      const Mat aw = mm_t(a, transpose(wh, n, kHeadDim), m, kHeadDim, n);
      for (size_t i = 0; i < rh.size(); ++i) rh[i] += q[4][hd] * aw[i];
      Mat s = mm_t(rh, rh, m, m, kHeadDim);
      for (double& v : s) v *= scale;
      softmax_rows(s, m, m);
      const Mat z = mm_t(s, transpose(rh, m, kHeadDim), m, kHeadDim, m);
      const Mat d = mm_t(transpose(a, m, n), transpose(z, m, kHeadDim), n, kHeadDim, m);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t e = 0; e < kHeadDim; ++e) delta[r * inner + hd * kHeadDim + e] = q[3][hd] * d[r * kHeadDim + e];
    }
    const Mat out = mm_t(delta, q[5], n, kD, inner);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < kD; ++c) x[r * kD + c] += out[r * kD + c] + q[6][c];
  }
  Mat y = layer_norm_rows(x, n, kD, p[15], p[16], 1e-5);
  for (int64_t r = 0; r < n; ++r) {
    double norm = 0;
    for (int64_t c = 0; c < kD; ++c) norm += y[r * kD + c] * y[r * kD + c];
    for (int64_t c = 0; c < kD; ++c) y[r * kD + c] /= std::sqrt(norm);
  }
  const Mat cls(y.begin() + kNp * kD, y.end());
  const Mat masks = layer_norm_rows(mm_t(y, cls, kNp, kK, kD), kNp, kK, p[17], p[18], 1e-5);  // [Np, K]
  return transpose(masks, kNp, kK);
}

TEST(CbtDecoder, MatchesTheSpecWrittenAsLoops) {
  Generator gen(3);
  models::CbtDecoder dec(small_cbt(), gen);
  const std::vector<Tensor> params = random_parameters(dec, 100);
  const std::vector<Tensor*> slots = parameter_slots(dec);
  ASSERT_EQ(slots.size(), 19u);
  for (size_t i = 0; i < slots.size(); ++i) *slots[i] = params[i];
  const Tensor patches = randn_t({kB, kNp, kD}, 5);
  const Tensor masks = dec.forward(patches, kG, kG);
  ASSERT_EQ(masks.shape(), (Shape{kB, kK, kG, kG}));
  std::vector<Mat> p;
  for (const Tensor& t : params) p.push_back(t.to_vector());
  const Mat all = patches.to_vector(), got = masks.to_vector();
  for (int64_t b = 0; b < kB; ++b) {
    const Mat one(all.begin() + b * kNp * kD, all.begin() + (b + 1) * kNp * kD);
    const Mat want = reference_cbt(one, p);
    const Mat have(got.begin() + b * kK * kNp, got.begin() + (b + 1) * kK * kNp);
    expect_near_all(have, want, 1e-10, "image " + std::to_string(b));
  }
}

TEST(CbtDecoder, GradcheckF64) {
  Generator gen(4);
  models::CbtDecoder dec(small_cbt(), gen);
  const std::vector<Tensor*> slots = parameter_slots(dec);
  std::vector<Tensor> inputs = {randn_t({kB, kNp, kD}, 9)};
  for (const Tensor& t : random_parameters(dec, 200)) inputs.push_back(t);
  auto fn = [&](const std::vector<Tensor>& in) {
    for (size_t i = 0; i < slots.size(); ++i) *slots[i] = in[i + 1];
    return dec.forward(in[0], kG, kG);
  };
  const GradcheckResult r = gradcheck(fn, inputs);
  EXPECT_TRUE(r.ok) << r.detail << " (inputs: patches, then the parameters in parameter_slots order)";
}

TEST(CbtDecoder, RejectsBadShapes) {
  Generator gen(5);
  models::CbtDecoder dec(small_cbt(), gen);
  EXPECT_THROW(dec.forward(randn_t({1, 8, kD}, 1), kG, kG), Error);
  EXPECT_THROW(dec.forward(randn_t({1, 6, kD}, 1), 2, 3), Error);
}

// ---- timm-format backbone loading ----

// A timm ViT state dict (dim 48, depth 1, 4x4 pos grid, 10-class head) with distinct values per tensor.
io::NamedTensors tiny_timm_checkpoint() {
  models::ViTConfig c = models::preset("vit_tiny_patch16_384");
  c.img_size = 64, c.embed_dim = 48, c.depth = 1, c.num_heads = 3, c.num_classes = 10;
  io::NamedTensors w;
  uint64_t seed = 300;
  for (const auto& [name, shape] : engine::timm_state_dict_spec(c))
    w.emplace_back(name, randn_t(shape, seed++, 0.1, DType::f32));
  return w;
}

const Tensor& find(const io::NamedTensors& w, const std::string& name) {
  for (const auto& [n, t] : w)
    if (n == name) return t;
  throw std::runtime_error("no " + name);
}

// F.interpolate(bilinear, align_corners=False) taps from 4 to 6 along one axis, written out by hand:
// source = max((i + 0.5)·4/6 − 0.5, 0).
const double kTaps4to6[6][4] = {{1, 0, 0, 0},     {0.5, 0.5, 0, 0}, {0, 5.0 / 6, 1.0 / 6, 0}, {0, 1.0 / 6, 5.0 / 6, 0},
                                {0, 0, 0.5, 0.5}, {0, 0, 0, 1}};

TEST(Segmenter, LoadsATimmBackboneWithBilinearPosEmbed) {
  const auto dir = std::filesystem::temp_directory_path() / "vt_test_segmenter";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "vit_tiny_timm.safetensors").string();
  const io::NamedTensors ckpt = tiny_timm_checkpoint();
  io::save_safetensors(path, ckpt);
  for (const char* attention : {"dense", "mita"}) {
    io::ModelConfig m;
    m.name = "vit_tiny_patch16_384";
    m.img_size = 96;  // 6x6 grid
    m.embed_dim = 48, m.depth = 1, m.num_heads = 3, m.num_classes = 5;
    m.attention.type = attention;
    if (std::string(attention) == "mita") m.attention.m = m.attention.k = 4;
    m.decoder.type = "cbt", m.decoder.layers = 1, m.decoder.heads = 2, m.decoder.head_dim = 8, m.decoder.reps_grid = 2;
    models::Segmenter seg(models::segmenter_config(m, 1));
    const Tensor decoder_before = seg.decoder->state_dict().front().second.clone();
    const engine::WeightLoadReport rep = engine::load_segmenter_backbone(seg, path);
    const auto state = seg.state_dict();
    for (const char* name : {"blocks.0.attn.qkv.weight", "blocks.0.attn.proj.bias", "blocks.0.mlp.fc1.weight",
                             "cls_token", "norm.weight", "patch_embed.proj.weight"})
      EXPECT_EQ(find(state, std::string("encoder.") + name).to_vector(), find(ckpt, name).to_vector()) << name;
    EXPECT_EQ(seg.decoder->state_dict().front().second.to_vector(), decoder_before.to_vector());
    // pos_embed: CLS kept, the 4x4 grid resized to 6x6 bilinearly.
    const auto src = find(ckpt, "pos_embed").to_vector(), got = find(state, "encoder.pos_embed").to_vector();
    ASSERT_EQ(got.size(), static_cast<size_t>((1 + 36) * 48));
    double worst = 0;
    for (int64_t c = 0; c < 48; ++c) {
      worst = std::max(worst, std::abs(got[c] - src[c]));
      for (int64_t y = 0; y < 6; ++y)
        for (int64_t x = 0; x < 6; ++x) {
          double want = 0;
          for (int64_t i = 0; i < 4; ++i)
            for (int64_t j = 0; j < 4; ++j) want += kTaps4to6[y][i] * kTaps4to6[x][j] * src[(1 + i * 4 + j) * 48 + c];
          worst = std::max(worst, std::abs(got[(1 + y * 6 + x) * 48 + c] - want));
        }
    }
    EXPECT_LT(worst, 1e-6) << attention;  // f32 rounding of the two passes
    bool head_noted = false;
    for (const auto& line : rep.adapted) head_noted |= line.find("head") != std::string::npos;
    EXPECT_TRUE(head_noted) << "the dropped head is reported";
    EXPECT_TRUE(all_finite(seg.forward(images(1, 96, 3))));
  }
  // A whole Segmenter checkpoint is not a backbone; a missing file names itself.
  io::save_safetensors(path, {{"encoder.cls_token", Tensor::zeros({1, 1, 48})}});
  models::Segmenter seg(tiny("linear", "dense"));
  EXPECT_THROW(engine::load_segmenter_backbone(seg, path), Error);
  try {
    engine::load_segmenter_backbone(seg, (dir / "missing.safetensors").string());
    ADD_FAILURE() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.safetensors"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vt::test
