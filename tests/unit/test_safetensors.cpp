// safetensors: round trip of every dtype (0-dim, empty, non-contiguous), the byte layout of the header, files
// written by hand as another implementation would, and corrupt files that must fail naming file and tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "test_util.h"
#include "core/error.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "io_temp_dir.h"

namespace vt::test {
namespace {

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

uint64_t read_le64(const std::string& s) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

std::string f32_bytes(std::initializer_list<float> vals) {
  std::string s;
  for (float f : vals) s.append(reinterpret_cast<const char*>(&f), 4);
  return s;
}

std::vector<double> iota_values(int n, double scale, double shift) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = i * scale + shift;
  return v;
}

TEST(Safetensors, RoundTripsEveryDtypeScalarsEmptyAndViews) {
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  io::NamedTensors in = {
      {"w_f32", Tensor::from_vector(iota_values(35, 0.37, -5.25), {7, 5}, DType::f32)},
      {"w_f64", Tensor::from_vector({0.1, -1e300, 3.5, 1e-310, -0.0, 42}, {3, 2}, DType::f64)},
      {"bf", Tensor::from_vector({1.5, -2.25, 3.0, 0.0078125, 256, -65536}, {2, 3}, DType::bf16)},
      {"ids", Tensor::from_vector({-3, 0, 2147483647, -2147483648.0}, {2, 2}, DType::i32)},
      {"big", Tensor::from_vector({1e15, -5, 0}, {3}, DType::i64)},
      {"bytes", Tensor::from_vector({0, 255, 128, 7, 9}, {5}, DType::u8)},
      {"scalar", Tensor::scalar(3.25, DType::f32)},
      {"empty", Tensor::zeros({0, 3}, DType::f64)},
      {"t_view", Tensor::from_vector(iota_values(12, 1.0, 0.5), {3, 4}, DType::f32).transpose(0, 1)},
      {"sliced", Tensor::from_vector(iota_values(10, 2.0, 1.0), {10}, DType::i64).slice(0, 3, 9, 2)},
  };
  io::save_safetensors(path, in, {{"format", "pt"}, {"note", "quote\" and \\ and \n"}});
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  io::SafetensorsFile out = io::read_safetensors(path);
  EXPECT_EQ(out.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"note", "quote\" and \\ and \n"}}));
  // File order: descending alignment (8, 4, 2, 1 bytes), then name.
  std::vector<std::string> names;
  for (const auto& [n, t] : out.tensors) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"big", "empty", "sliced", "w_f64", "ids", "scalar", "t_view", "w_f32",
                                             "bf", "bytes"}));
  std::map<std::string, Tensor> got(out.tensors.begin(), out.tensors.end());
  for (const auto& [name, t] : in) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(got.count(name));
    const Tensor& g = got[name];
    EXPECT_EQ(g.dtype(), t.dtype());
    EXPECT_EQ(g.shape(), t.shape());
    EXPECT_TRUE(g.is_contiguous());
    std::vector<double> a = t.to_vector(), b = g.to_vector();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(std::memcmp(&a[i], &b[i], sizeof(double)), 0) << i;
  }
  EXPECT_EQ(got["scalar"].dim(), 0);
  EXPECT_EQ(got["t_view"].to_vector()[1], 4.5);  // element [0, 1] of the transpose = original [1, 0]
  EXPECT_EQ(got["sliced"].to_vector(), (std::vector<double>{7, 11, 15}));

  EXPECT_EQ(io::load_safetensors(path).size(), in.size());
}

