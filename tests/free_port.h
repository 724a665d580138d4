// A TCP port on 127.0.0.1 that nothing listens on right now (the kernel's pick for port 0, released), for the
// tests and fuzz targets that start a service on loopback. Aborts with a line on stderr if the kernel has none. A
// process never gets the same port twice: the kernel may hand a released port out again at once, and two calls in a
// row then made a TF_CONFIG with one address for two tasks.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

namespace lockstep::testing {

inline int kernel_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::fputs("free_port: cannot bind a TCP socket on 127.0.0.1\n", stderr);
    std::abort();
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

inline int free_port() {
  static std::mutex mutex;
  static std::set<int> given;
  std::lock_guard lock(mutex);
  for (int attempt = 0; attempt < 100; ++attempt)
    if (const int port = kernel_free_port(); given.insert(port).second) return port;
  std::fputs("free_port: the kernel keeps handing out ports this process already has\n", stderr);
  std::abort();
}

}  // namespace lockstep::testing
