// Run configuration: YAML sections mapped to plain structs with defaults. Key names follow timm's
// (drop_path_rate, opt_betas, warmup_lr, ...) so recipes translate one-to-one. The defaults are DeiT's ImageNet
// recipe (facebookresearch/deit main.py: DeiT-S, AdamW lr 5e-4 x global batch / 512 over a global batch of 1024,
// 300 epochs, 5 warm-up epochs, cosine stepped per epoch, RandAugment, Mixup/CutMix, erasing, repeated
// augmentation, drop path 0.1, EMA); the Fashion-MNIST demo's settings live in configs/fashion_mnist_vit.yaml.
// Unknown keys and wrongly typed values are errors naming file:line and the dotted key; validate() checks ranges
// once everything is merged.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace vt::io {

/// model.attention: which token mixer the transformer blocks use. Which fields matter depends on `type`.
/// validate() checks what the config alone decides; checks that need the token count N (m a perfect square,
/// k <= N, a square patch grid) run when the model is built (models::make_attention).
struct AttentionConfig {
  std::string type = "dense";             // dense | mita | mita_route | mita_compress | agent | agent_bias | linear |
                                          // flatten | inline | mhla | pola (the Table 2 linear-attention baselines) |
                                          // bra (BiFormer's bi-level routing attention)
  int64_t m = 25;                         // MiTA landmarks (experts); a perfect square for 2-D pooling
  int64_t k = 0;                          // keys per expert; 0 = default (m for mita, 2m for mita_route)
  int64_t s = 1;                          // experts each query is routed to
  bool dwc = false;                       // MiTA + DWC: depth-wise 3x3 conv on V's patch tokens, added before proj
  bool gate = false;                      // MiTA + DWC + Gate: qkvg projection, output * SiLU(g)
  std::string landmark_pool = "shifted";  // shifted (official: tokens 0..N-2) | patches (patch tokens only) |
                                          // sequence (all N tokens, 1-D: sequence models without CLS;
                                          // also Agent attention's agents there) |
                                          // random (m random patch tokens' queries, redrawn every forward)
  std::string shared_scale = "official";  // official (1/d on shared logits) | paper (1/sqrt(d))
  std::string impl = "fused";             // MiTA: fused (routing + joint-attention kernels) | reference (op by op)
  bool deterministic = false;             // MiTA fused backward without float atomics (same bits run to run)
  int64_t agent_num = 49;                 // Agent attention: number of agent tokens (a perfect square)
  int64_t n_win = 7;                      // BRA: regions per side of the patch map (must divide the grid side)
  int64_t topk = 16;                      // BRA: regions each region routes to (<= n_win²); 7 / 16 is BiFormer's
                                          // stage 3, which runs on a 14x14 map as DeiT at 224² does
  std::string bra_scale = "qk_dim";       // BRA's softmax scale: qk_dim (C^-1/2, the official module's default with
                                          // qk_dim = dim, as BiFormer trains) | head_dim (d^-1/2, dense attention's)
  void validate() const;
  /// One of the MiTA kinds: mita, mita_route (routed branch only), mita_compress (shared branch only).
  bool is_mita() const { return type == "mita" || type == "mita_route" || type == "mita_compress"; }
};

/// model.decoder: a segmentation head on the ViT's patch tokens (empty type: the classification head).
struct DecoderConfig {
  std::string type = "";   // "" (classification) | cbt (CBSA mask transformer, spec §5) | linear
  int64_t layers = 3;      // CBT: contract-and-broadcast layers
  int64_t heads = 3;       // CBT: heads per layer
  int64_t head_dim = 100;  // CBT: dims per head (inner = heads · head_dim)
  int64_t reps_grid = 10;  // CBT: representatives pooled to reps_grid × reps_grid
  void validate() const;
};

