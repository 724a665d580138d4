// Two workers of one job inside a test: threads of this process, each with its own MultiWorkerMirroredStrategy
// on 127.0.0.1, as two worker processes would run. Test helper only.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "free_port.h"
#include "lockstep/distribute/strategy/strategy.h"

namespace lockstep::testing {

// Runs fn(rank, strategy) on workers 0 and 1 at once and returns what each threw ("" when nothing), so that a
// failure on one worker is reported rather than hanging the other until its timeout.
inline std::vector<std::string> on_two_workers(
    const std::function<void(int rank, distribute::MultiWorkerMirroredStrategy& strategy)>& fn) {
  const distribute::ClusterSpec spec(
      {{"worker", {"127.0.0.1:" + std::to_string(free_port()), "127.0.0.1:" + std::to_string(free_port())}}});
  std::vector<std::string> errors(2);
  auto worker = [&](int rank) {
    try {
      distribute::MultiWorkerMirroredStrategy strategy(
          {.timeout_seconds = 60}, std::make_unique<distribute::SimpleClusterResolver>(spec, "worker", rank));
      fn(rank, strategy);
    } catch (const std::exception& e) {
      errors[static_cast<size_t>(rank)] = e.what();
    }
  };
  std::thread other(worker, 1);
  worker(0);
  other.join();
  return errors;
}

}  // namespace lockstep::testing
