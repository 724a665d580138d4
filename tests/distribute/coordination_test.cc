// The coordination service and client. With clients on threads: registration, the key-value store, barriers,
// the fingerprint check, the shutdown barrier and error reports. With clients in real processes (this binary
// re-run as a child): a task killed with SIGKILL, a killed chief, and a stopped task's heartbeat timeout.
#include "lockstep/distribute/coordination/coordination.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <climits>
#include <filesystem>
#include <fstream>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <thread>

#include "distribute/coordination/coordination.grpc.pb.h"
#include "lockstep/core/error.h"
#include "../free_port.h"
#include "../error_of.h"

extern char** environ;

namespace lockstep::distribute {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using lockstep::testing::free_port;
using std::chrono::milliseconds;

constexpr char kFingerprint[] =
    R"({"lockstep_version":"0.1.0","global_batch_size":128,"variables":[)"
    R"({"name":"dense/kernel","shape":[784,128],"dtype":"float32"},{"name":"dense/bias","shape":[128],"dtype":"float32"}]})";
// The environment variable that turns this binary into a child task of the process tests.
constexpr char kChildVariable[] = "LOCKSTEP_COORDINATION_CHILD";


long elapsed_ms(Clock::time_point since) {
  return static_cast<long>(std::chrono::duration_cast<milliseconds>(Clock::now() - since).count());
}

// Collects the messages a client's on_error receives.
class ErrorLog {
 public:
  std::function<void(const std::string&)> handler() {
    return [this](const std::string& message) {
      std::lock_guard lock(mu_);
      messages_.push_back(message);
      cv_.notify_all();
    };
  }
  // The first message, waiting up to `timeout` for it; empty when none came.
  std::string wait(milliseconds timeout) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return !messages_.empty(); });
    return messages_.empty() ? "" : messages_.front();
  }
  size_t count() {
    std::lock_guard lock(mu_);
    return messages_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> messages_;
};

// Rank r of a `world`-task job whose chief serves on 127.0.0.1:port; task r's own address is port + r.
CoordinationOptions options_for(int rank, int world, int port, ErrorLog* errors = nullptr) {
  CoordinationOptions o;
  o.service_address = "127.0.0.1:" + std::to_string(port);
  o.rank = rank;
  o.world_size = world;
  for (int r = 0; r < world; ++r) {
    o.task_names.push_back(r == 0 ? "chief:0" : "worker:" + std::to_string(r - 1));
    o.task_addresses.push_back("127.0.0.1:" + std::to_string(port + r));
  }
  o.fingerprint = kFingerprint;
  o.heartbeat_interval = 100ms;
  o.heartbeat_timeout = 2s;
  o.startup_timeout = 10s;
  if (errors) o.on_error = errors->handler();
  return o;
}

using Client = std::unique_ptr<CoordinationClient>;

// Constructs every client on its own thread, since each constructor waits for all to register.
std::vector<std::future<Client>> start(const std::vector<CoordinationOptions>& options) {
  std::vector<std::future<Client>> clients;
  for (const CoordinationOptions& o : options) {
    clients.push_back(std::async(std::launch::async, [o] { return std::make_unique<CoordinationClient>(o); }));
  }
  return clients;
}

std::vector<Client> start_cluster(int world, int port, std::vector<ErrorLog>& errors) {
  std::vector<CoordinationOptions> options;
  for (int r = 0; r < world; ++r) options.push_back(options_for(r, world, port, &errors[static_cast<size_t>(r)]));
  std::vector<Client> clients;
  for (auto& client : start(options)) clients.push_back(client.get());
  return clients;
}

// Runs shutdown() on every client at once, as every task does at its end.
void shutdown_all(std::vector<Client>& clients) {
  std::vector<std::thread> threads;
  for (Client& c : clients) threads.emplace_back([&c] { c->shutdown(10s); });
  for (std::thread& t : threads) t.join();
}

using lockstep::testing::culprit_of;
using lockstep::testing::error_of;

TEST(CoordinationTest, RegistersEveryTaskAndShutsDown) {
  const int port = free_port();
  std::vector<ErrorLog> errors(3);
  std::vector<Client> clients = start_cluster(3, port, errors);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(clients[static_cast<size_t>(r)]->rank(), r);
    EXPECT_EQ(clients[static_cast<size_t>(r)]->world_size(), 3);
  }
  shutdown_all(clients);
  EXPECT_NE(error_of<RuntimeError>([&] { clients[1]->set("k", "v"); }).find("after shutdown()"), std::string::npos);
  clients.clear();
  for (ErrorLog& e : errors) EXPECT_EQ(e.count(), 0u);
}

