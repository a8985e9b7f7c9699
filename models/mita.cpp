// MiTA reference forward built from differentiable ops (see mita.h). The two selections (top-k keys per expert,
// top-s experts per query) are computed without autograd; everything else — the landmark pooling, the V̂ SDPA,
// the gathers (index_select, whose backward is a scatter-add) and the joint softmax — records history, so the
// gradients are exactly those of spec §2.4.
#include "models/mita.h"

#include "models/attention.h"

#include <cmath>
#include <utility>
#include <vector>

#include "autograd/node.h"
#include "core/rng.h"
#include "ops/ops.h"

namespace vt::models {

namespace {

void check_strings(const MitaOptions& o) {
  VT_CHECK(o.landmark_pool == "shifted" || o.landmark_pool == "patches" || o.landmark_pool == "sequence" ||
               o.landmark_pool == "random",
           "[mita] model.attention.landmark_pool must be 'shifted', 'patches', 'sequence' or 'random', got '",
           o.landmark_pool, "'");
  VT_CHECK(o.impl == "fused" || o.impl == "reference",
           "[mita] model.attention.impl must be 'fused' or 'reference', got '", o.impl, "'");
  VT_CHECK(o.shared_scale == "official" || o.shared_scale == "paper",
           "[mita] model.attention.shared_scale must be 'official' or 'paper', got '", o.shared_scale, "'");
}

// Appendix A's "random" landmarks: the queries of m distinct patch tokens (1..N-1), drawn afresh at every forward
// from the default generator (a partial Fisher-Yates shuffle on Philox draws), the same tokens for the whole batch.
Tensor random_landmarks(const Tensor& q, int64_t m) {
  const int64_t L = q.size(1) - 1;
  VT_CHECK(L >= m, "[mita] landmark_pool 'random' picks model.attention.m = ", m, " of the ", L,
           " patch tokens: needs m <= N - 1");
  Generator& gen = default_generator();
  const uint64_t offset = gen.reserve(static_cast<uint64_t>(m));
  std::vector<int64_t> tokens(static_cast<size_t>(L));
  for (int64_t t = 0; t < L; ++t) tokens[static_cast<size_t>(t)] = t + 1;
  std::vector<double> picked(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) {
    const int64_t j = i + static_cast<int64_t>(rng::bits_at(gen.seed(), offset, static_cast<uint64_t>(i)) %
                                               static_cast<uint64_t>(L - i));
    std::swap(tokens[static_cast<size_t>(i)], tokens[static_cast<size_t>(j)]);
    picked[static_cast<size_t>(i)] = static_cast<double>(tokens[static_cast<size_t>(i)]);
  }
  const Tensor index = Tensor::from_vector(picked, {m}, DType::i64).to(q.device());
  return ops::index_select(q, 1, index);
}

// q [B, N, C] → [B, H, N, d] (a view; channel c is head c / d, timm's layout).
Tensor split_heads(const Tensor& t, int64_t heads) {
  const int64_t B = t.size(0), N = t.size(1), C = t.size(2);
  return t.reshape({B, N, heads, C / heads}).permute({0, 2, 1, 3});
}

thread_local MitaRoutingTap* active_tap = nullptr;

ops::MitaRouting moved(const ops::MitaRouting& r, Device dev) {
  return {r.expert_keys.to(dev), r.experts.to(dev), r.order.to(dev), r.offsets.to(dev)};
}

// The active tap's next recorded routing, moved to `dev`, when a tap replays; else false.
bool replayed_routing(Device dev, ops::MitaRouting& routing) {
  if (!active_tap || active_tap->mode != MitaRoutingTap::Mode::replay) return false;
  VT_CHECK(active_tap->next < active_tap->routings.size(), "[mita] routing tap: no recorded routing left for call ",
           active_tap->next);
  routing = moved(active_tap->routings[active_tap->next++], dev);
  return true;
}

void record_routing(const ops::MitaRouting& routing) {
  if (active_tap && active_tap->mode == MitaRoutingTap::Mode::record)
    active_tap->routings.push_back(moved(routing, cpu()));
}

// The joint attention's settings for head dim d: routed logits 1/√d, shared logits 1/d (official) or 1/√d (paper).
ops::MitaAttentionOptions attention_options(int64_t d, const MitaOptions& o) {
  ops::MitaAttentionOptions ao;
  ao.scale = 1.0 / std::sqrt(static_cast<double>(d));
  ao.shared_scale = o.shared_scale == "official" ? 1.0 / static_cast<double>(d) : ao.scale;
  ao.shared = !o.route_only;
  ao.deterministic = o.deterministic;
  return ao;
}

/// The fused path: routing kernels, V̂ by the composite in f32, the joint-attention op.
Tensor fused_mita(const Tensor& Q, const Tensor& K, const Tensor& V, const Tensor& R, const MitaOptions& o) {
  const int64_t B = Q.size(0), H = Q.size(1), N = Q.size(2), d = Q.size(3);
  const ops::MitaAttentionOptions ao = attention_options(d, o);
  ops::MitaRouting routing;
  Tensor V_hat;
  if (!replayed_routing(Q.device(), routing) &&
      (o.route_only || !ops::mita_route_with_values(Q, K, V, R, o.k, ao.scale, routing, V_hat))) {
    NoGradGuard no_grad;
    routing = ops::mita_route(Q.detach(), K.detach(), R.detach(), o.k);
  }
  record_routing(routing);
  if (!o.route_only && !V_hat.defined()) V_hat = ops::mita_shared_values(R, K, V, ao.scale);  // softmax(R Kᵀ/√d) V
  Tensor out = ops::mita_attention(Q, K, V, R, V_hat, routing, ao);  // [B, H, N, d] laid out [B, N, H, d]
  return out.transpose(1, 2).reshape({B, N, H * d});
}

// The shared branch alone (Appendix A's compress-only ablation): softmax(Q Rᵀ·shared_scale) V̂ with
// V̂ = softmax(R Kᵀ/√d) V, from generic ops on any device; bf16 inputs (autocast) run in f32 like the reference.
Tensor compress_only_core(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& landmarks,
                          const MitaOptions& o) {
  if (q.dtype() == DType::bf16)
    return compress_only_core(q.to(DType::f32), k.to(DType::f32), v.to(DType::f32), landmarks.to(DType::f32), o);
  const int64_t B = q.size(0), N = q.size(1), C = q.size(2), H = o.heads;
  VT_CHECK(H >= 1 && C % H == 0, "[mita] width ", C, " is not divisible by num_heads ", H);
  VT_CHECK(landmarks.size(0) == B && landmarks.size(1) == o.m && landmarks.size(2) == C, "[mita] landmarks ",
           landmarks.describe(), " should be [", B, ", ", o.m, ", ", C, "] (model.attention.m = ", o.m, ")");
  const ops::MitaAttentionOptions ao = attention_options(C / H, o);
  const double scale = ao.scale, shared_scale = ao.shared_scale;
  const Tensor Q = split_heads(q, H), K = split_heads(k, H), V = split_heads(v, H), R = split_heads(landmarks, H);
  const Tensor V_hat = ops::matmul(ops::softmax(ops::matmul(R * scale, K.transpose(-2, -1)), -1), V);  // [B,H,m,d]
  const Tensor out = ops::matmul(ops::softmax(ops::matmul(Q, R.transpose(-2, -1)) * shared_scale, -1), V_hat);
  return out.permute({0, 2, 1, 3}).reshape({B, N, C});
}

}  // namespace

MitaRoutingTap::MitaRoutingTap(Mode m) : mode(m) {
  VT_CHECK(active_tap == nullptr, "[mita] only one MitaRoutingTap may be active per thread");
  active_tap = this;
}
MitaRoutingTap::~MitaRoutingTap() { active_tap = nullptr; }

ops::MitaLandmarkLayout landmark_layout(int64_t N, int64_t m, const std::string& landmark_pool, int64_t registers) {
  VT_CHECK(landmark_pool == "shifted" || landmark_pool == "patches" || landmark_pool == "sequence",
           "[mita] model.attention.landmark_pool '", landmark_pool, "' has no pooling layout");
  const bool sequence = landmark_pool == "sequence";
  VT_CHECK(registers == 0 || landmark_pool == "patches", "[mita] register tokens need model.attention.landmark_pool ",
           "'patches' (got '", landmark_pool, "')");
  VT_CHECK(registers >= 0 && (sequence || N >= 2 + registers),
           "[mita] landmark pooling needs at least 2 tokens (CLS + patches), got N = ", N - registers);
  VT_CHECK(!sequence || N >= m, "[mita] landmark_pool 'sequence' pools the ", N, " tokens to model.attention.m = ", m,
           " landmarks: needs N >= m");
  const int64_t first = landmark_pool == "patches" ? 1 : 0, tokens = sequence ? N : N - 1 - registers;
  // A square number of pooled tokens is a G×G grid, pooled 2-D; other counts 1-D.
  const int64_t grid = sequence ? 0 : std::max<int64_t>(square_side(tokens), 0);
  try {
    return ops::MitaLandmarkLayout::make(first, tokens, grid, m);
  } catch (const Error& e) {
    VT_FAIL("[mita] model.attention.m = ", m, " with landmark_pool '", landmark_pool, "' over ", tokens, " tokens",
            grid > 0 ? " (a " + std::to_string(grid) + "x" + std::to_string(grid) + " grid)" : "", ": ", e.what());
  }
}

Tensor mita_landmarks(const Tensor& q, const MitaOptions& o) {
  VT_CHECK(q.defined() && q.dim() == 3, "[mita] queries must be [B, N, C], got ",
           q.defined() ? q.describe() : std::string("an undefined tensor"));
  const int64_t B = q.size(0), N = q.size(1), C = q.size(2);
  check_strings(o);
  if (o.landmark_pool == "random") return random_landmarks(q, o.m);
  const ops::MitaLandmarkLayout lay = landmark_layout(N, o.m, o.landmark_pool, o.registers);
  // One op reading q in place: no transposed copies.
  if (o.impl == "fused" && ops::mita_fused_supports(q.dtype(), q.device(), 0)) return ops::mita_landmark_pool(q, lay);
  // shifted: tokens 0..N-2 (CLS in, last patch out, so every patch sits one cell right of its true place);
  // patches: tokens 1..N-1 (before the registers); sequence: all.
  Tensor tokens = q.slice(1, lay.first(), lay.first() + lay.tokens());
  Tensor chan = tokens.transpose(1, 2);  // [B, C, L]
  Tensor pooled;
  if (lay.grid() > 0) {
    pooled = ops::adaptive_avg_pool2d(chan.reshape({B, C, lay.grid(), lay.grid()}), lay.pool(), lay.pool())
                 .reshape({B, C, o.m});  // landmark j = row·p + col
  } else {
    pooled = ops::adaptive_avg_pool1d(chan, o.m);
  }
  return pooled.transpose(1, 2);  // [B, m, C]
}

Tensor mita_core_packed(const Tensor& qkv, const MitaOptions& o, const Tensor& dwc_weight, const Tensor& dwc_bias,
                        bool gate) {
  check_strings(o);
  const int64_t blocks = gate ? 4 : 3;
  if (qkv.dim() != 3 || qkv.size(2) % blocks != 0 || o.heads < 1 || (qkv.size(2) / blocks) % o.heads != 0) return {};
  const int64_t N = qkv.size(1), d = qkv.size(2) / blocks / o.heads;
  if (o.impl != "fused" || o.s != 1 || o.compress_only || o.landmark_pool == "random" || o.k < 1 || o.k > N ||
      !ops::mita_fused_supports(qkv.dtype(), qkv.device(), d))
    return {};
  ops::MitaQkvOptions po;
  po.heads = o.heads;
  po.landmarks = landmark_layout(N, o.m, o.landmark_pool, o.registers);
  po.topk = o.k;
  po.attention = attention_options(d, o);
  po.gate = gate;
  if (!any_requires_grad({&qkv}) && !ops::mita_qkv_one_kernel(qkv, po)) return {};
  ops::MitaRouting replayed, used;
  const bool replay = replayed_routing(qkv.device(), replayed);
  Tensor out = ops::mita_qkv_attention(qkv, po, dwc_weight, dwc_bias, replay ? &replayed : nullptr, &used);
  record_routing(used);
  return out;
}

Tensor mita_core(const Tensor& q, const Tensor& k, const Tensor& v, const MitaOptions& o, MitaDebug* debug) {
  return mita_core_with_landmarks(q, k, v, mita_landmarks(q, o), o, debug);
}

Tensor mita_core_with_landmarks(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& landmarks,
                                const MitaOptions& o, MitaDebug* debug) {
  check_strings(o);
  for (const Tensor* t : {&q, &k, &v, &landmarks})
    VT_CHECK(t->defined() && t->dim() == 3, "[mita] q, k, v and landmarks must be [B, ?, C], got ",
             t->defined() ? t->describe() : std::string("an undefined tensor"));
  VT_CHECK(q.shape() == k.shape() && q.shape() == v.shape(), "[mita] q ", q.describe(), ", k ", k.describe(), " and v ",
           v.describe(), " must have the same shape");
  if (o.compress_only) return compress_only_core(q, k, v, landmarks, o);
  const int64_t d_head = o.heads >= 1 && q.size(2) % o.heads == 0 ? q.size(2) / o.heads : 0;
  if (!debug && d_head > 0 && q.dtype() == k.dtype() && q.dtype() == v.dtype() && q.dtype() == landmarks.dtype() &&
      o.impl == "fused" && o.s == 1 && ops::mita_fused_supports(q.dtype(), q.device(), d_head)) {
    VT_CHECK(o.k >= 1 && o.k <= q.size(1), "[mita] model.attention.k = ", o.k,
             " keys per expert must be in [1, N] with N = ", q.size(1), " tokens");
    VT_CHECK(landmarks.size(0) == q.size(0) && landmarks.size(1) == o.m && landmarks.size(2) == q.size(2),
             "[mita] landmarks ", landmarks.describe(), " should be [", q.size(0), ", ", o.m, ", ", q.size(2),
             "] (model.attention.m = ", o.m, ")");
    return fused_mita(split_heads(q, o.heads), split_heads(k, o.heads), split_heads(v, o.heads),
                      split_heads(landmarks, o.heads), o);
  }
  // The reference composite runs bf16 activations (autocast on the GPU) in f32.
  if (q.dtype() == DType::bf16 && k.dtype() == DType::bf16 && v.dtype() == DType::bf16 &&
      landmarks.dtype() == DType::bf16)
    return mita_core_with_landmarks(q.to(DType::f32), k.to(DType::f32), v.to(DType::f32), landmarks.to(DType::f32), o,
                                    debug);
  VT_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype() && q.dtype() == landmarks.dtype() &&
               (q.dtype() == DType::f32 || q.dtype() == DType::f64),
           "[mita] q, k, v and landmarks must all be f32 or all f64, got ", q.describe(), ", ", k.describe(), ", ",
           v.describe(), ", ", landmarks.describe());
  const int64_t B = q.size(0), N = q.size(1), C = q.size(2), H = o.heads;
  VT_CHECK(H >= 1 && C % H == 0, "[mita] width ", C, " is not divisible by num_heads ", H);
  VT_CHECK(landmarks.size(0) == B && landmarks.size(1) == o.m && landmarks.size(2) == C, "[mita] landmarks ",
           landmarks.describe(), " should be [", B, ", ", o.m, ", ", C, "] (model.attention.m = ", o.m, ")");
  VT_CHECK(o.k >= 1 && o.k <= N, "[mita] model.attention.k = ", o.k, " keys per expert must be in [1, N] with N = ", N,
           " tokens");
  VT_CHECK(o.s >= 1 && o.s <= o.m, "[mita] model.attention.s = ", o.s,
           " experts per query must be in [1, m] with model.attention.m = ", o.m);
  const int64_t d = C / H, m = o.m, kk = o.k, s = o.s, P = s * kk;
  const ops::MitaAttentionOptions ao = attention_options(d, o);
  const double scale = ao.scale, shared_scale = ao.shared_scale;

