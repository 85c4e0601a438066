// The wire format, both directions little-endian:
//   request: u8 op, u32 key count, (u32 length, bytes) per key, u32 length, data bytes
//   reply:   u8 status (0 ok, 1 error), u32 length, bytes (a value or an error message)
#include "chorus/cluster/store_wire.h"

#include <sys/socket.h>

#include <cerrno>

namespace chorus::cluster::store_wire {
namespace {

void put_u32(std::vector<char>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
void put_bytes(std::vector<char>& out, const char* data, size_t size) {
  put_u32(out, static_cast<uint32_t>(size));
  out.insert(out.end(), data, data + size);
}

}  // namespace

std::vector<char> encode_request(uint8_t op, const std::vector<std::string>& keys, const std::vector<char>& data) {
  std::vector<char> out{static_cast<char>(op)};
  put_u32(out, static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) put_bytes(out, k.data(), k.size());
  put_bytes(out, data.data(), data.size());
  return out;
}

std::optional<Request> decode_request(std::vector<char>& in) {
  size_t pos = 0;
  auto need = [&](size_t n) { return in.size() >= pos + n; };
  if (!need(5)) return std::nullopt;
  Request r;
  r.op = static_cast<uint8_t>(in[0]);
  const uint32_t count = get_u32(&in[1]);
  pos = 5;
  for (uint32_t k = 0; k < count; ++k) {
    if (!need(4)) return std::nullopt;
    const uint32_t len = get_u32(&in[pos]);
    if (!need(4 + size_t{len})) return std::nullopt;
    r.keys.emplace_back(in.data() + pos + 4, len);  // not &in[...]: that index may be the end
    pos += 4 + size_t{len};
  }
  if (!need(4)) return std::nullopt;
  const uint32_t len = get_u32(&in[pos]);
  if (!need(4 + size_t{len})) return std::nullopt;
  const auto begin = in.begin() + static_cast<std::ptrdiff_t>(pos + 4);
  r.data.assign(begin, begin + len);
  in.erase(in.begin(), begin + len);
  return r;
}

std::vector<char> encode_reply(uint8_t status, const char* data, size_t size) {
  std::vector<char> out{static_cast<char>(status)};
  put_bytes(out, data, size);
  return out;
}

std::optional<Reply> decode_reply(const std::vector<char>& in) {
  if (in.size() < 5) return std::nullopt;
  const uint32_t len = get_u32(&in[1]);
  if (in.size() < 5 + size_t{len}) return std::nullopt;
  return Reply{static_cast<uint8_t>(in[0]), std::vector<char>(in.begin() + 5, in.begin() + 5 + len)};
}

bool send_all(int fd, const std::vector<char>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace chorus::cluster::store_wire
