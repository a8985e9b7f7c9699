// The rendezvous's messages. Every frame is a 12-byte header (magic "VTRV", version, type, body length; all
// big-endian) and a bounded body:
//   hello   (rank r -> rank 0): world u32, rank u32, token length u16, token bytes (at most 256)
//   payload (rank 0 -> rank r): the payload bytes (at most 4 KiB)
//   reject  (rank 0 -> rank r): one reason byte, then rank 0 closes the connection
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vt::dist::wire {

constexpr uint32_t kMagic = 0x56545256;  // "VTRV"
constexpr uint16_t kVersion = 1;
constexpr size_t kHeaderBytes = 12;
constexpr size_t kMaxTokenBytes = 256;
constexpr size_t kMaxHelloBytes = 10 + kMaxTokenBytes;
constexpr size_t kMaxPayloadBytes = 4096;

enum class Type : uint16_t { hello = 1, payload = 2, reject = 3 };
enum class RejectReason : uint8_t { wrong_token = 1, wrong_world = 2, rank_out_of_range = 3, duplicate_rank = 4 };

struct Header {
  Type type;
  uint32_t body_bytes;
};

struct Hello {
  uint32_t world = 0, rank = 0;
  std::string token;
};

/// A whole frame: header + body.
std::vector<uint8_t> frame(Type type, const std::vector<uint8_t>& body);

/// The header of `bytes` (kHeaderBytes long) when its magic, version and type are known and its body length is
/// within that type's bound; nullopt otherwise.
std::optional<Header> parse_header(const uint8_t* bytes);

/// A hello frame for `hello` (token at most kMaxTokenBytes).
std::vector<uint8_t> hello_frame(const Hello& hello);

/// The hello in a hello body; nullopt when its lengths disagree.
std::optional<Hello> parse_hello(const std::vector<uint8_t>& body);

/// What a reject reason means, for error messages ("wrong job token").
const char* reason_text(RejectReason reason);

}  // namespace vt::dist::wire
