// Internals shared by the coordination service and its client: how messages name tasks, the fingerprint
// comparison, and the service class that rank 0's client owns.
#pragma once
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/distribute/coordination/coordination.h"

namespace lockstep::distribute {

// Names tasks in messages: "worker:1", or "worker:1 at 10.0.0.2:2222" when its address is known.
class TaskLabels {
 public:
  explicit TaskLabels(const CoordinationOptions& options);
  std::string name(int rank) const;
  std::string label(int rank) const;
  // "chief:0 at 10.0.0.1:2222", the service's own label for "cannot reach" and "lost" messages.
  std::string service_label() const;

 private:
  std::vector<std::string> names_;
  std::vector<std::string> addresses_;
  std::string service_address_;
};

// Drops gRPC's own log lines (a failed bind alone prints a 1 KB line) before the first gRPC object exists:
// every gRPC failure reaches the caller as a lockstep error that names the task and what to do. An explicitly
// set GRPC_VERBOSITY keeps gRPC's logging as it is, for debugging. Once per process; any thread.
void quiet_grpc_logging();

// "120 s", "2.5 s", "0.3 s".
std::string format_seconds(std::chrono::milliseconds duration);

// The first difference between the chief's fingerprint and another task's, such as "global_batch_size is 128
// on chief:0 but 64 on worker:1"; empty when they are equal. Fingerprints are JSON objects (compared key by
// key; lockstep_version first) or, failing that, opaque strings.
std::string fingerprint_difference(const std::string& chief_fingerprint, const std::string& task_fingerprint,
                                   const std::string& chief_name, const std::string& task_name);

// The metadata key every call carries the cluster token in.
inline constexpr const char* kTokenMetadata = "lockstep-cluster-token";
// Adds the token to a call (nothing when the job has none).
void add_cluster_token(grpc::ClientContext& ctx, const ClusterSecurity& security);
// Whether a call carries `token` (always, when `token` is empty); constant time in the token's content.
bool token_matches(const grpc::ServerContext& ctx, const std::string& token);
// Plaintext, or TLS from the PEM files (ValueError naming a file that cannot be read).
std::shared_ptr<grpc::ServerCredentials> server_credentials(const ClusterSecurity& security);
std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const ClusterSecurity& security);

// The gRPC server rank 0 runs in-process. It holds the registrations, the key-value store and the barriers,
// watches every task (heartbeats and the watch stream), and pushes a failure to every task's watch stream.
class CoordinationService {
 public:
  // Listens on options.service_address (every interface at its port under security.bind_all_interfaces);
  // UnavailableError when the address cannot be bound.
  explicit CoordinationService(const CoordinationOptions& options);
  // Wakes every waiting call, then stops the server after a short grace period for the answers in flight.
  ~CoordinationService();
  CoordinationService(const CoordinationService&) = delete;
  CoordinationService& operator=(const CoordinationService&) = delete;

  // Waits (at most `timeout`) until the failure notice was written to every other task's watch stream, so a
  // chief about to exit does not take the notice down with it.
  void wait_failure_delivered(std::chrono::milliseconds timeout);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::distribute
