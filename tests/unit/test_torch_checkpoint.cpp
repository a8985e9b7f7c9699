// PyTorch checkpoints: fixtures written by torch 1.13 (scripts/gen_torch_fixtures.py) read bit for bit like the
// same tensors in safetensors; training-checkpoint wrappers; refused globals; hostile bytes; our writer.
// scripts/check_torch_writer.py checks the other direction: torch.load(weights_only=True) of our files.
#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"
#include "core/error.h"
#include "io/atomic_file.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "io/zip_archive.h"
#include "io_temp_dir.h"

namespace vt::test {
namespace {

using namespace std::string_literals;

std::string ref(const std::string& name) { return std::string(VT_SOURCE_DIR) + "/tests/ref/" + name; }

std::string bytes_of(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
}

// Same names in the same order, same dtypes, shapes and bytes.
void expect_same_tensors(const io::NamedTensors& got, const io::NamedTensors& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const auto& [gn, g] = got[i];
    const auto& [wn, w] = want[i];
    EXPECT_EQ(gn, wn) << what;
    EXPECT_EQ(g.dtype(), w.dtype()) << what << ": " << gn;
    EXPECT_EQ(g.shape(), w.shape()) << what << ": " << gn;
    EXPECT_TRUE(g.device().is_cpu() && g.is_contiguous()) << what << ": " << gn;
    if (g.dtype() == w.dtype() && g.shape() == w.shape()) {
      EXPECT_EQ(bytes_of(g), bytes_of(w)) << what << ": " << gn;
    }
  }
}

io::NamedTensors reference_tensors() { return io::load_safetensors(ref("torch_state.safetensors")); }

TEST(TorchCheckpoint, StateDictEqualsTheSafetensorsCopyBitForBit) {
  const io::NamedTensors want = reference_tensors();
  ASSERT_EQ(want.size(), 16u);
  for (const char* file : {"torch_state.pth", "torch_state_legacy.pth", "torch_ddp.pth"}) {
    const io::TorchCheckpoint c = io::read_torch_checkpoint(ref(file));
    expect_same_tensors(c.tensors, want, file);
    EXPECT_EQ(c.source_key, "") << file;
    EXPECT_TRUE(c.other_keys.empty()) << file;
  }
  // Spot checks on what the conversion did: f16 -> f32, bool -> u8, a strided view with an offset.
  const io::TorchCheckpoint c = io::read_torch_checkpoint(ref("torch_state.pth"));
  EXPECT_EQ(c.tensors[3].first, "pos_embed");
  EXPECT_EQ(c.tensors[3].second.dtype(), DType::f32);
  EXPECT_EQ(c.tensors[14].first, "mask_bool");
  EXPECT_EQ(c.tensors[14].second.dtype(), DType::u8);
  EXPECT_EQ(c.tensors[4].second.shape(), (Shape{4, 3}));
}

TEST(TorchCheckpoint, PathAndBytesReadersAgree) {
  const std::string path = ref("torch_deit.pth");
  const io::TorchCheckpoint a = io::read_torch_checkpoint(path);
  const io::TorchCheckpoint b = io::read_torch_checkpoint_bytes(read_bytes(path), "deit");
  expect_same_tensors(a.tensors, b.tensors, "path vs bytes");
  EXPECT_EQ(a.other_keys, b.other_keys);
}

// EMA fixtures hold 2 * the weights (floating tensors), integer tensors unchanged.
void expect_twice(const io::NamedTensors& ema, const io::NamedTensors& w, const std::string& what) {
  ASSERT_EQ(ema.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_EQ(ema[i].first, w[i].first);
    const Tensor e = ema[i].second.to(DType::f64), x = w[i].second.to(DType::f64);
    const double factor = is_floating(w[i].second.dtype()) ? 2.0 : 1.0;
    for (int64_t k = 0; k < x.numel(); ++k)
      EXPECT_EQ(e.data<double>()[k], factor * x.data<double>()[k]) << what << ": " << w[i].first << "[" << k << "]";
  }
}

TEST(TorchCheckpoint, DeitWrapperPicksModelOrModelEma) {
  const io::NamedTensors want = reference_tensors();
  const io::TorchCheckpoint w = io::read_torch_checkpoint(ref("torch_deit.pth"));
  EXPECT_EQ(w.source_key, "model");
  expect_same_tensors(w.tensors, want, "deit model");
  EXPECT_EQ(w.other_keys,
            (std::vector<std::string>{"optimizer", "lr_scheduler", "epoch", "model_ema", "scaler", "args"}));
  const io::TorchCheckpoint e = io::read_torch_checkpoint(ref("torch_deit.pth"), io::TorchPick::ema);
  EXPECT_EQ(e.source_key, "model_ema");
  EXPECT_EQ(e.other_keys, (std::vector<std::string>{"model", "optimizer", "lr_scheduler", "epoch", "scaler", "args"}));
  expect_twice(e.tensors, w.tensors, "deit ema");
}

TEST(TorchCheckpoint, TimmWrapperPicksStateDictOrStateDictEma) {
  const io::TorchCheckpoint w = io::read_torch_checkpoint(ref("torch_timm_train.pth"));
  EXPECT_EQ(w.source_key, "state_dict");
  expect_same_tensors(w.tensors, reference_tensors(), "timm state_dict");
  const io::TorchCheckpoint e = io::read_torch_checkpoint(ref("torch_timm_train.pth"), io::TorchPick::ema);
  EXPECT_EQ(e.source_key, "state_dict_ema");
  expect_twice(e.tensors, w.tensors, "timm ema");
}

TEST(TorchCheckpoint, MissingEmaNamesTheFileAndItsKeys) {
  const std::string path = ref("torch_timm_noema.pth");
  EXPECT_EQ(io::read_torch_checkpoint(path).source_key, "state_dict");
  const std::string e = error_of([&] { io::read_torch_checkpoint(path, io::TorchPick::ema); });
  EXPECT_CONTAINS(e, path);
  EXPECT_CONTAINS(e, "model_ema");
  EXPECT_CONTAINS(e, "epoch, arch, state_dict, version, metric");
  // A bare state dict has no EMA either; asking for one is an error, not the weights.
  EXPECT_CONTAINS(error_of([&] { io::read_torch_checkpoint(ref("torch_state.pth"), io::TorchPick::ema); }),
                  "no EMA weights");
}

TEST(TorchCheckpoint, ForbiddenGlobalsAreRefusedByName) {
  for (const auto& [file, global] : std::vector<std::pair<std::string, std::string>>{
           {"torch_evil_os_system.pth", "os.system"},
           {"torch_evil_posix_system.pth", "posix.system"},
           {"torch_evil_builtins_eval.pth", "builtins.eval"},
           // pickle protocol 2 writes Python 3's subprocess under its Python 2 name, commands
           {"torch_evil_in_args.pth", "commands.check_output"}}) {
    const std::string e = error_of([&] { io::read_torch_checkpoint(ref(file)); });
    EXPECT_CONTAINS(e, "'" + global + "'");
    EXPECT_CONTAINS(e, ref(file));
    EXPECT_CONTAINS(e, "refusing");
  }
}

TEST(TorchCheckpoint, IsTorchCheckpointByMagicBytes) {
  EXPECT_TRUE(io::is_torch_checkpoint(ref("torch_state.pth")));
  EXPECT_TRUE(io::is_torch_checkpoint(ref("torch_state_legacy.pth")));
  EXPECT_FALSE(io::is_torch_checkpoint(ref("torch_state.safetensors")));
  EXPECT_FALSE(io::is_torch_checkpoint(ref("no_such_file.pth")));
}

TEST(TorchCheckpoint, WriterRoundTrip) {
  TempDir dir;
  const std::string path = dir.file("out.pth");
  io::NamedTensors src = reference_tensors();
  // A non-contiguous input is written contiguously.
  src.emplace_back("transposed", Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}).transpose(0, 1));
  io::save_torch_state_dict(path, src);
  EXPECT_TRUE(io::is_torch_checkpoint(path));
  const io::TorchCheckpoint back = io::read_torch_checkpoint(path);
  src.back().second = src.back().second.contiguous();
  expect_same_tensors(back.tensors, src, "round trip");
  EXPECT_EQ(back.source_key, "");
  // Every entry's data starts on a 64-byte boundary, as torch lays them out.
  const std::string bytes = read_bytes(path);
  for (const io::ZipEntry& e : io::read_stored_zip(bytes, path, "test"))
    EXPECT_EQ((e.data.data() - bytes.data()) % 64, 0) << e.name;
}