  Tensor Q = split_heads(q, H), K = split_heads(k, H), V = split_heads(v, H);  // [B, H, N, d]
  Tensor R = split_heads(landmarks, H);                                        // [B, H, m, d]

  // Discrete steps: no gradient reaches S = R Kᵀ or the gate R Qᵀ (both unscaled).
  Tensor key_scores, gate_scores, expert_keys, experts;
  {
    NoGradGuard no_grad;
    Tensor Rd = R.detach();
    key_scores = ops::matmul(Rd, K.detach().transpose(-2, -1));                    // [B, H, m, N]
    gate_scores = ops::matmul(Rd, Q.detach().transpose(-2, -1));                   // [B, H, m, N]
    expert_keys = ops::topk(key_scores, kk, -1).second.contiguous();               // [B, H, m, k]
    if (s == 1) experts = ops::argmax(gate_scores, 2).unsqueeze(-1).contiguous();  // first index on ties
    else experts = ops::topk(gate_scores, s, 2).second.permute({0, 1, 3, 2}).contiguous();
  }

  // Routed slot t·k + i of query n reads key I_{e_t(n)}[i]; rows index the flattened [B·H·N, d] K and V.
  // Built on the host: for CUDA tensors this copies the indices back (a synchronisation per layer, as the
  // official code's .item(); the fused kernels of issue 5 remove it).
  Tensor routed_keys = Tensor::empty({B, H, N, P}, DType::i64);
  Tensor rows = Tensor::empty({B * H * N * P}, DType::i64);
  {
    const Tensor ek_host = expert_keys.to(cpu()), ex_host = experts.to(cpu());
    const int64_t* ek = ek_host.data<int64_t>();
    const int64_t* ex = ex_host.data<int64_t>();
    int64_t* rk = routed_keys.data<int64_t>();
    int64_t* rw = rows.data<int64_t>();
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t t = 0; t < s; ++t) {
          const int64_t e = ex[(bh * N + n) * s + t];
          for (int64_t i = 0; i < kk; ++i) {
            const int64_t slot = (bh * N + n) * P + t * kk + i, key = ek[(bh * m + e) * kk + i];
            rk[slot] = key;
            rw[slot] = bh * N + key;
          }
        }
  }
  routed_keys = routed_keys.to(q.device());
  rows = rows.to(q.device());
  Tensor K_sel = ops::index_select(K.reshape({B * H * N, d}), 0, rows).reshape({B, H, N, P, d});
  Tensor V_sel = ops::index_select(V.reshape({B * H * N, d}), 0, rows).reshape({B, H, N, P, d});
  // b_i = (q_n · k_i)/√d over the routed slots.
  Tensor routed_logits = ops::matmul(Q.unsqueeze(3), K_sel.transpose(-2, -1)).squeeze(3) * scale;  // [B,H,N,P]

  Tensor out, weights;
  if (o.route_only) {
    weights = ops::softmax(routed_logits, -1);
    out = ops::matmul(weights.unsqueeze(3), V_sel).squeeze(3);
  } else {
    // V̂ = softmax(R Kᵀ/√d) V: the landmarks as queries over all N keys.
    Tensor V_hat = ops::matmul(ops::softmax(ops::matmul(R * scale, K.transpose(-2, -1)), -1), V);  // [B,H,m,d]
    // a_j = (q_n · r_j)·shared_scale; one softmax over [a | b].
    Tensor shared_logits = ops::matmul(Q, R.transpose(-2, -1)) * shared_scale;  // [B, H, N, m]
    weights = ops::softmax(ops::concat({shared_logits, routed_logits}, -1), -1);
    out = ops::matmul(weights.slice(3, 0, m), V_hat) +
          ops::matmul(weights.slice(3, m, m + P).unsqueeze(3), V_sel).squeeze(3);
  }
  if (debug) {
    debug->landmarks = landmarks.detach();
    debug->key_scores = key_scores;
    debug->gate_scores = gate_scores;
    debug->expert_keys = expert_keys;
    debug->experts = experts;
    debug->routed_keys = routed_keys;
    debug->weights = weights.detach();
  }
  return out.permute({0, 2, 1, 3}).reshape({B, N, C});
}

}  // namespace vt::models