struct ModelConfig {
  std::string name = "deit_small_patch16_224";  ///< registry preset
  int img_size = 0;                             ///< 0: from the preset (and likewise below)
  int patch_size = 0;
  int in_chans = 0;
  int num_classes = 0;
  int embed_dim = 0;
  int depth = 0;      ///< 0: from the preset
  int num_heads = 0;  ///< 0: from the preset
  double mlp_ratio = 4.0;
  double drop_rate = 0.0;
  double drop_path_rate = 0.1;
  double layer_norm_eps = 1e-6;
  AttentionConfig attention;
  DecoderConfig decoder;
  /// Long Range Arena models (data.dataset: lra): "" (mean) | mean (over the non-padding tokens) | cls (a CLS token
  /// first, Nystromformer's append_cls). Other models pool as they do (the ViT: its CLS token) and refuse it.
  std::string pooling = "";
  /// timm --initial-checkpoint: timm-format safetensors to start from (segmentation: the backbone, pos_embed
  /// resized to the crop's grid, head dropped); "": random initialisation.
  std::string initial_checkpoint = "";
  void validate() const;
};

struct DataConfig {
  std::string dataset = "imagenet";  ///< imagenet | imagefolder (train/, val/ under data_dir) | fashion_mnist | ade20k
                                     ///< | lra (a Long Range Arena task, data.lra_task)
  std::string data_dir = "";         ///< the dataset folder; "" must be set before training (vitrain train DIR)
  double hflip = 0.5;                ///< probability of a horizontal flip during training
  int workers = 10;                  ///< loader threads
  int64_t max_bad_files = 100;       ///< unreadable images skipped (logged, counted in metrics); more stop the run
  int64_t max_image_pixels = 89478485;  ///< an image declaring more pixels is a bad file (Pillow's limit); 0: none
  int64_t train_limit = 0;  ///< 0: all training images (ImageFolder: N files evenly spaced over the classes)
  int64_t test_limit = 0;   ///< 0: all test images (likewise)
  // ImageNet-recipe augmentation (timm names), honoured for data.dataset: imagefolder (engine/imagenet_data);
  // engine::check_supported refuses them with fashion_mnist rather than ignoring them.
  double mixup = 0.8;                           ///< Mixup alpha; 0: off
  double cutmix = 1.0;                          ///< CutMix alpha; 0: off
  double mixup_prob = 1.0;                      ///< probability of applying mixup or cutmix to a batch
  double mixup_switch_prob = 0.5;               ///< probability of cutmix instead of mixup when both are on
  std::string mixup_mode = "batch";             ///< batch | pair | elem
  std::string aa = "rand-m9-mstd0.5-inc1";      ///< RandAugment spec; "": off
  double reprob = 0.25;                         ///< random erasing probability; 0: off
  std::string remode = "pixel";                 ///< const | rand | pixel
  int recount = 1;                              ///< random erasing count
  int aug_repeats = 3;                          ///< repeated augmentation (RASampler) repeats; 0: off
  std::string train_interpolation = "bicubic";  ///< bilinear | bicubic | random
  double crop_pct = 0.875;                      ///< eval resize = img_size / crop_pct, then center crop
  /// Normalisation on a 0-1 scale (timm --mean/--std); empty: the dataset's default (ImageNet's for images,
  /// ade20k: ImageNet's as mmseg; Segmenter/Table 4 configs set 0.5).
  std::vector<double> mean = {};
  std::vector<double> std = {};
  // Long Range Arena (data.dataset: lra; engine/sequence_task).
  std::string lra_task = "";  ///< "" | listops | text | retrieval | image | pathfinder
  /// Tokens per sequence: longer ones are truncated, shorter ones padded; 0: the task's LRA length (listops 2000,
  /// text and retrieval 4000, image and pathfinder 1024).
  int64_t max_length = 0;
  /// Optimizer updates that make one epoch, drawn from an endless stream of shuffled passes over the training
  /// split (LRA recipes count steps, not passes: epochs × updates_per_epoch = the recipe's steps, evaluating every
  /// epoch); 0: one pass (the last partial global batch carried into the next epoch).
  int64_t updates_per_epoch = 0;
  void validate() const;
};