TEST(CoordinationTest, KeyValueStore) {
  const int port = free_port();
  std::vector<ErrorLog> errors(3);
  std::vector<Client> clients = start_cluster(3, port, errors);

  clients[0]->set("gloo/rank0", std::string("\0bytes\xff", 7));
  EXPECT_EQ(clients[2]->get("gloo/rank0", 1s), std::string("\0bytes\xff", 7));
  EXPECT_EQ(clients[1]->try_get("missing"), std::nullopt);
  clients[1]->set("gloo/rank0", "overwritten");
  EXPECT_EQ(clients[0]->try_get("gloo/rank0"), "overwritten");

  // A get waits on the service until another task sets the key.
  auto late = std::async(std::launch::async, [&] { return clients[1]->get("late", 10s); });
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(late.wait_for(0s), std::future_status::timeout) << "get returned before the key was set";
  clients[2]->set("late", "value");
  EXPECT_EQ(late.get(), "value");

  // The message names the 300 ms the caller asked for, so a get that waited for another deadline fails here.
  const std::string message = error_of<DeadlineExceededError>([&] { clients[1]->get("never", 300ms); });
  EXPECT_NE(message.find("worker:0 waited 0.3 s for key \"never\""), std::string::npos) << message;

  shutdown_all(clients);
  for (ErrorLog& e : errors) EXPECT_EQ(e.count(), 0u);
}

TEST(CoordinationTest, BarrierWaitsForEveryTaskAndIsReusable) {
  const int port = free_port();
  std::vector<ErrorLog> errors(3);
  std::vector<Client> clients = start_cluster(3, port, errors);
  for (int round = 0; round < 2; ++round) {
    const auto begin = Clock::now();
    std::vector<std::future<long>> passed;
    for (int r = 0; r < 3; ++r) {
      passed.push_back(std::async(std::launch::async, [&, r] {
        if (r == 2) std::this_thread::sleep_for(200ms);
        clients[static_cast<size_t>(r)]->barrier("step", 5s);
        return elapsed_ms(begin);
      }));
    }
    // A lower bound, so load cannot break it: task 2 arrives only after its 200 ms sleep.
    for (auto& p : passed) EXPECT_GE(p.get(), 190) << "round " << round;
  }
  shutdown_all(clients);
}

TEST(CoordinationTest, BarrierTimeoutNamesTheMissingTask) {
  const int port = free_port();
  std::vector<ErrorLog> errors(3);
  std::vector<Client> clients = start_cluster(3, port, errors);
  auto first = std::async(std::launch::async, [&] {
    return culprit_of<DeadlineExceededError>([&] { clients[0]->barrier("epoch_end", 300ms); });
  });
  const std::string message = error_of<DeadlineExceededError>([&] { clients[1]->barrier("epoch_end", 300ms); });
  // The culprit is the task that never arrived, not one that arrived and gave up first.
  EXPECT_EQ(first.get(), "worker:1");
  const std::string missing = "worker:1 at 127.0.0.1:" + std::to_string(port + 2);
  // Whoever times out first withdraws, so the later one may list it as well.
  EXPECT_NE(message.find("barrier \"epoch_end\" timed out after 0.3 s on worker:0: "), std::string::npos) << message;
  EXPECT_NE(message.find(missing), std::string::npos) << message;
  // The arrivals that timed out were withdrawn; a full round still passes.
  std::vector<std::thread> threads;
  for (Client& c : clients) threads.emplace_back([&c] { c->barrier("epoch_end", 5s); });
  for (std::thread& t : threads) t.join();
  shutdown_all(clients);
  for (ErrorLog& e : errors) EXPECT_EQ(e.count(), 0u);
}

// Every task's constructor throws ValueError naming the task and the first difference, which is also its culprit.
std::vector<std::string> mismatch_messages(const std::string& worker_fingerprint) {
  const int port = free_port();
  std::vector<CoordinationOptions> options;
  for (int r = 0; r < 3; ++r) options.push_back(options_for(r, 3, port));
  options[2].fingerprint = worker_fingerprint;
  std::vector<std::string> messages;
  for (auto& client : start(options)) {
    try {
      client.get();
      ADD_FAILURE() << "a task with another configuration registered";
    } catch (const ValueError& e) {
      messages.push_back(e.what());
      EXPECT_EQ(e.culprit(), "worker:1") << e.what();
    }
  }
  return messages;
}

