// Per-tensor checksums of our safetensors files: a flipped data byte or header byte of a saved file (weights or
// training checkpoint) is an error naming the file and the tensor; a flipped metadata byte (a checkpoint's update
// count) is an error naming the file; files without checksums, or without the metadata's, load as before.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "test_util.h"
#include "core/error.h"
#include "engine/checkpoint.h"
#include "io/safetensors.h"
#include "io_temp_dir.h"

namespace vt::test {
namespace {

uint64_t header_length(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  return n;
}

io::NamedTensors small_model() {
  return {{"blocks.1.attn.dwc.weight", Tensor::from_vector({0.5, -1, 2, 3, 4, 5}, {2, 1, 3}, DType::f32)},
          {"blocks.1.attn.dwc.bias", Tensor::from_vector({7, 8}, {2}, DType::f32)},
          {"head.weight", Tensor::from_vector({1, 2, 3, 4}, {2, 2}, DType::bf16)},
          {"step", Tensor::from_vector({9}, {}, DType::i64)}};
}

// The tensor whose data holds byte `at` of the file (offsets read back from the file itself).
std::string tensor_at(const std::string& path, size_t at) {
  const std::string bytes = read_bytes(path);
  const size_t data_start = 8 + header_length(bytes);
  size_t pos = data_start;
  for (const auto& [name, t] : io::read_safetensors(path).tensors) {
    const size_t n = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    if (at >= pos && at < pos + n) return name;
    pos += n;
  }
  return "";
}

std::string flipped(std::string bytes, size_t at) {
  bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
  return bytes;
}

std::string replaced(std::string bytes, const std::string& from, const std::string& to) {
  const size_t at = bytes.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) bytes.replace(at, from.size(), to);
  return bytes;
}

TEST(TensorChecksums, EveryFlippedDataByteNamesTheFileAndTheTensor) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors"), bad = dir.file("bad.safetensors");
  io::save_safetensors(path, small_model());
  const std::string good = read_bytes(path);
  for (size_t i = 8 + header_length(good); i < good.size(); ++i) {
    SCOPED_TRACE(i);
    write_bytes(bad, flipped(good, i));
    const std::string err = error_of([&] { io::read_safetensors(bad); });
    EXPECT_CONTAINS(err, "[safetensors] " + bad);
    EXPECT_CONTAINS(err, "tensor '" + tensor_at(path, i) + "': checksum mismatch");
  }
}

// `bytes` with its JSON header replaced by `header` (re-padded, length prefix rewritten).
std::string with_header(const std::string& bytes, std::string header) {
  const std::string data = bytes.substr(8 + header_length(bytes));
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return len + header + data;
}

TEST(TensorChecksums, EveryFlippedHeaderByteIsAnErrorNamingTheFile) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors"), bad = dir.file("bad.safetensors");
  io::save_safetensors(path, small_model(), {{"format", "pt"}, {"global_step", "75"}});
  const std::string good = read_bytes(path);
  for (size_t i = 0; i < 8 + header_length(good); ++i) {
    SCOPED_TRACE(i);
    write_bytes(bad, flipped(good, i));
    EXPECT_CONTAINS(error_of([&] { io::read_safetensors(bad); }), "[safetensors] " + bad);
  }
  // One digit of an update count: the tensors are intact, the metadata is not.
  write_bytes(bad, replaced(good, "\"global_step\":\"75\"", "\"global_step\":\"35\""));
  EXPECT_CONTAINS(error_of([&] { io::read_safetensors(bad); }),
                  "[safetensors] " + bad + ": __metadata__ checksum mismatch");
}

TEST(TensorChecksums, DamagedCheckpointPositionIsAnErrorNamingTheFile) {
  TempDir dir;
  const std::string path = dir.file("recovery.safetensors");
  engine::Checkpoint ckpt;
  ckpt.model = small_model();
  ckpt.state.position.global_step = 75;
  ckpt.state.config_yaml = "model:\n  name: deit_tiny_patch16_224\n";
  engine::save_checkpoint(path, ckpt);
  write_bytes(path, replaced(read_bytes(path), "\"global_step\":\"75\"", "\"global_step\":\"35\""));
  const std::string err = error_of([&] { engine::load_checkpoint(path); });
  EXPECT_CONTAINS(err, path);
  EXPECT_CONTAINS(err, "__metadata__ checksum mismatch");
}

TEST(TensorChecksums, ATableWithoutTheMetadataEntryChecksTheTensorsOnly) {
  // As written before the metadata had a checksum: only the tensors' entries in the table.
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  io::save_safetensors(path, small_model(), {{"format", "pt"}});
  const std::string good = read_bytes(path);
  std::string header = good.substr(8, header_length(good));
  const size_t at = header.find("\\\"__metadata__\\\":\\\"");
  ASSERT_NE(at, std::string::npos) << header;
  header.erase(at, header.find(',', at) + 1 - at);
  header = replaced(header, "\"format\":\"pt\"", "\"format\":\"px\"");
  write_bytes(path, with_header(good, header));
  const io::SafetensorsFile f = io::read_safetensors(path);
  EXPECT_EQ(f.tensors.size(), small_model().size());
  EXPECT_EQ(f.metadata.at("format"), "px");
  write_bytes(path, with_header(good, replaced(header, "\"dtype\":\"F32\"", "\"dtype\":\"I32\"")));
  EXPECT_CONTAINS(error_of([&] { io::read_safetensors(path); }), "checksum mismatch");
}