TEST(TorchCheckpoint, WriterRefusesBadNamesAndLeavesTheFileAlone) {
  TempDir dir;
  const std::string path = dir.file("out.pth");
  write_bytes(path, "old");
  const Tensor t = Tensor::zeros({2});
  EXPECT_CONTAINS(error_of([&] {
                    io::save_torch_state_dict(path, {{"a", t}, {"a", t}});
                  }),
                  "duplicate tensor name 'a'");
  EXPECT_CONTAINS(error_of([&] { io::save_torch_state_dict(path, {{"", t}}); }), "empty tensor name");
  EXPECT_CONTAINS(error_of([&] { io::save_torch_state_dict(path, {{"bad\xff", t}}); }), "not valid UTF-8");
  EXPECT_EQ(read_bytes(path), "old");
}

TEST(TorchCheckpoint, Zip64RecordsReadBack) {
  TempDir dir;
  const std::string path = dir.file("z.zip");
  {
    io::AtomicFile out(path);
    io::StoredZipWriter zip(out, /*force_zip64=*/true);
    zip.add("a/data.pkl", "pickle");
    zip.add("a/data/0", std::string(100, 'x'));
    zip.finish();
    out.commit();
  }
  const std::string bytes = read_bytes(path);
  const auto entries = io::read_stored_zip(bytes, path, "test");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "a/data.pkl");
  EXPECT_EQ(entries[0].data, "pickle");
  EXPECT_EQ(entries[1].data, std::string(100, 'x'));
}

