// The coordination client every task runs (the chief also runs the service, over gRPC): registration with
// a configuration fingerprint, a key-value store for the collectives' rendezvous, named barriers, the
// shutdown barrier, and failure detection (heartbeats plus a watch stream) so that no task hangs on a dead peer.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/distribute/collective/communicator.h"

namespace lockstep::distribute {

// Who may talk to the coordination service, and how (docs/security.md).
struct ClusterSecurity {
  // The job's shared secret. Every call carries it; the service answers any call without it, or with
  // another, with UNAUTHENTICATED only, and logs the caller's address. Empty: no authentication.
  std::string token;
  // PEM files for TLS on the coordination service: the chief serves tls_cert_file with tls_key_file, and
  // every task verifies the chief against tls_ca_file (or tls_cert_file itself, when it is self-signed).
  // All empty: plaintext.
  std::string tls_cert_file, tls_key_file, tls_ca_file;
  // Listen on every interface rather than on the host of the chief's address (containers whose address in
  // TF_CONFIG is not one of their own).
  bool bind_all_interfaces = false;
  bool tls() const { return !tls_cert_file.empty() || !tls_ca_file.empty(); }
};

// Where ClusterSecurity comes from: files a TF_CONFIG "environment" object names (a lockstep extension),
// each overridden by its environment variable.
struct ClusterSecurityFiles {
  std::string cluster_token_file{}, tls_cert_file{}, tls_key_file{}, tls_ca_file{};
};

// LOCKSTEP_CLUSTER_TOKEN (the token itself) or else LOCKSTEP_CLUSTER_TOKEN_FILE, LOCKSTEP_TLS_CERT_FILE,
// LOCKSTEP_TLS_KEY_FILE, LOCKSTEP_TLS_CA_FILE and LOCKSTEP_BIND_ALL_INTERFACES=1 over `files`. The token
// file is read here: ValueError, naming it, when it is missing, unreadable, empty or over 4 KiB.
ClusterSecurity load_cluster_security(ClusterSecurityFiles files);

struct CoordinationOptions {
  // The chief's "host:port" from TF_CONFIG; rank 0's service listens on that host (or on every interface,
  // security.bind_all_interfaces) at that port.
  std::string service_address;
  ClusterSecurity security;
  int rank = 0;  // rank 0 is the chief and runs the service
  int world_size = 1;
  // Per rank, for messages: names such as "chief:0", "worker:1" and their "host:port". Empty: "task:<rank>".
  std::vector<std::string> task_names;
  std::vector<std::string> task_addresses;
  // A JSON object every task must share with the chief: {"lockstep_version":..., "variables":[{"name":...,
  // "shape":[...], "dtype":...}, ...], "global_batch_size":...}.
  std::string fingerprint;
  // Tells this process apart from a restarted one with the same rank; 0: a random value.
  uint64_t incarnation = 0;
  std::chrono::milliseconds heartbeat_interval{1000};
  // A task silent this long is declared failed (the chief's value counts); a client that cannot reach the
  // service this long declares the service lost.
  std::chrono::milliseconds heartbeat_timeout{10000};
  // To reach the service and for every task to register.
  std::chrono::milliseconds startup_timeout{120000};
  // Called at most once, from a background thread, when the job fails: a task died, went silent or reported
  // an error, or the service is gone. Empty: report the task to blame to the launcher (report_failure), log the
  // message and std::_Exit(1), since a task whose peer died cannot continue (gloo's collectives cannot be
  // cancelled). Not called for this task's own report_error(),
  // nor once shutdown() has begun (shutdown() throws instead). It must not destroy the client.
  std::function<void(const std::string& message)> on_error;
};

class CoordinationService;

// Thread-safe: every method may be called from any thread, concurrently. Blocking calls (the constructor,
// get, barrier, shutdown) throw UnavailableError as soon as the job fails and DeadlineExceededError when
// their own timeout passes; none waits without a deadline. Their Error::culprit() is the task they blame: the
// failed one, the first missing one, the first whose configuration differs, or the chief for a lost service.
class CoordinationClient : public KeyValueStore {
 public:
  // Rank 0 first starts the service. Every rank then connects (retrying until startup_timeout: then
  // UnavailableError) and registers, blocking until all world_size tasks have (DeadlineExceededError naming
  // the missing ones). A fingerprint that differs from the chief's makes every task's constructor throw
  // ValueError naming the task and the difference; so does a rank that registered before with another
  // incarnation (a restarted task cannot join a running job).
  explicit CoordinationClient(CoordinationOptions options);
  // Stops heartbeats and the watch without waiting for anyone: before shutdown() the others see this task
  // fail (and on rank 0 the service goes away).
  ~CoordinationClient() override;
  CoordinationClient(const CoordinationClient&) = delete;
  CoordinationClient& operator=(const CoordinationClient&) = delete;

  // Overwrites an existing key and wakes every get() waiting for it.
  void set(const std::string& key, const std::string& value) override;
  // Waits on the service until the key exists.
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  std::optional<std::string> try_get(const std::string& key);
  // Returns when every task called barrier(name); a name may be reused once the previous round completed.
  // DeadlineExceededError names the tasks that did not arrive (this task's arrival is then withdrawn).
  void barrier(const std::string& name, std::chrono::milliseconds timeout);
  // Declares this task failed: every other task's on_error runs with "<task> at <address> failed: <message>".
  // Best effort; never throws.
  void report_error(const std::string& message);
  // The last call of every task: waits until all tasks arrived (or timeout), so that rank 0's service stays
  // up while anyone still needs it; then runs `after_barrier` (where every task closes what all close together,
  // such as the collectives' connections, while all of them are still here), and stops heartbeats and, on rank
  // 0, the service.
  void shutdown(std::chrono::milliseconds timeout = std::chrono::seconds(60),
                const std::function<void()>& after_barrier = {});

  int rank() const;
  int world_size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep::distribute
