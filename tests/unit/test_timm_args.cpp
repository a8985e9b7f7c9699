// timm's args.yaml and flag table (io/timm_args), the global batch resolved for a world size (engine/recipe), and
// the --set hints that name timm's keys.
#include <gtest/gtest.h>

#include "test_util.h"
#include "engine/recipe.h"
#include "io/config.h"
#include "io/timm_args.h"
#include "io_temp_dir.h"
#include "training_runs.h"

namespace vt::test {
namespace {

// An args.yaml as timm's train.py writes it (yaml.safe_dump of its argparse namespace, sorted keys): DeiT-S with
// the DeiT recipe, every other key at timm's default.
const char* kTimmArgs = R"(aa: rand-m9-mstd0.5-inc1
amp: true
amp_dtype: float16
apex_amp: false
aug_repeats: 3.0
aug_splits: 0
batch_size: 256
bce_loss: false
bce_target_thresh: null
bn_eps: null
bn_momentum: null
channels_last: false
checkpoint_hist: 10
class_map: ''
clip_grad: null
clip_mode: norm
color_jitter: 0.4
cooldown_epochs: 0
crop_pct: null
cutmix: 1.0
cutmix_minmax: null
data_dir: /data/imagenet
dataset: ''
dataset_download: false
decay_epochs: 90
decay_milestones:
- 90
- 180
- 270
decay_rate: 0.1
dist_bn: reduce
drop: 0.0
drop_block: null
drop_connect: null
drop_path: 0.1
epoch_repeats: 0.0
epochs: 300
eval_metric: top1
experiment: deit_s
fuser: ''
gp: null
grad_accum_steps: 1
grad_checkpointing: false
hflip: 0.5
img_size: null
initial_checkpoint: ''
input_size: null
interpolation: ''
jsd_loss: false
layer_decay: null
local_rank: 0
log_interval: 50
log_wandb: false
lr: 0.001
lr_base: 0.1
lr_base_scale: ''
lr_base_size: 256
lr_cycle_decay: 0.5
lr_cycle_limit: 1
lr_cycle_mul: 1.0
lr_k_decay: 1.0
lr_noise: null
lr_noise_pct: 0.67
lr_noise_std: 1.0
mean: null
min_lr: 1.0e-05
mixup: 0.8
mixup_mode: batch
mixup_off_epoch: 0
mixup_prob: 1.0
mixup_switch_prob: 0.5
model: deit_small_patch16_224
model_ema: true
model_ema_decay: 0.99996
model_ema_force_cpu: false
momentum: 0.9
no_aug: false
no_ddp_bb: false
no_prefetcher: false
no_resume_opt: false
num_classes: 1000
opt: adamw
opt_betas: null
opt_eps: null
output: /runs
patience_epochs: 10
pin_mem: false
pretrained: false
ratio:
- 0.75
- 1.3333333333333333
recount: 1
recovery_interval: 0
remode: pixel
reprob: 0.25
resplit: false
resume: ''
save_images: false
scale:
- 0.08
- 1.0
sched: cosine
sched_on_updates: false
seed: 0
smoothing: 0.1
split_bn: false
start_epoch: null
std: null
sync_bn: false
torchcompile: null
torchscript: false
train_interpolation: bicubic
train_split: train
tta: 0
use_multi_epochs_loader: false
val_split: validation
validation_batch_size: null
vflip: 0.0
warmup_epochs: 5
warmup_lr: 1.0e-06
warmup_prefix: false
weight_decay: 0.05
worker_seeding: all
workers: 10
)";

// The same run as --set overrides of our keys (what each timm key means here).
// clang-format off
const std::vector<std::string> kTwin = {
    "schedule.deit_epoch_lag=false", "data.aa=rand-m9-mstd0.5-inc1", "train.amp=true", "data.aug_repeats=3",
    "train.batch_size=256", "train.global_batch_size=0", "train.checkpoint_hist=10", "optim.clip_grad=0",
    "data.cutmix=1.0", "data.data_dir=/data/imagenet", "model.drop_rate=0", "model.drop_path_rate=0.1",
    "train.epochs=300", "eval.best_metric=top1", "train.grad_accum_steps=1", "data.hflip=0.5", "model.img_size=0",
    "model.initial_checkpoint=''", "train.log_interval=50", "optim.lr=0.001", "optim.lr_base=0.1",
    "optim.lr_base_scale=sqrt", "optim.lr_base_size=256", "data.mean=[]", "schedule.min_lr=1e-5", "data.mixup=0.8",
    "data.mixup_mode=batch", "data.mixup_prob=1.0", "data.mixup_switch_prob=0.5", "model.name=deit_small_patch16_224",
    "train.model_ema=true", "train.model_ema_decay=0.99996", "optim.momentum=0.9", "model.num_classes=1000",
    "optim.opt=adamw", "data.recount=1", "train.recovery_interval=0", "data.remode=pixel", "data.reprob=0.25",
    "train.resume=''", "schedule.sched=cosine", "schedule.sched_on_updates=false", "train.seed=0",
    "optim.smoothing=0.1", "data.std=[]", "data.train_interpolation=bicubic", "schedule.warmup_epochs=5",
    "schedule.warmup_lr=1e-6", "schedule.warmup_prefix=false", "optim.weight_decay=0.05", "data.workers=10",
    "train.output=/runs/deit_s"};
// clang-format on

io::Config twin() {
  io::Config c;
  for (const auto& s : kTwin) io::apply_override(c, s);
  c.validate();
  return c;
}

TEST(TimmArgs, ArgsYamlResolvesToTheSameConfigAsItsSetTwin) {
  TempDir dir;
  write_bytes(dir.file("args.yaml"), kTimmArgs);
  const io::Config from_timm = io::load_config(dir.file("args.yaml"));
  EXPECT_EQ(io::to_yaml(from_timm), io::to_yaml(twin()));
  EXPECT_EQ(from_timm.train.output, "/runs/deit_s");  // --output /runs --experiment deit_s
  EXPECT_EQ(from_timm.optim.lr, 0.001);               // --lr given: used as is, as timm does
}

TEST(TimmArgs, TheArgsYamlWeWriteReadsBackToTheKeysTimmHas) {
  TempDir dir;
  io::Config c = twin();
  c.optim.lr = 0;  // scaled from lr_base
  c.data.mean = {0.5, 0.5, 0.5};
  write_bytes(dir.file("args.yaml"), io::to_timm_args_yaml(c));
  const io::Config back = io::load_config(dir.file("args.yaml"));
  for (const io::TimmFlag& f : io::timm_flags())
    EXPECT_EQ(io::config_value_yaml(back, f.key), io::config_value_yaml(c, f.key)) << f.key;
}

TEST(TimmArgs, EveryRunWritesItsArgsYamlBesideConfigYaml) {
  if (!std::filesystem::exists(fmnist_dir())) GTEST_SKIP() << "Fashion-MNIST not installed";
  TempDir dir;
  io::Config cfg = tiny_training_config(dir.file("run"));
  cfg.train.epochs = 1;
  engine::train(cfg);
  const io::Config resolved = io::load_config(dir.file("run/config.yaml"));
  const io::Config from_args = io::load_config(dir.file("run/args.yaml"));
  for (const io::TimmFlag& f : io::timm_flags())
    EXPECT_EQ(io::config_value_yaml(from_args, f.key), io::config_value_yaml(resolved, f.key)) << f.key;
  EXPECT_EQ(from_args.train.batch_size, 16);
}

TEST(TimmArgs, KeysWeCannotHonourAreErrorsNamingTheFileAndKey) {
  TempDir dir;
  auto error_for = [&](const std::string& from, const std::string& to) {
    std::string text = kTimmArgs;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    write_bytes(dir.file("args.yaml"), text);
    return error_of([&] { io::load_config(dir.file("args.yaml")); });
  };
  std::string e = error_for("cooldown_epochs: 0\n", "cooldown_epochs: 10\n");
  EXPECT_CONTAINS(e, dir.file("args.yaml") + ":");
  EXPECT_CONTAINS(e, "'cooldown_epochs: 10' cannot be honoured");
  EXPECT_CONTAINS(error_for("pretrained: false", "pretrained: true"), "'pretrained: true' cannot be honoured");
  EXPECT_CONTAINS(error_for("vflip: 0.0", "vflip: 0.5"), "'vflip: 0.5'");
  EXPECT_CONTAINS(error_for("aa: rand-m9-mstd0.5-inc1\n", "aa: null\n"), "color_jitter");  // jitter 0.4 without RA
  EXPECT_CONTAINS(error_for("tta: 0\n", "tta: 0\nfrobnicate: 3\n"), "'frobnicate' is not a key of timm's args.yaml");
  // Harmless keys take any value; a mapped key is checked like ours.
  EXPECT_EQ(error_for("pin_mem: false", "pin_mem: true"), "(no error thrown)");
  EXPECT_CONTAINS(error_for("epochs: 300", "epochs: many"), "'train.epochs' expects an integer");
}

TEST(TimmArgs, TellsTimmsFlatFileFromOurSections) {
  EXPECT_TRUE(io::is_timm_args_yaml(kTimmArgs));
  EXPECT_TRUE(io::is_timm_args_yaml("model: deit_tiny_patch16_224\n"));
  EXPECT_FALSE(io::is_timm_args_yaml("model:\n  name: vit_micro\n"));
  EXPECT_FALSE(io::is_timm_args_yaml("model:\neval:\n"));  // empty sections keep the defaults
  EXPECT_FALSE(io::is_timm_args_yaml(""));
}

TEST(TimmArgs, FlagOverridesAndOutputFolder) {
  const io::TimmFlag* b = io::find_timm_flag("-b");
  EXPECT_EQ(b, nullptr);  // looked up by long name or dest
  b = io::find_timm_flag("--batch-size");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(io::timm_flag_overrides(*b, {"256"}),
            (std::vector<std::string>{"train.batch_size=256", "train.global_batch_size=0"}));
  const io::TimmFlag* betas = io::find_timm_flag("opt_betas");
  ASSERT_NE(betas, nullptr);
  EXPECT_EQ(io::timm_flag_overrides(*betas, {"0.9", "0.99"}),
            (std::vector<std::string>{"optim.opt_betas=[0.9, 0.99]"}));
  const io::TimmFlag* ema = io::find_timm_flag("--model-ema");
  ASSERT_NE(ema, nullptr);
  EXPECT_EQ(io::timm_flag_overrides(*ema, {}), (std::vector<std::string>{"train.model_ema=true"}));
  EXPECT_EQ(io::timm_output_dir("/runs", "a"), "/runs/a");
  EXPECT_EQ(io::timm_output_dir("", "a"), "output/train/a");
  EXPECT_EQ(io::timm_output_dir("/runs", ""), "/runs");
  EXPECT_TRUE(io::is_unsupported_timm_flag("--channels-last"));
  EXPECT_FALSE(io::is_unsupported_timm_flag("--lr"));
}

TEST(TimmArgs, SetHintsNameTheKeyOfTimmsName) {
  io::Config c;
  EXPECT_CONTAINS(error_of([&] { io::apply_override(c, "lr=1e-3"); }), "did you mean 'optim.lr'?");
  EXPECT_CONTAINS(error_of([&] { io::apply_override(c, "model.drop_path=0.1"); }),
                  "did you mean 'model.drop_path_rate'?");
  EXPECT_CONTAINS(error_of([&] { io::apply_override(c, "optim.lrr=1"); }), "did you mean 'optim.lr'?");
}

TEST(TimmArgs, UserErrorsCarryNoSourcePosition) {
  io::Config c;
  try {
    io::apply_override(c, "optim.lr=abc");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find(".cpp:"), std::string::npos) << e.what();
    EXPECT_CONTAINS(e.where(), "config.cpp:");  // kept for logs and debugging
  }
}

