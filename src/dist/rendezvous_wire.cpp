// Encoding and strict decoding of the rendezvous frames (see rendezvous_wire.h).
#include "dist/rendezvous_wire.h"

namespace vt::dist::wire {
namespace {

void put_u16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  put_u16(out, static_cast<uint16_t>(v >> 16));
  put_u16(out, static_cast<uint16_t>(v));
}
uint16_t get_u16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
uint32_t get_u32(const uint8_t* p) { return (static_cast<uint32_t>(get_u16(p)) << 16) | get_u16(p + 2); }

}  // namespace

std::vector<uint8_t> frame(Type type, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> out;
  out.reserve(kHeaderBytes + body.size());
  put_u32(out, kMagic);
  put_u16(out, kVersion);
  put_u16(out, static_cast<uint16_t>(type));
  put_u32(out, static_cast<uint32_t>(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::optional<Header> parse_header(const uint8_t* bytes) {
  if (get_u32(bytes) != kMagic || get_u16(bytes + 4) != kVersion) return std::nullopt;
  const uint16_t type = get_u16(bytes + 6);
  const uint32_t n = get_u32(bytes + 8);
  switch (static_cast<Type>(type)) {
    case Type::hello:
      if (n < 10 || n > kMaxHelloBytes) return std::nullopt;
      break;
    case Type::payload:
      if (n > kMaxPayloadBytes) return std::nullopt;
      break;
    case Type::reject:
      if (n != 1) return std::nullopt;
      break;
    default: return std::nullopt;
  }
  return Header{static_cast<Type>(type), n};
}

std::vector<uint8_t> hello_frame(const Hello& hello) {
  std::vector<uint8_t> body;
  put_u32(body, hello.world);
  put_u32(body, hello.rank);
  put_u16(body, static_cast<uint16_t>(hello.token.size()));
  body.insert(body.end(), hello.token.begin(), hello.token.end());
  return frame(Type::hello, body);
}

std::optional<Hello> parse_hello(const std::vector<uint8_t>& body) {
  if (body.size() < 10) return std::nullopt;
  Hello h;
  h.world = get_u32(body.data());
  h.rank = get_u32(body.data() + 4);
  const size_t token_bytes = get_u16(body.data() + 8);
  if (token_bytes > kMaxTokenBytes || body.size() != 10 + token_bytes) return std::nullopt;
  h.token.assign(body.begin() + 10, body.end());
  return h;
}

const char* reason_text(RejectReason reason) {
  switch (reason) {
    case RejectReason::wrong_token: return "wrong job token";
    case RejectReason::wrong_world: return "wrong world size";
    case RejectReason::rank_out_of_range: return "rank out of range";
    case RejectReason::duplicate_rank: return "duplicate rank";
  }
  return "unknown reason";
}

}  // namespace vt::dist::wire