struct OptimConfig {
  std::string opt = "adamw";
  double lr = 0.0;  ///< > 0: the learning rate as is (timm --lr); 0: lr_base scaled by the global batch
  double weight_decay = 0.05;
  double momentum = 0.9;  ///< SGD only
  double opt_eps = 1e-8;
  std::vector<double> opt_betas = {0.9, 0.999};
  double clip_grad = 0.0;  ///< max global grad norm; 0: off
  double smoothing = 0.1;  ///< label smoothing
  /// LR scaling rule (timm --lr-base), used when optim.lr is 0:
  /// lr = lr_base · (global_batch / lr_base_size) for "linear" (DeiT: 5e-4 · batch / 512) or the square root of
  /// that ratio for "sqrt". global_batch = train.batch_size · train.grad_accum_steps · processes.
  double lr_base = 5e-4;
  int lr_base_size = 512;
  std::string lr_base_scale = "linear";  ///< linear | sqrt
  void validate() const;
};

struct ScheduleConfig {
  std::string sched = "cosine";  ///< cosine | poly (lr = (base - min)·(1 - t/T)^poly_power + min, mmseg/Segmenter)
  double poly_power = 0.9;
  double warmup_epochs = 5.0;  ///< may be fractional with sched_on_updates
  double warmup_lr = 1e-6;
  double min_lr = 1e-5;
  /// true: the LR changes every optimizer update (warmup and cosine in updates). false: once per epoch.
  bool sched_on_updates = false;
  /// true: the cosine starts after the warmup (t - warmup); false: it is evaluated at t itself (timm 0.4.12,
  /// DeiT), the warmup only replacing its start.
  bool warmup_prefix = false;
  /// Per-epoch only: epoch e ≥ 1 uses lr(e - 1), as DeiT's `lr_scheduler.step(epoch)` after each epoch does
  /// (epochs 0 and 1 both run at warmup_lr). false: epoch e uses lr(e) (timm train.py).
  bool deit_epoch_lag = true;
  void validate() const;
};

struct TrainConfig {
  int epochs = 300;
  /// Images per process and step (timm's -b). 0: global_batch_size / (processes × grad_accum_steps).
  int batch_size = 0;
  /// Images per optimizer update over all processes, divided over them and the accumulation steps when the run
  /// starts (engine::resolve_for_world); 0: batch_size per process, whatever the number of processes.
  /// With both set, batch_size × grad_accum_steps × processes must equal it.
  int global_batch_size = 1024;
  int64_t seed = 0;
  std::string device = "auto";         ///< "auto" (cuda:0 if a GPU is usable, else cpu), "cpu", "cuda" or "cuda:N"
  bool amp = true;                     ///< mixed precision on CUDA (timm's --amp); the CPU always computes in f32
  std::string amp_dtype = "bfloat16";  ///< the autocast dtype; only bfloat16 (no loss scaling for float16)
  int threads = 0;                     ///< CPU threads; 0: all cores
  std::string output = "output/train";
  int log_interval = 50;     ///< steps between progress lines
  int grad_accum_steps = 1;  ///< micro-batches per optimizer update (timm --grad-accum-steps)
  int64_t max_steps =
      0;  ///< stop after this many optimizer updates in total (a recovery checkpoint is written); 0: off
  std::string resume = "";        ///< "" | checkpoint path | "auto" (the newest of last / recovery in train.output)
  int checkpoint_interval = 1;    ///< epochs between checkpoint-<epoch> files; 0: none (last and best are always kept)
  int checkpoint_hist = 10;       ///< how many checkpoint-<epoch> files to keep (the newest)
  int64_t recovery_interval = 0;  ///< optimizer updates between recovery checkpoints; 0: off
  double recovery_minutes = 30;   ///< a recovery checkpoint once this long has passed since the last checkpoint; 0: off
  bool model_ema = true;          ///< keep an EMA of the weights (timm ModelEmaV2), updated every update
  double model_ema_decay = 0.99996;
  /// CUDA: capture the training step in a CUDA graph after two eager steps and replay it (one process,
  /// grad_accum_steps 1, equal batch shapes; engine/graph_step.h). Ignored on the CPU.
  bool cuda_graph = false;
  void validate() const;
};