TEST(CoordinationTest, FingerprintMismatchStopsEveryTask) {
  std::string batch = kFingerprint;
  batch.replace(batch.find("128,"), 4, "64,");
  for (const std::string& m : mismatch_messages(batch)) {
    EXPECT_NE(m.find("worker:1 does not match the chief: global_batch_size is 128 on chief:0 but 64 on worker:1"),
              std::string::npos)
        << m;
  }
  std::string shape = kFingerprint;
  shape.replace(shape.find("[784,128]"), 9, "[784,64]");
  for (const std::string& m : mismatch_messages(shape)) {
    EXPECT_NE(m.find("worker:1 does not match the chief: variable dense/kernel has shape [784, 128], float32 on "
                     "chief:0 but shape [784, 64], float32 on worker:1"),
              std::string::npos)
        << m;
  }
  std::string version = kFingerprint;
  version.replace(version.find("0.1.0"), 5, "0.2.0");
  for (const std::string& m : mismatch_messages(version)) {
    EXPECT_NE(m.find("lockstep_version is \"0.1.0\" on chief:0 but \"0.2.0\" on worker:1"), std::string::npos) << m;
  }
}

TEST(CoordinationTest, ShutdownWaitsForEveryTask) {
  const int port = free_port();
  std::vector<ErrorLog> errors(3);
  std::vector<Client> clients = start_cluster(3, port, errors);
  const auto begin = Clock::now();
  std::vector<std::future<long>> done;
  for (int r = 0; r < 3; ++r) {
    done.push_back(std::async(std::launch::async, [&, r] {
      if (r == 1) std::this_thread::sleep_for(300ms);
      clients[static_cast<size_t>(r)]->shutdown(5s);
      return elapsed_ms(begin);
    }));
  }
  // A lower bound, so load cannot break it: task 1 arrives only after its 300 ms sleep.
  for (auto& d : done) EXPECT_GE(d.get(), 290);
  clients.clear();
  for (ErrorLog& e : errors) EXPECT_EQ(e.count(), 0u);
}

TEST(CoordinationTest, ShutdownTimeoutNamesTheMissingTask) {
  const int port = free_port();
  std::vector<ErrorLog> errors(2);
  std::vector<Client> clients = start_cluster(2, port, errors);
  const std::string message = error_of<DeadlineExceededError>([&] { clients[0]->shutdown(300ms); });
  EXPECT_NE(message.find("the shutdown barrier timed out after 0.3 s on chief:0: worker:0 at"), std::string::npos)
      << message;
}

TEST(CoordinationTest, ReportedErrorReachesEveryOtherTaskAndWakesWaiters) {
  const int port = free_port();
  std::vector<ErrorLog> errors(3);
  std::vector<Client> clients = start_cluster(3, port, errors);
  // The get's own timeout is long: only the reported error can end it, as UnavailableError with the report
  // (its timeout would be a DeadlineExceededError).
  auto waiting = std::async(std::launch::async,
                            [&] { return error_of<UnavailableError>([&] { clients[2]->get("never", 120s); }); });
  std::this_thread::sleep_for(100ms);
  clients[1]->report_error("CUDA out of memory");
  const std::string expected = "worker:0 at 127.0.0.1:" + std::to_string(port + 1) + " failed: CUDA out of memory";
  EXPECT_EQ(errors[0].wait(60s), expected);
  EXPECT_EQ(errors[2].wait(60s), expected);
  EXPECT_EQ(waiting.get(), expected);
  EXPECT_EQ(error_of<UnavailableError>([&] { clients[0]->barrier("after", 5s); }), expected);
  EXPECT_EQ(culprit_of<UnavailableError>([&] { clients[2]->barrier("after", 5s); }), "worker:0");  // who reported
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(errors[1].count(), 0u) << "the reporting task's own on_error ran";
}

TEST(CoordinationTest, RegistrationTimeoutNamesTheMissingTask) {
  const int port = free_port();
  std::vector<CoordinationOptions> options;
  for (int r = 0; r < 2; ++r) {
    options.push_back(options_for(r, 3, port));
    options.back().startup_timeout = 1s;
  }
  for (auto& client : start(options)) {
    std::string message;
    try {
      client.get();
      ADD_FAILURE() << "registered without worker:1";
    } catch (const DeadlineExceededError& e) {
      message = e.what();
      EXPECT_EQ(e.culprit(), "worker:1");
    }
    EXPECT_NE(message.find("worker:1 at 127.0.0.1:" + std::to_string(port + 2) + " never registered"),
              std::string::npos)
        << message;
    // The service waited what was left of the 1 s startup_timeout ("within 0.996 s"), not a longer timeout.
    const size_t within = message.find(" within ");
    ASSERT_NE(within, std::string::npos) << message;
    EXPECT_LE(std::stod(message.substr(within + 8)), 1.0) << message;
  }
}

