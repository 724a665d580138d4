// Debian's libgloo-dev (0.0~git20220518) installs gloo/transport/tcp/{pair,context}.h but not this header,
// which they include; gloo_verify.cc needs them to vet a pair's incoming connections. Only what those headers use
// is declared, with the library's layout: a WeakNonOwningPtr holds exactly one std::weak_ptr, as upstream's does
// (gloo_verify.cc checks sizeof(tcp::Pair) against the library's).
#pragma once
#include <memory>

namespace gloo {

template <typename T>
class NonOwningPtr;

template <typename T>
class WeakNonOwningPtr final {
 public:
  WeakNonOwningPtr() = default;

 private:
  std::weak_ptr<T> ptr_;
  friend class NonOwningPtr<T>;
};

}  // namespace gloo