struct EvalConfig {
  int batch_size = 256;
  int interval = 1;                  ///< epochs between evaluations (the last epoch is always evaluated)
  std::string best_metric = "top1";  ///< top1 (DeiT: the raw model) | ema_top1 (timm with EMA) | loss | ema_loss
                                     ///< | miou (segmentation); LRA: of the validation split
  // Segmentation (model.decoder set): Segmenter's sliding-window protocol.
  int seg_short_side = 512;  ///< resize so the short side is this (keep ratio) ...
  int seg_long_side = 2048;  ///< ... unless the long side would exceed this
  int seg_stride = 0;        ///< window stride; 0: crop − 32 (Segmenter's miou.py; window = model.img_size)
  std::vector<double> seg_scales = {1.0};  ///< multi-scale ratios (ms: 0.5, 0.75, 1.0, 1.25, 1.5, 1.75)
  bool seg_flip = false;                   ///< also average the horizontally flipped prediction
  void validate() const;
};

/// Data-parallel training (several processes, one per GPU; see dist/data_parallel.h). Ignored in a single process.
struct DistConfig {
  double bucket_mb = 25.0;  ///< gradient bucket size in MiB (torch DDP's bucket_cap_mb)
  bool zero1 = false;       ///< ZeRO-1: shard the optimizer update and state across ranks (AdamW only)
  void validate() const;
};

struct Config {
  ModelConfig model;
  DataConfig data;
  OptimConfig optim;
  ScheduleConfig schedule;
  TrainConfig train;
  EvalConfig eval;
  DistConfig dist;
  /// Validates every section; throws vt::Error "[config] optim.lr must be > 0, got -1" on the first violation.
  void validate() const;
};

/// Reads a YAML file — ours, or timm's flat args.yaml (io/timm_args.h) — applies `overrides` ("optim.lr=1e-3",
/// see apply_override) in order, then validates.
/// Throws vt::Error naming the path when the file cannot be read, and file:line + dotted key for unknown keys,
/// wrong types or YAML syntax errors.
/// `named` overrides come first, each {source for errors (e.g. "--lr 5e-4"), "optim.lr=5e-4"}.
Config load_config(const std::string& path, const std::vector<std::string>& overrides = {},
                   const std::vector<std::pair<std::string, std::string>>& named = {});

/// Same as load_config for YAML text; `source_name` stands in for the file name in error messages.
Config config_from_yaml_string(const std::string& text, const std::string& source_name = "<string>");

/// Applies one `--set` override "section.key=value" (e.g. "model.attention.type=dense",
/// "optim.opt_betas=[0.9, 0.99]"); the value is parsed as YAML. Does not validate, so several overrides can be
/// applied before one cfg.validate() (an intermediate state such as img_size=32 with patch_size=7 is fine).
void apply_override(Config& cfg, const std::string& key_eq_value);

/// apply_override, with errors naming `source_name` (e.g. "--lr 5e-4", "args.yaml: optim.lr=0.1") instead of
/// "--set KEY=VALUE".
void apply_override_from(Config& cfg, const std::string& key_eq_value, const std::string& source_name);

/// The resolved config as YAML; config_from_yaml_string(to_yaml(c)) reproduces c exactly.
std::string to_yaml(const Config& cfg);

/// The value of one dotted key ("optim.lr") as YAML text ("0.001"); throws naming an unknown key.
std::string config_value_yaml(const Config& cfg, const std::string& dotted_key);

}  // namespace vt::io