TEST(CoordinationTest, RestartedTaskIsRefused) {
  const int port = free_port();
  std::vector<CoordinationOptions> options;
  for (int r = 0; r < 3; ++r) options.push_back(options_for(r, 3, port));
  options[1].incarnation = 1;
  auto first = start({options[0], options[1]});
  std::this_thread::sleep_for(300ms);
  CoordinationOptions restarted = options[1];
  restarted.incarnation = 2;
  const std::string message = error_of<ValueError>([&] { CoordinationClient c(restarted); });
  EXPECT_NE(
      message.find("worker:0 at 127.0.0.1:" + std::to_string(port + 1) + " registered again from another process"),
      std::string::npos)
      << message;
  auto last = start({options[2]});
  std::vector<Client> clients;
  for (auto* group : {&first, &last}) {
    for (auto& c : *group) clients.push_back(c.get());
  }
  shutdown_all(clients);
}

// Found writing fuzz_coordination (and confirmed on it): a request's timeout_ms of 2^63 - 1 overflowed the
// service's deadline (undefined behaviour; in practice a deadline already past). The service now waits until the
// caller gives up.
TEST(CoordinationTest, AHugeRequestedTimeoutWaitsInsteadOfOverflowing) {
  namespace pb = ::lockstep::coordination;
  const int port = free_port();
  std::vector<ErrorLog> errors(2);
  std::vector<CoordinationOptions> options = {options_for(0, 2, port, &errors[0]), options_for(1, 2, port, &errors[1])};
  options[1].incarnation = 42;
  std::vector<Client> clients;
  for (auto& c : start(options)) clients.push_back(c.get());
  auto stub = pb::Coordination::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  pb::GetRequest get;
  get.mutable_task()->set_rank(1);
  get.mutable_task()->set_incarnation(42);
  get.set_key("never-set");
  get.set_wait(true);
  get.set_timeout_ms(INT64_MAX);
  pb::GetResponse value;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 300ms);
  const grpc::Status status = stub->Get(&ctx, get, &value);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(status.error_message().find("waited"), std::string::npos)
      << "the service gave up: " << status.error_message();
  shutdown_all(clients);
  for (ErrorLog& e : errors) EXPECT_EQ(e.count(), 0u);
}

TEST(CoordinationTest, UnreachableServiceNamesTheAddress) {
  const int port = free_port();
  CoordinationOptions o = options_for(1, 2, port);
  o.startup_timeout = 3s;
  const auto begin = Clock::now();
  const std::string message = error_of<UnavailableError>([&] { CoordinationClient c(o); });
  EXPECT_EQ(message, "worker:0 cannot reach the coordination service of chief:0 at 127.0.0.1:" + std::to_string(port) +
                         " after 3 s: is the chief running and the address right? (TF_CONFIG)");
  // A lower bound, so load cannot break it: the client's 3 s start after `begin`. The message above says which
  // timeout ended the wait.
  EXPECT_GE(elapsed_ms(begin), 2900);
}

TEST(CoordinationTest, TakenPortIsReported) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  socklen_t length = sizeof address;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  CoordinationOptions o = options_for(0, 1, ntohs(address.sin_port));
  const std::string message = error_of<UnavailableError>([&] { CoordinationClient c(o); });
  EXPECT_NE(message.find("chief:0 cannot start the coordination service on 127.0.0.1:"), std::string::npos) << message;
  ::close(fd);
}

// ---- The cluster token and TLS ----

std::vector<CoordinationOptions> with_token(std::vector<CoordinationOptions> options, const std::string& token) {
  for (CoordinationOptions& o : options) o.security.token = token;
  return options;
}

// The rightful clients of a 2-task job finish registering, share a key, and shut down without an error.
void expect_the_job_carries_on(std::vector<std::future<Client>>& started, std::vector<ErrorLog>& errors) {
  std::vector<Client> clients;
  for (auto& c : started) clients.push_back(c.get());
  clients[1]->set("k", "v");
  EXPECT_EQ(clients[0]->get("k", 1s), "v");
  shutdown_all(clients);
  for (ErrorLog& e : errors) EXPECT_EQ(e.count(), 0u);
}

