// The rendezvous store's wire messages (TcpStore's requests and replies): encoding, and
// decoding from the front of a receive buffer that may hold a partial message — pure
// functions, kept apart from the sockets so the decoders can be tested and fuzzed alone —
// and the socket write both ends share. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace chorus::cluster::store_wire {

enum Op : uint8_t { kHello = 0, kSet = 1, kGet = 2, kWait = 3, kCheck = 4 };

struct Request {
  uint8_t op = 0;
  std::vector<std::string> keys;
  std::vector<char> data;
};

struct Reply {
  uint8_t status = 0;  // 0 ok, 1 error
  std::vector<char> payload;  // a value, or an error message
};

std::vector<char> encode_request(uint8_t op, const std::vector<std::string>& keys, const std::vector<char>& data);
// A whole request from the front of `in`, which it removes; nullopt (and `in` unchanged)
// if more bytes are needed. Never throws on any bytes; the op is not checked.
std::optional<Request> decode_request(std::vector<char>& in);

std::vector<char> encode_reply(uint8_t status, const char* data, size_t size);
// The reply at the front of `in`, or nullopt if more bytes are needed. Never throws.
std::optional<Reply> decode_reply(const std::vector<char>& in);

// Sends all of `bytes` on the socket `fd` (retrying short writes and EINTR, never raising
// SIGPIPE); false once the peer is gone.
bool send_all(int fd, const std::vector<char>& bytes);

}  // namespace chorus::cluster::store_wire