// ---- hostile files ----

const std::string kLabel = "hostile.pth";

// Reads `bytes`; "" when it loads, else the error, which must be a vt::Error naming the file.
std::string outcome(const std::string& bytes, const std::string& what) {
  try {
    const io::TorchCheckpoint c = io::read_torch_checkpoint_bytes(bytes, kLabel);
    EXPECT_FALSE(c.tensors.empty()) << what;
    return "";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "[torch] " + kLabel) << what;
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": not a vt::Error: " << e.what();
    return e.what();
  }
}

TEST(TorchCheckpointHostile, EveryTruncationIsRejected) {
  for (const char* file : {"torch_state.pth", "torch_state_legacy.pth"}) {
    const std::string good = read_bytes(ref(file));
    ASSERT_EQ(outcome(good, "intact"), "");
    for (size_t cut = 0; cut < good.size(); ++cut)
      EXPECT_NE(outcome(good.substr(0, cut), "cut"), "") << file << " cut at " << cut << " of " << good.size();
  }
}

TEST(TorchCheckpointHostile, EveryFlippedByteGivesOneClearOutcome) {
  int rejected = 0, loaded = 0;
  for (const char* file : {"torch_state.pth", "torch_state_legacy.pth", "torch_deit.pth"}) {
    const std::string good = read_bytes(ref(file));
    for (size_t i = 0; i < good.size(); ++i) {
      std::string m = good;
      m[i] = static_cast<char>(m[i] ^ (1 << (i % 8)));
      outcome(m, std::string(file) + " flip at " + std::to_string(i)).empty() ? ++loaded : ++rejected;
    }
  }
  EXPECT_GT(rejected, 1000);
  std::printf("flipped bytes: %d rejected, %d still load\n", rejected, loaded);
}