// A task with another token (or none) is refused with a ValueError naming the token, and the job goes on.
TEST(CoordinationSecurityTest, AWrongTokenIsRefusedAndTheJobCarriesOn) {
  const int port = free_port();
  std::vector<ErrorLog> errors(2);
  auto options = with_token({options_for(0, 2, port, &errors[0]), options_for(1, 2, port, &errors[1])}, "s3cret-token");
  auto rightful = start(options);
  for (const std::string token : {"s3cret-tokeN", "s3cret", "", "s3cret-token-and-more"}) {
    CoordinationOptions impostor = options[1];
    impostor.security.token = token;
    impostor.on_error = nullptr;
    const std::string message = error_of<ValueError>([&] { CoordinationClient c(impostor); });
    EXPECT_NE(message.find("refused this task's cluster token"), std::string::npos) << token << ": " << message;
    EXPECT_EQ(message.find("s3cret"), std::string::npos) << "the message shows a token: " << message;
  }
  expect_the_job_carries_on(rightful, errors);
}

// A raw gRPC client without the token gets UNAUTHENTICATED and nothing else: no value, no write, no error report.
TEST(CoordinationSecurityTest, ACallWithoutTheTokenGetsNothingFromTheStore) {
  namespace pb = ::lockstep::coordination;
  const int port = free_port();
  std::vector<ErrorLog> errors(2);
  std::vector<Client> clients;
  for (auto& c : start(with_token({options_for(0, 2, port, &errors[0]), options_for(1, 2, port, &errors[1])}, "tok")))
    clients.push_back(c.get());
  clients[0]->set("gloo/secret", "rendezvous");
  auto stub = pb::Coordination::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  auto call = [](const std::string& token, auto rpc) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    if (!token.empty()) ctx.AddMetadata("lockstep-cluster-token", token);
    return rpc(&ctx).error_code();
  };
  pb::GetRequest get;
  get.mutable_task()->set_rank(1);
  get.set_key("gloo/secret");
  pb::GetResponse value;
  for (const std::string token : {"", "tak", "to"}) {
    EXPECT_EQ(call(token, [&](grpc::ClientContext* c) { return stub->Get(c, get, &value); }), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(value.value(), "");
  }
  pb::SetRequest set;
  set.mutable_task()->set_rank(1);
  set.set_key("gloo/secret");
  set.set_value("forged");
  pb::Empty empty;
  EXPECT_EQ(call("", [&](grpc::ClientContext* c) { return stub->Set(c, set, &empty); }), grpc::StatusCode::UNAUTHENTICATED);
  pb::ReportErrorRequest report;
  report.mutable_task()->set_rank(1);
  EXPECT_EQ(call("", [&](grpc::ClientContext* c) { return stub->ReportError(c, report, &empty); }),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(clients[1]->get("gloo/secret", 1s), "rendezvous");
  shutdown_all(clients);
  for (ErrorLog& e : errors) EXPECT_EQ(e.count(), 0u);
}

class ClusterSecurityEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("lockstep-security-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    for (const char* name : kVariables) ::unsetenv(name);
  }
  void TearDown() override {
    for (const char* name : kVariables) ::unsetenv(name);
    std::filesystem::remove_all(dir_);
  }
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return path;
  }
  static constexpr const char* kVariables[] = {"LOCKSTEP_CLUSTER_TOKEN", "LOCKSTEP_CLUSTER_TOKEN_FILE",
                                               "LOCKSTEP_TLS_CERT_FILE", "LOCKSTEP_TLS_KEY_FILE",
                                               "LOCKSTEP_TLS_CA_FILE", "LOCKSTEP_BIND_ALL_INTERFACES"};
  std::filesystem::path dir_;
};

TEST_F(ClusterSecurityEnvironment, TokenFromTheVariableTheFileOrTfConfig) {
  EXPECT_EQ(load_cluster_security({}).token, "");
  const std::string from_config = file("config-token", "from-config\n");
  EXPECT_EQ(load_cluster_security({.cluster_token_file = from_config}).token, "from-config");
  ::setenv("LOCKSTEP_CLUSTER_TOKEN_FILE", file("env-token", "from-env-file \n\n").c_str(), 1);
  EXPECT_EQ(load_cluster_security({.cluster_token_file = from_config}).token, "from-env-file");
  ::setenv("LOCKSTEP_CLUSTER_TOKEN", "from-variable", 1);
  EXPECT_EQ(load_cluster_security({.cluster_token_file = from_config}).token, "from-variable");
  ::setenv("LOCKSTEP_BIND_ALL_INTERFACES", "1", 1);
  EXPECT_TRUE(load_cluster_security({}).bind_all_interfaces);
  ::setenv("LOCKSTEP_BIND_ALL_INTERFACES", "yes", 1);
  EXPECT_THROW(load_cluster_security({}), ValueError);
}