TEST(Safetensors, HeaderLayoutFollowsTheFormat) {
  TempDir dir;
  const std::string path = dir.file("a.safetensors");
  io::save_safetensors(path, {{"a", Tensor::from_vector({1, 2}, {2}, DType::f32)}}, {{"format", "pt"}});
  std::string bytes = read_bytes(path);
  // The checksums are Python's zlib.crc32(b"F32[2]" + the 8 data bytes) and, for the metadata,
  // zlib.crc32(b"6:format2:pt"); see io/tensor_checksums.h.
  const std::string json =
      R"({"__metadata__":{"format":"pt","vitrain.crc32":"{\"__metadata__\":\"d540c1d6\",\"a\":\"d5f838a1\"}"},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string header = json + std::string((8 - json.size() % 8) % 8, ' ');
  EXPECT_EQ(bytes, le64(header.size()) + header + f32_bytes({1, 2}));

  // A larger file: length prefix, padding to a multiple of 8, offsets pointing at the right bytes.
  io::save_safetensors(path,
                       {{"x", Tensor::from_vector({1.5, -2, 4}, {3}, DType::f32)},
                        {"y", Tensor::from_vector({7}, {1, 1}, DType::u8)},
                        {"z", Tensor::from_vector({0.25}, {}, DType::f64)}},
                       {{"format", "pt"}});
  bytes = read_bytes(path);
  uint64_t n = read_le64(bytes);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  std::string hdr = bytes.substr(8, n);
  size_t last = hdr.find_last_not_of(' ');
  EXPECT_EQ(hdr[last], '}');
  EXPECT_LT(hdr.size() - last - 1, 8u);  // at most 7 padding spaces
  io::JsonValue h = io::parse_json(hdr);
  ASSERT_TRUE(h.is_object());
  EXPECT_EQ(h.object[0].first, "__metadata__");
  EXPECT_EQ(h.find("__metadata__")->find("format")->string, "pt");
  const io::JsonValue* x = h.find("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->find("dtype")->string, "F32");
  EXPECT_EQ(h.find("y")->find("dtype")->string, "U8");
  EXPECT_EQ(h.find("z")->find("shape")->array.size(), 0u);
  int64_t begin = x->find("data_offsets")->array[0].integer;
  EXPECT_EQ(begin, 8);  // z (8-byte aligned) comes first
  EXPECT_EQ(bytes.substr(8 + n + begin, 12), f32_bytes({1.5f, -2.0f, 4.0f}));
  EXPECT_EQ(bytes.size(), 8 + n + 8 + 12 + 1);
  EXPECT_EQ(static_cast<unsigned char>(bytes.back()), 7);
}

TEST(Safetensors, ReadsFilesWrittenByOtherImplementations) {
  TempDir dir;
  const std::string path = dir.file("other.safetensors");
  // Unpadded header, keys in another order, metadata last, whitespace inside the JSON.
  std::string header =
      R"({ "b" : {"shape": [1], "data_offsets": [8, 9], "dtype": "U8"},)"
      R"( "a": {"dtype": "BF16", "data_offsets": [0, 4], "shape": [2]}, "a2": {"dtype": "I32", "shape": [], )"
      R"("data_offsets": [4, 8]}, "__metadata__": {"k": "v\u00e9"}})";
  std::string data = std::string("\x80\x3f\x00\xc0", 4) + std::string("\xfe\xff\xff\xff", 4) + "\x05";
  write_bytes(path, le64(header.size()) + header + data);
  io::SafetensorsFile f = io::read_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 3u);
  EXPECT_EQ(f.tensors[0].first, "a");
  EXPECT_EQ(f.tensors[0].second.to_vector(), (std::vector<double>{1.0, -2.0}));  // bf16 0x3f80, 0xc000
  EXPECT_EQ(f.tensors[1].second.item(), -2);
  EXPECT_EQ(f.tensors[2].second.to_vector(), (std::vector<double>{5}));
  EXPECT_EQ(f.metadata.at("k"), "v\xc3\xa9");
}