// A torch archive around a hand-made pickle and storages (name -> bytes).
std::string archive(const std::string& pickle, const std::vector<std::pair<std::string, std::string>>& data = {}) {
  TempDir dir;
  const std::string path = dir.file("a.pth");
  io::AtomicFile out(path);
  io::StoredZipWriter zip(out);
  zip.add("archive/data.pkl", pickle);
  for (const auto& [k, v] : data) zip.add("archive/data/" + k, v);
  zip.finish();
  out.commit();
  return read_bytes(path);
}

// {'w': _rebuild_tensor_v2(storage('0', FloatStorage, numel), offset, size, stride, False, OrderedDict())}
std::string tensor_pickle(int numel, int offset, const std::string& size, const std::string& stride) {
  return "\x80\x02}X\x01\0\0\0wctorch._utils\n_rebuild_tensor_v2\n((X\x07\0\0\0storagectorch\n"s
         "FloatStorage\nX\x01\0\0\0"
         "0X\x03\0\0\0cpuK"s +
         static_cast<char>(numel) + "tQK" + static_cast<char>(offset) + size + stride +
         "\x89"
         "ccollections\nOrderedDict\n)RtRs.";
}

TEST(TorchCheckpointHostile, HandMadePicklesGiveClearErrors) {
  const std::string four_floats(16, '\0');
  // The well-formed version loads: a [2, 2] tensor with strides (2, 1).
  EXPECT_EQ(outcome(archive(tensor_pickle(4, 0, "K\x02K\x02\x86", "K\x02K\x01\x86"), {{"0", four_floats}}), "ok"), "");
  const std::vector<std::pair<std::string, std::string>> cases = {
      // view reads past its storage: offset 1 + (1*2 + 1*1) = element 4 of 4
      {archive(tensor_pickle(4, 1, "K\x02K\x02\x86", "K\x02K\x01\x86"), {{"0", four_floats}}),
       "of a 4-element storage"},
      // the storage's entry is shorter than numel says
      {archive(tensor_pickle(4, 0, "K\x02K\x02\x86", "K\x02K\x01\x86"), {{"0", std::string(12, '\0')}}),
       "has 12 bytes"},
      {archive(tensor_pickle(4, 0, "K\x02K\x02\x86", "K\x02K\x01\x86")), "no entry 'archive/data/0'"},
      // negative stride (BININT -1)
      {archive(tensor_pickle(4, 0, "K\x02K\x02\x86", "K\x02J\xff\xff\xff\xff\x86"), {{"0", four_floats}}),
       "negative size or stride"},
      // size and stride of different lengths
      {archive(tensor_pickle(4, 0, "K\x02K\x02\x86", "K\x01\x85"), {{"0", four_floats}}), "size has 2 dims, stride 1"},
      {archive("\x80\x02}(X\x01\0\0\0aK\x01iu."s), "INST"},
      {archive("\x80\x02]q\0h\0a."s), "holds a list"},  // a list that contains itself
      {archive("\x80\x02h\x05."s), "memo entry 5"},
      {archive(std::string("\x80\x02\x8b\xff\xff\xff\x7f", 7)), "the pickle ends early"},
      {archive("\x80\x02"s + std::string(100000, ']') + "."), "100000 values"},
      {archive("\x80\x02}."s), "no tensors"},
      {archive("\x80\x02}X\x05\0\0\0modelK\x01s."s), "'model' holds an int, not a state dict"},
      {archive("\x80\x09}."s), "pickle protocol 9"},
      {archive("\x80\x02"
               "ctorch\nload\nX\x01\0\0\0x\x85R."s),
       "'torch.load'"},
      {archive("\x80\x02"
               "cnumpy\nload\nX\x01\0\0\0x\x85R."s),
       "'numpy.load'"},
      {archive("\x80\x02}.junk"s), "bytes after the pickle's STOP"},
      {std::string("PK\3\4") + std::string(100, '\0'), "end-of-central-directory"},
      {"not a checkpoint at all"s, "not a PyTorch checkpoint"},
  };
  for (const auto& [bytes, needle] : cases) EXPECT_CONTAINS(outcome(bytes, needle), needle) << needle;
}

}  // namespace
}  // namespace vt::test