TEST_F(ClusterSecurityEnvironment, BadTokenFilesAreOneLineErrors) {
  auto message = [](const std::string& path) {
    return error_of<ValueError>([&] { load_cluster_security({.cluster_token_file = path}); });
  };
  EXPECT_NE(message((dir_ / "missing").string()).find("cannot be read"), std::string::npos);
  EXPECT_NE(message(file("empty", " \n")).find("is empty"), std::string::npos);
  EXPECT_NE(message(file("huge", std::string(5000, 'x'))).find("is over 4096 bytes"), std::string::npos);
  EXPECT_NE(message(dir_.string()).find("the cluster token file"), std::string::npos);
}

// TLS from a self-signed certificate: tasks that trust it register and use the store; a plaintext task
// cannot reach the service.
TEST_F(ClusterSecurityEnvironment, TlsWithASelfSignedCertificate) {
  const std::string key = (dir_ / "key.pem").string(), cert = (dir_ / "cert.pem").string();
  const std::string command = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext "
                              "subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " + key + " -out " + cert +
                              " >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0) GTEST_SKIP() << "openssl cannot make a test certificate here";
  const int port = free_port();
  std::vector<ErrorLog> errors(2);
  auto options = with_token({options_for(0, 2, port, &errors[0]), options_for(1, 2, port, &errors[1])}, "tls-token");
  options[0].security.tls_cert_file = cert;
  options[0].security.tls_key_file = key;
  options[1].security.tls_ca_file = cert;
  CoordinationOptions plaintext = options[1];
  plaintext.security.tls_ca_file.clear();
  plaintext.startup_timeout = 2s;
  plaintext.on_error = nullptr;
  auto rightful = start(options);
  EXPECT_THROW(CoordinationClient c(plaintext), UnavailableError);
  expect_the_job_carries_on(rightful, errors);
}

// ---- Clients in real processes ----

// A child task: this binary run with only CoordinationChild.Run and kChildVariable="<rank> <world> <port>
// <default on_error: 0|1>". It prints "@ready" once registered and "@error <message>" from its on_error.
TEST(CoordinationChild, Run) {
  const char* spec = std::getenv(kChildVariable);
  if (!spec) GTEST_SKIP() << "runs only as a child of the CoordinationProcessTest tests";
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
  int rank = 0, world = 0, port = 0, default_handler = 0;
  ASSERT_EQ(std::sscanf(spec, "%d %d %d %d", &rank, &world, &port, &default_handler), 4);
  CoordinationOptions o = options_for(rank, world, port);
  if (!default_handler) {
    o.on_error = [](const std::string& message) {
      std::printf("@error %s\n", message.c_str());
      std::fflush(stdout);
      std::_Exit(3);
    };
  }
  try {
    CoordinationClient client(o);
    std::printf("@ready\n");
    std::fflush(stdout);
    std::this_thread::sleep_for(30s);
  } catch (const std::exception& e) {
    std::printf("@exception %s\n", e.what());
    std::fflush(stdout);
    std::_Exit(5);
  }
  std::_Exit(4);
}

