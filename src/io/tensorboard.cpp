// TFRecord framing and the few protobuf fields of tensorflow/core/util/event.proto and summary.proto we write:
//   Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
//           SessionLog session_log = 6; }
//   Summary { repeated Value value = 1; }  Value { string tag = 1; float simple_value = 2; }
//   SessionLog { SessionStatus status = 1; }  (START = 1)
#include "io/tensorboard.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace vt::io {
namespace {

constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli polynomial
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = make_crc32c_table();

// Protobuf wire format: a key is (field << 3) | wire type; 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void put_key(std::string& out, int field, int wire) { put_varint(out, static_cast<uint64_t>(field) << 3 | wire); }
template <typename T>
void put_fixed(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out.append(b, sizeof(T));
}
void put_bytes(std::string& out, int field, std::string_view bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}

std::string event_header(double wall_time, int64_t step) {
  std::string e;
  put_key(e, 1, 1);
  put_fixed(e, wall_time);
  if (step != 0) {
    put_key(e, 2, 0);
    put_varint(e, static_cast<uint64_t>(step));
  }
  return e;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == 0) return "localhost";
  return buf;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = kCrc32cTable[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t c = crc32c(data);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view payload) {
  std::string len;
  put_fixed(len, static_cast<uint64_t>(payload.size()));
  std::string r = len;
  put_fixed(r, masked_crc32c(len));
  r.append(payload);
  put_fixed(r, masked_crc32c(payload));
  return r;
}

std::string scalar_event(double wall_time, int64_t step, const std::vector<std::pair<std::string, float>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    put_bytes(v, 1, tag);
    put_key(v, 2, 5);
    put_fixed(v, value);
    put_bytes(summary, 1, v);
  }
  std::string e = event_header(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

EventFileWriter::EventFileWriter(const std::string& dir, int64_t purge_step) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const double t = now_seconds();
  const std::string stem =
      (std::filesystem::path(dir) / ("events.out.tfevents." + std::to_string(static_cast<int64_t>(t)) + "." +
                                     hostname() + "." + std::to_string(getpid()) + "."))
          .string();
  for (int n = 0; !file_; ++n) {  // a second writer in the same second and process gets the next number
    path_ = stem + std::to_string(n);
    if (std::filesystem::exists(path_)) continue;
    file_ = std::fopen(path_.c_str(), "wb");
    VT_CHECK(file_ != nullptr, "[tensorboard] cannot create '", path_, "': ", std::strerror(errno));
  }
  std::string version = event_header(t, purge_step);
  put_bytes(version, 3, "brain.Event:2");
  write_record(version);
  if (purge_step > 0) {
    std::string session = event_header(t, purge_step);
    std::string log;
    put_key(log, 1, 0);
    put_varint(log, 1);  // SessionLog.START
    put_bytes(session, 6, log);
    write_record(session);
  }
}

EventFileWriter::~EventFileWriter() {
  if (file_) std::fclose(file_);
}

void EventFileWriter::add_scalars(int64_t step, const std::vector<std::pair<std::string, float>>& scalars) {
  if (scalars.empty()) return;
  write_record(scalar_event(now_seconds(), step, scalars));
}

void EventFileWriter::write_record(const std::string& payload) {
  const std::string r = tfrecord(payload);
  const bool ok = std::fwrite(r.data(), 1, r.size(), file_) == r.size() && std::fflush(file_) == 0;
  VT_CHECK(ok, "[tensorboard] write to '", path_, "' failed: ", std::strerror(errno));
}

}  // namespace vt::io