TEST(TensorChecksums, AFlippedHeaderByteNeverChangesWhatLoads) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors"), bad = dir.file("bad.safetensors");
  io::save_safetensors(path, small_model(), {{"format", "pt"}});
  const std::string good = read_bytes(path);
  const io::NamedTensors want = io::read_safetensors(path).tensors;
  int rejected = 0;
  for (size_t i = 0; i < 8 + header_length(good); ++i) {
    SCOPED_TRACE(i);
    write_bytes(bad, flipped(good, i));
    try {
      const io::NamedTensors got = io::read_safetensors(bad).tensors;  // e.g. a byte of the "format" value
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(got[k].first, want[k].first);
        EXPECT_EQ(got[k].second.dtype(), want[k].second.dtype());
        EXPECT_EQ(got[k].second.shape(), want[k].second.shape());
        EXPECT_EQ(got[k].second.to_vector(), want[k].second.to_vector());
      }
    } catch (const Error& e) {
      EXPECT_CONTAINS(e.what(), "[safetensors] " + bad);
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 100);
}

TEST(TensorChecksums, RenamedRetypedOrUncheckedTensorsAreErrorsNamingThem) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors"), bad = dir.file("bad.safetensors");
  io::save_safetensors(path, small_model());
  const std::string good = read_bytes(path);
  // One header byte renames the tensor (in its entry, or in the checksum table).
  write_bytes(bad, replaced(good, "\"blocks.1.attn.dwc.weight\":{", "\"blocks.1.attn.dwc.weighu\":{"));
  std::string err = error_of([&] { io::read_safetensors(bad); });
  EXPECT_CONTAINS(err, "[safetensors] " + bad);
  EXPECT_CONTAINS(err, "blocks.1.attn.dwc.weigh");
  write_bytes(bad, replaced(good, "\\\"blocks.1.attn.dwc.weight\\\"", "\\\"blocks.1.attn.dwc.weighu\\\""));
  EXPECT_CONTAINS(error_of([&] { io::read_safetensors(bad); }), "tensor 'blocks.1.attn.dwc.weight' has no checksum");
  // F32 -> I32 keeps the byte count; the checksum covers the dtype.
  write_bytes(bad, replaced(good, "\"dtype\":\"F32\"", "\"dtype\":\"I32\""));
  EXPECT_CONTAINS(error_of([&] { io::read_safetensors(bad); }), "checksum mismatch");
  // A damaged key must not switch the check off.
  write_bytes(bad, replaced(good, "\"vitrain.crc32\"", "\"vitrain.crc31\""));
  EXPECT_CONTAINS(error_of([&] { io::read_safetensors(bad); }), "'vitrain.crc31' is one byte off 'vitrain.crc32'");
}

TEST(TensorChecksums, FilesWithoutChecksumsLoadAsBefore) {
  // As timm / Hugging Face write them: tensors and a "format" entry, no checksums.
  TempDir dir;
  const std::string path = dir.file("timm.safetensors");
  std::string header = R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  const float w[2] = {1.5f, -2.0f};
  write_bytes(path, len + header + std::string(reinterpret_cast<const char*>(w), sizeof w));
  const io::SafetensorsFile f = io::read_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.tensors[0].second.to_vector(), (std::vector<double>{1.5, -2.0}));
  EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
}

TEST(TensorChecksums, ChecksumsStayOutOfTheMetadataReadBack) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  io::save_safetensors(path, small_model(), {{"format", "pt"}});
  EXPECT_NE(read_bytes(path).find("\"vitrain.crc32\":"), std::string::npos);
  // What the reader returns is what the caller wrote, so re-saving it (convert) writes fresh checksums.
  const io::SafetensorsFile f = io::read_safetensors(path);
  EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  io::save_safetensors(path, f.tensors, f.metadata);
  EXPECT_EQ(io::read_safetensors(path).tensors.size(), small_model().size());
}

TEST(TensorChecksums, DamagedTrainingCheckpointNamesTheFileAndTheTensor) {
  TempDir dir;
  const std::string path = dir.file("last.safetensors");
  engine::Checkpoint ckpt;
  ckpt.model = small_model();
  ckpt.optimizer = {{"exp_avg.0", Tensor::from_vector({0.25, 0.5}, {2}, DType::f32)}};
  ckpt.state.config_yaml = "model:\n  name: deit_tiny_patch16_224\n";
  engine::save_checkpoint(path, ckpt);
  const std::string good = read_bytes(path);
  const std::string name = tensor_at(path, good.size() - 1);
  ASSERT_FALSE(name.empty());
  write_bytes(path, flipped(good, good.size() - 1));
  std::string err = error_of([&] { engine::load_checkpoint(path); });
  EXPECT_CONTAINS(err, "'" + path + "'");
  EXPECT_CONTAINS(err, "tensor '" + name + "': checksum mismatch");
  write_bytes(path, replaced(good, "\"blocks.1.attn.dwc.weight\":{", "\"blocks.1.attn.dwc.weighu\":{"));
  err = error_of([&] { engine::load_checkpoint(path); });
  EXPECT_CONTAINS(err, "'" + path + "'");
  EXPECT_CONTAINS(err, "blocks.1.attn.dwc.weigh");
}

}  // namespace
}  // namespace vt::test