// A child task process, killed when the test ends.
class ChildTask {
 public:
  ChildTask(int rank, int world, int port, bool default_handler = false) {
    char exe[PATH_MAX] = {};
    EXPECT_GT(::readlink("/proc/self/exe", exe, sizeof exe - 1), 0);
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    std::string filter = "--gtest_filter=CoordinationChild.Run";
    std::string spec = std::string(kChildVariable) + "=" + std::to_string(rank) + " " + std::to_string(world) + " " +
                       std::to_string(port) + " " + (default_handler ? "1" : "0");
    std::vector<char*> argv = {exe, filter.data(), nullptr};
    std::vector<char*> env;
    for (char** e = environ; *e; ++e) env.push_back(*e);
    env.push_back(spec.data());
    env.push_back(nullptr);
    EXPECT_EQ(::posix_spawn(&pid_, exe, &actions, nullptr, argv.data(), env.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~ChildTask() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(fd_);
  }
  void signal(int sig) { ::kill(pid_, sig); }

  // The rest of the first output line that starts with `prefix`, waiting up to `timeout`; nullopt if none.
  std::optional<std::string> line(const std::string& prefix, milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (true) {
      size_t start = 0;
      for (size_t end; (end = output_.find('\n', start)) != std::string::npos; start = end + 1) {
        if (output_.compare(start, prefix.size(), prefix) == 0) {
          return output_.substr(start + prefix.size(), end - start - prefix.size());
        }
      }
      const long left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return std::nullopt;
      char buffer[4096];
      const ssize_t n = ::read(fd_, buffer, sizeof buffer);
      if (n <= 0) return std::nullopt;
      output_.append(buffer, static_cast<size_t>(n));
    }
  }

  // The exit status, waiting up to `timeout`; -1 if it still runs.
  int exit_status(milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (Clock::now() >= deadline) return -1;
      std::this_thread::sleep_for(10ms);
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string output_;
};

TEST(CoordinationProcessTest, KilledWorkerIsDetectedAtOnce) {
  const int port = free_port();
  ChildTask worker0(1, 3, port);
  ChildTask worker1(2, 3, port);
  ErrorLog errors;
  CoordinationClient chief(options_for(0, 3, port, &errors));
  ASSERT_TRUE(worker0.line("@ready", 10s));
  ASSERT_TRUE(worker1.line("@ready", 10s));

  const auto begin = Clock::now();
  worker1.signal(SIGKILL);
  const std::string message = errors.wait(60s);
  const long detected_ms = elapsed_ms(begin);
  // "At once" is the cause: the closed connection, not the heartbeat timeout ("no heartbeat for 2 s").
  EXPECT_NE(message.find("worker:1 at 127.0.0.1:" + std::to_string(port + 2) +
                         " failed: its connection to the "
                         "coordination service closed"),
            std::string::npos)
      << message;
  const auto other = worker0.line("@error ", 60s);
  ASSERT_TRUE(other);
  EXPECT_EQ(*other, message);
  std::printf("[coordination] a killed worker was noticed after %ld ms, by its peer after %ld ms\n", detected_ms,
              elapsed_ms(begin));
}

TEST(CoordinationProcessTest, KilledChiefIsDetectedAtOnce) {
  const int port = free_port();
  ChildTask chief(0, 3, port);
  ChildTask worker1(2, 3, port, /*default_handler=*/true);
  ErrorLog errors;
  // A stopped chief gives the same message after the heartbeat timeout: with that timeout far longer than the
  // waits below, only the closed connection can tell worker:0 in time.
  CoordinationOptions o = options_for(1, 3, port, &errors);
  o.heartbeat_timeout = 600s;
  CoordinationClient worker0(o);
  ASSERT_TRUE(chief.line("@ready", 10s));
  ASSERT_TRUE(worker1.line("@ready", 10s));

  const auto begin = Clock::now();
  chief.signal(SIGKILL);
  const std::string message = errors.wait(60s);
  const long detected_ms = elapsed_ms(begin);
  // What worker:0 saw, with gRPC's words for it ("Socket closed", "Connection reset by peer"): not a cause, which a
  // broken network would share.
  const std::string lost =
      "worker:0 lost its connection to the coordination service on chief:0 at 127.0.0.1:" + std::to_string(port) +
      " (gRPC: ";
  EXPECT_EQ(message.rfind(lost, 0), 0u) << message;
  EXPECT_TRUE(message.ends_with("): the chief's process ended, or the network to it failed")) << message;
  // The default on_error logs the message and exits with status 1.
  EXPECT_EQ(worker1.exit_status(60s), 1);
  std::printf(
      "[coordination] a killed chief was noticed after %ld ms; a worker with the default on_error exited "
      "after %ld ms\n",
      detected_ms, elapsed_ms(begin));
  EXPECT_EQ(error_of<UnavailableError>([&] { worker0.get("k", 1s); }), message);
  EXPECT_EQ(culprit_of<UnavailableError>([&] { worker0.get("k", 1s); }), "chief:0");
}

TEST(CoordinationProcessTest, StoppedWorkerFailsAfterTheHeartbeatTimeout) {
  const int port = free_port();
  ChildTask worker0(1, 3, port);
  ChildTask worker1(2, 3, port);
  ErrorLog errors;
  CoordinationClient chief(options_for(0, 3, port, &errors));  // heartbeat_timeout 2 s
  ASSERT_TRUE(worker0.line("@ready", 10s));
  ASSERT_TRUE(worker1.line("@ready", 10s));

  const auto begin = Clock::now();
  worker1.signal(SIGSTOP);  // its connection stays open: only the missing heartbeats tell
  const std::string message = errors.wait(60s);
  const long detected_ms = elapsed_ms(begin);
  // The message names the cause, the 2 s heartbeat timeout. No bound on the time: the silence the service
  // measures may start before SIGSTOP if a loaded machine delayed the last heartbeats.
  EXPECT_EQ(message,
            "worker:1 at 127.0.0.1:" + std::to_string(port + 2) +
                " failed: no heartbeat for 2 s (the process hangs or was stopped, or its host is unreachable)");
  const auto other = worker0.line("@error ", 60s);
  ASSERT_TRUE(other);
  EXPECT_EQ(*other, message);
  std::printf("[coordination] a stopped worker was declared failed after %ld ms (heartbeat_timeout 2 s)\n",
              detected_ms);
}

// A TCP relay to a port on 127.0.0.1 that, once cut, drops every byte both ways and keeps both connections open:
// what a network partition looks like from either end (no answer, no closed connection).
class Relay {
 public:
  explicit Relay(int target_port) : target_port_(target_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof a;
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), size), 0);
    EXPECT_EQ(::listen(listen_fd_, 8), 0);
    EXPECT_EQ(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &size), 0);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~Relay() {
    stop_ = true;
    thread_.join();
    for (int fd : open_) ::close(fd);
    ::close(listen_fd_);
  }
  int port() const { return port_; }
  void cut() { cut_ = true; }

