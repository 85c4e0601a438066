// free_port(): a loopback TCP port nobody listens on right now, for tests that start a
// rendezvous store or Gloo ranks on 127.0.0.1. (Another process may take it before the
// test binds it; on a test machine that race is rare enough.)
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace chorus::testing {

inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

}  // namespace chorus::testing
