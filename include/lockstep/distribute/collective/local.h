// The local collective backend: replicas are threads of one process (MirroredStrategy on logical CPU
// devices) and meet through shared memory. all_reduce sums in rank order, so every replica gets the
// same bits and the result does not depend on thread timing.
#pragma once
#include <memory>
#include <string>

#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute {
namespace detail {
struct LocalGroupState;
}

// Collective order: every replica thread issues its collectives in program order (strategy.run runs the
// same step function on each), gradient buckets are numbered in the order their gradients become ready
// and carry tag = bucket number, and the strategy's own collectives use fixed tags of their own. A
// collective that is not met by all replicas within CollectiveOptions.timeout throws instead of hanging.
//
// Thread-safety: one thread per rank per tag at a time; collectives with different tags may run at once
// from different threads of the same rank. The communicators share the group's state, so they (and the
// group) may be destroyed in any order once no collective is in flight.
class LocalGroup {
 public:
  explicit LocalGroup(int size);
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;

  int size() const;
  // The communicator of replica `rank` in [0, size).
  std::unique_ptr<Communicator> communicator(int rank);
  // Wakes every replica waiting in a collective with UnavailableError(reason), and fails every later
  // collective the same way: call it when one replica throws, so the others stop at once instead of
  // waiting for their timeout. The group cannot be used again; build a new one.
  void abort(const std::string& reason);

 private:
  std::shared_ptr<detail::LocalGroupState> state_;
};

}  // namespace lockstep::distribute
