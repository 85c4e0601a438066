// Fuzzes the rendezvous store's wire decoders (what TcpStore's server does with the bytes
// a client sends, and a client with a reply). Each decoded request must re-encode to
// exactly the bytes it was decoded from; a mismatch is a finding.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "chorus/cluster/store_wire.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus::cluster::store_wire;
  const std::vector<char> bytes(data, data + size);
  std::vector<char> in = bytes;
  size_t consumed = 0;
  while (auto request = decode_request(in)) {
    const std::vector<char> again = encode_request(request->op, request->keys, request->data);
    if (again.size() > bytes.size() - consumed ||
        !std::equal(again.begin(), again.end(), bytes.begin() + static_cast<std::ptrdiff_t>(consumed))) {
      std::fprintf(stderr, "store_wire: request at byte %zu does not re-encode to its bytes\n", consumed);
      std::abort();
    }
    consumed += again.size();
  }
  if (in.size() != bytes.size() - consumed) std::abort();  // decode_request must leave the rest untouched
  if (const auto reply = decode_reply(bytes)) {
    const auto again = encode_reply(reply->status, reply->payload.data(), reply->payload.size());
    if (!std::equal(again.begin(), again.end(), bytes.begin())) std::abort();
  }
  return 0;
}