 private:
  void run() {
    std::vector<int> ends;  // pairs: the caller's end, then the target's
    while (!stop_) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      for (int fd : ends) fds.push_back({fd, POLLIN, 0});  // a negative fd is skipped by poll
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int caller = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        const int target = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(static_cast<uint16_t>(target_port_));
        if (::connect(target, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
          ends.insert(ends.end(), {caller, target});
          open_.insert(open_.end(), {caller, target});
        } else {  // the target does not listen yet: refused, as a direct connection would be
          ::close(caller);
          ::close(target);
        }
      }
      for (size_t i = 0; i + 1 < fds.size(); ++i) {  // the ends polled: not those accepted just now
        if (ends[i] < 0 || !(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const size_t other = i ^ 1;
        char buffer[16384];
        const ssize_t n = ::read(ends[i], buffer, sizeof buffer);
        if (n <= 0) {  // closed: passed on, unless the network is cut
          if (!cut_ && ends[other] >= 0) ::shutdown(ends[other], SHUT_WR);
          ends[i] = -1;
        } else if (!cut_ && ends[other] >= 0) {
          for (ssize_t sent = 0; sent < n;) {
            const ssize_t m = ::write(ends[other], buffer + sent, static_cast<size_t>(n - sent));
            if (m <= 0) break;
            sent += m;
          }
        }
      }
    }
  }

  const int target_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::vector<int> open_;
  std::atomic<bool> stop_{false}, cut_{false};
  std::thread thread_;
};

TEST(CoordinationProcessTest, PartitionedWorkerSaysWhatItSaw) {
  const int port = free_port();
  ChildTask chief(0, 2, port);
  Relay relay(port);
  ErrorLog errors;
  CoordinationOptions o = options_for(1, 2, port, &errors);  // heartbeat_timeout 2 s
  o.service_address = "127.0.0.1:" + std::to_string(relay.port());
  CoordinationClient worker0(o);
  ASSERT_TRUE(chief.line("@ready", 10s));

  relay.cut();
  // The chief runs on: only the network between them is gone. The worker reports the silence it measured, not a
  // chief that failed or was killed.
  const std::string message = errors.wait(60s);
  EXPECT_EQ(message, "worker:0 got no answer from the coordination service on chief:0 at 127.0.0.1:" +
                         std::to_string(relay.port()) +
                         " for 2 s: the chief's process ended, hangs or was stopped, or the network to it failed");
}

TEST(CoordinationProcessTest, StoppedChiefIsNoticedAfterTheHeartbeatTimeout) {
  const int port = free_port();
  ChildTask chief(0, 2, port);
  ErrorLog errors;
  CoordinationClient worker0(options_for(1, 2, port, &errors));  // heartbeat_timeout 2 s
  ASSERT_TRUE(chief.line("@ready", 10s));
  // The get's own timeout is long: only the heartbeats can end it in time, with UnavailableError and the lost
  // service (its timeout would be a DeadlineExceededError). No bound on the time: the silence the worker
  // measures may start before SIGSTOP if a loaded machine delayed the chief's last answers.
  auto waiting =
      std::async(std::launch::async, [&] { return error_of<UnavailableError>([&] { worker0.get("never", 120s); }); });

  const auto begin = Clock::now();
  chief.signal(SIGSTOP);  // the service's sockets stay open: only the unanswered heartbeats tell
  const std::string message = errors.wait(60s);
  const long detected_ms = elapsed_ms(begin);
  // The silence, as long as heartbeat_timeout: a stopped chief, a hung one and a lost network look the same.
  EXPECT_EQ(message,
            "worker:0 got no answer from the coordination service on chief:0 at 127.0.0.1:" + std::to_string(port) +
                " for 2 s: the chief's process ended, hangs or was stopped, or the network to it failed");
  EXPECT_EQ(waiting.get(), message) << "a get waiting on the stopped service was not woken";
  std::printf("[coordination] a stopped chief was noticed after %ld ms (heartbeat_timeout 2 s)\n", detected_ms);
}

}  // namespace
}  // namespace lockstep::distribute
