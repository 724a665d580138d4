// A random stream with one Philox sub-stream per replica of the strategy in use: random layers (Dropout) draw
// from it, so that replicas draw different numbers whatever the thread timing, and a checkpoint saves the position
// of every replica's stream, so that a resumed job draws what an uninterrupted one would.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "lockstep/core/philox.h"

namespace lockstep::distribute {

class ReplicaRandom {
 public:
  // Replica r draws from (seed, stream + r * kReplicaStride); replica 0's stream is `base` itself.
  explicit ReplicaRandom(Philox base);

  // The calling replica's generator: the global replica worker_rank * num_local_replicas + replica id inside
  // Strategy::run, this worker's first replica outside it. The reference stays valid for the object's life.
  Philox& current();
  // The generator of global replica `replica` (0 is `base`), made on first use.
  Philox& replica(int64_t replica);

  // The streams this process has drawn from, and only those (each replica's belongs to one worker, so every
  // worker's state can be merged): {"<global replica>": [seed, stream, position], ...}.
  nlohmann::json state() const;
  // Replaces every stream: the replicas in `state` continue from its positions, the others start again from the
  // beginning of their own streams. ValueError naming the entry when it is malformed; nothing changes then.
  void set_state(const nlohmann::json& state);

 private:
  static constexpr uint64_t kReplicaStride = 0x9E3779B97F4A7C15ull;
  Philox::State start_of(int64_t replica) const;  // replica's stream before its first draw
  Philox::State base_;
  mutable std::mutex mutex_;
  std::map<int64_t, Philox> streams_;  // by global replica, made on first use; std::map keeps references valid
};
using ReplicaRandomPtr = std::shared_ptr<ReplicaRandom>;

}  // namespace lockstep::distribute