TEST(GlobalBatch, DividedOverProcessesAndAccumulation) {
  io::Config c;  // DeiT: global batch 1024, lr 5e-4 x 1024 / 512
  for (const auto& [world, accum, per] :
       std::vector<std::tuple<int, int, int>>{{1, 1, 1024}, {8, 1, 128}, {2, 4, 128}}) {
    c.train.grad_accum_steps = accum;
    const io::Config r = engine::resolve_for_world(c, world);
    EXPECT_EQ(r.train.batch_size, per);
    EXPECT_EQ(engine::global_batch(r, world), 1024);
    EXPECT_DOUBLE_EQ(engine::resolved_lr(r, world), 1e-3);
    EXPECT_EQ(
        engine::describe_batch_and_lr(r, world).rfind("global batch 1024 = " + std::to_string(per) + " per GPU", 0),
        0u);
  }
  c.train.grad_accum_steps = 1;
  EXPECT_CONTAINS(error_of([&] { engine::resolve_for_world(c, 3); }), "train.global_batch_size 1024 does not divide");
  c.train.batch_size = 256;  // explicit and agreeing on 4 processes, disagreeing on 8
  EXPECT_EQ(engine::resolve_for_world(c, 4).train.batch_size, 256);
  EXPECT_CONTAINS(error_of([&] { engine::resolve_for_world(c, 8); }),
                  "train.batch_size 256 per process disagrees with train.global_batch_size 1024");
  c.train.global_batch_size = 0;  // timm's -b: per process, the global batch grows with the processes
  const io::Config r = engine::resolve_for_world(c, 8);
  EXPECT_EQ(engine::global_batch(r, 8), 2048);
  EXPECT_DOUBLE_EQ(engine::resolved_lr(r, 8), 2e-3);
}

}  // namespace
}  // namespace vt::test
