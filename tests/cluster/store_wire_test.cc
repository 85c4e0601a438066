#include "chorus/cluster/store_wire.h"

#include <gtest/gtest.h>

namespace chorus::cluster::store_wire {
namespace {

TEST(StoreWireTest, RequestsRoundTripAndDecodeOnlyWhenComplete) {
  const std::vector<char> data{'v', '\0', '1'};
  const std::vector<char> bytes = encode_request(kWait, {"a", "", "key"}, data);
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<char> partial(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(decode_request(partial)) << n << " bytes";
    EXPECT_EQ(partial.size(), n) << "a partial request is left in the buffer";
  }
  std::vector<char> in = bytes;
  in.push_back('x');  // the start of the next request stays
  const auto request = decode_request(in);
  ASSERT_TRUE(request);
  EXPECT_EQ(request->op, kWait);
  EXPECT_EQ(request->keys, (std::vector<std::string>{"a", "", "key"}));
  EXPECT_EQ(request->data, data);
  EXPECT_EQ(in, std::vector<char>{'x'});
}

TEST(StoreWireTest, RepliesRoundTrip) {
  const std::vector<char> bytes = encode_reply(1, "no such job", 11);
  EXPECT_FALSE(decode_reply(std::vector<char>(bytes.begin(), bytes.end() - 1)));
  const auto reply = decode_reply(bytes);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 1);
  EXPECT_EQ(std::string(reply->payload.begin(), reply->payload.end()), "no such job");
}

}  // namespace
}  // namespace chorus::cluster::store_wire