TEST(Safetensors, CorruptFilesFailNamingFileAndTensor) {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  auto raw = [&](const std::string& header, const std::string& data) {
    write_bytes(path, le64(header.size()) + header + data);
  };
  auto err = [&] { return error_of([&] { io::load_safetensors(path); }); };

  struct Case {
    std::string header, data, expect;
  };
  const std::string d8(8, '\0'), d12(12, '\0');
  std::vector<Case> cases = {
      {R"({"a":)", "", "bad JSON header"},
      {R"([1])", "", "must be a JSON object"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],)"
       R"("data_offsets":[4,12]}})",
       d12, "tensor 'b' data [4, 12) overlaps tensor 'a'"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],)"
       R"("data_offsets":[8,12]}})",
       d12, "hole of 4 bytes before tensor 'b'"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", d12, "4 trailing bytes"},
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", d8, "tensor 'a' data [0, 16) runs past"},
      {R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", d8, "tensor 'h': unsupported dtype 'F16'"},
      {R"({"s":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8, "tensor 's': F32[3] needs 12 bytes"},
      {R"({"s":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", d8, "tensor 's': shape entries"},
      {R"({"s":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", d8, "tensor 's': data_offsets [8, 0]"},
      {R"({"s":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", d8, "tensor 's': \"data_offsets\" must be"},
      {R"({"s":{"shape":[2],"data_offsets":[0,8]}})", d8, "tensor 's': missing or non-string \"dtype\""},
      {R"({"s":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", d8, "overflows"},
      {R"({"__metadata__":{"k":1}})", "", "__metadata__['k'] must be a string"},
  };
  for (const auto& c : cases) {
    raw(c.header, c.data);
    std::string e = err();
    EXPECT_CONTAINS(e, path);
    EXPECT_CONTAINS(e, c.expect);
  }

  write_bytes(path, "abc");
  EXPECT_CONTAINS(err(), path + ": file is 3 bytes, too short");
  write_bytes(path, le64(1000) + "{}");
  EXPECT_CONTAINS(err(), path + ": header length 1000 runs past the end of the file");
  write_bytes(path, le64(~0ull) + "{}");
  EXPECT_CONTAINS(err(), "runs past the end of the file");
  EXPECT_CONTAINS(error_of([&] { io::load_safetensors(dir.file("missing.safetensors")); }),
                  "cannot open '" + dir.file("missing.safetensors") + "'");

  // A valid file cut short anywhere in its data.
  io::save_safetensors(path, {{"w", Tensor::from_vector(iota_values(10, 1, 0), {10}, DType::f32)}});
  std::string good = read_bytes(path);
  for (size_t cut : {good.size() - 1, good.size() - 20, size_t{12}, size_t{5}}) {
    write_bytes(path, good.substr(0, cut));
    std::string e = err();
    EXPECT_CONTAINS(e, path);
    EXPECT_CONTAINS(e, "truncated");
  }
}

TEST(Safetensors, SaveRejectsBadNamesAndKeepsTheOldFile) {
  TempDir dir;
  const std::string path = dir.file("keep.safetensors");
  Tensor t = Tensor::from_vector({1, 2}, {2}, DType::f32);
  io::save_safetensors(path, {{"a", t}});
  const std::string before = read_bytes(path);
  EXPECT_CONTAINS(error_of([&] { io::save_safetensors(path, {{"a", t}, {"a", t}}); }), "duplicate tensor name 'a'");
  EXPECT_CONTAINS(error_of([&] { io::save_safetensors(path, {{"__metadata__", t}}); }), "reserved");
  EXPECT_CONTAINS(error_of([&] { io::save_safetensors(path, {{"", t}}); }), "empty tensor name");
  EXPECT_CONTAINS(error_of([&] {
                    io::save_safetensors(path, {{"a", t}}, {{"vitrain.crc32", "0"}});
                  }),
                  "key 'vitrain.crc32' is reserved");
  EXPECT_CONTAINS(error_of([&] { io::save_safetensors(path, {{"u", Tensor()}}); }), "tensor 'u' is undefined");
  EXPECT_CONTAINS(error_of([&] {
                    io::save_safetensors(dir.file("no/such/dir/x.safetensors"), {{"a", t}});
                  }),
                  "cannot create");
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  // Overwriting replaces the content; an empty tensor list gives a valid file.
  io::save_safetensors(path, {});
  // No metadata: the CRC-32 of no bytes.
  const std::string empty_header = R"({"__metadata__":{"vitrain.crc32":"{\"__metadata__\":\"00000000\"}"}})";
  EXPECT_EQ(read_bytes(path), le64(72) + empty_header + std::string(72 - empty_header.size(), ' '));
  EXPECT_TRUE(io::load_safetensors(path).empty());
}

}  // namespace
}  // namespace vt::test
