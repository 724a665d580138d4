// ReplicaRandom: per-replica Philox streams of one seed, and their positions as checkpoint state.
#include "lockstep/distribute/strategy/replica_random.h"

#include <charconv>
#include <string>

#include "lockstep/core/error.h"
#include "lockstep/distribute/strategy/strategy.h"

namespace lockstep::distribute {

ReplicaRandom::ReplicaRandom(Philox base) : base_(base.state()) {}

Philox::State ReplicaRandom::start_of(int64_t replica) const {
  if (replica == 0) return base_;
  return {base_.seed, base_.stream + kReplicaStride * static_cast<uint64_t>(replica), 0};
}

Philox& ReplicaRandom::current() {
  Strategy& strategy = get_strategy();
  const int64_t first = int64_t{strategy.worker_rank()} * strategy.num_local_replicas();
  return replica(in_replica_context() ? first + replica_id_in_sync_group() : first);
}

Philox& ReplicaRandom::replica(int64_t replica) {
  std::lock_guard lock(mutex_);
  auto it = streams_.find(replica);
  if (it == streams_.end()) it = streams_.emplace(replica, Philox(start_of(replica))).first;
  return it->second;
}

nlohmann::json ReplicaRandom::state() const {
  nlohmann::json out = nlohmann::json::object();
  std::lock_guard lock(mutex_);
  for (const auto& [replica, rng] : streams_) {
    const Philox::State& s = rng.state();
    out[std::to_string(replica)] = {s.seed, s.stream, s.position};
  }
  return out;
}

void ReplicaRandom::set_state(const nlohmann::json& state) {
  LS_CHECK(state.is_object(), ValueError,
           "a saved random stream state is not a JSON object: ", state.dump().substr(0, 60));
  std::map<int64_t, Philox::State> parsed;
  for (const auto& [key, s] : state.items()) {
    int64_t replica = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), replica);
    LS_CHECK(ec == std::errc() && end == key.data() + key.size() && replica >= 0, ValueError,
             "a saved random stream is keyed '", key, "', not a replica index");
    LS_CHECK(s.is_array() && s.size() == 3 && s[0].is_number_unsigned() && s[1].is_number_unsigned() &&
                 s[2].is_number_unsigned(),
             ValueError, "the saved random stream of replica ", key, " is ", s.dump().substr(0, 60),
             ", not [seed, stream, position]");
    parsed[replica] = {s[0].get<uint64_t>(), s[1].get<uint64_t>(), s[2].get<uint64_t>()};
  }
  std::lock_guard lock(mutex_);
  for (auto& [replica, rng] : streams_)  // assigned in place: references handed out stay valid
    rng.set_state(start_of(replica));
  for (const auto& [replica, s] : parsed) streams_.insert_or_assign(replica, Philox(s));
}

}  // namespace lockstep::distribute
