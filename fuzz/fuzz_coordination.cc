// The coordination service's request handling: each input is a job's worth of calls (Register, Heartbeat,
// Watch, Set, Get, Barrier, Shutdown, ReportError) whose requests are parsed from the input's bytes, sent
// with the job's token, another one or none to a fresh service on 127.0.0.1. A call may fail, but the
// service must answer every one, within its deadline, and stop cleanly.
//
// Input: one byte choosing the world size (1 to 3), then calls of [method][token][length][request bytes].
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <future>
#include <vector>

#include "distribute/coordination/coordination-impl.h"
#include "distribute/coordination/coordination.grpc.pb.h"
#include "fuzz_util.h"
#include "../tests/free_port.h"

namespace {

namespace pb = ::lockstep::coordination;
using ::lockstep::testing::free_port;
using std::chrono::milliseconds;

constexpr const char* kToken = "fuzz-cluster-token";
constexpr size_t kMaxCalls = 16;
// A waiting call (Register, Get, Barrier, Watch) is cut off by its caller after this long.
constexpr milliseconds kCallDeadline{200};
// How long the next call waits for the one before it, so that calls that do not block run in input order.
constexpr milliseconds kStagger{20};


template <typename Request>
bool parse(Request& request, std::string_view bytes) {
  return request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

// One call, by its method number; false when the bytes are not a request of that method.
bool call(pb::Coordination::Stub& stub, uint8_t method, uint8_t token, std::string_view bytes) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
  ctx.set_wait_for_ready(true);  // this input's service may still be starting
  if (token % 4 == 1) ctx.AddMetadata(lockstep::distribute::kTokenMetadata, "not-the-token");
  if (token % 4 != 1 && token % 4 != 2) ctx.AddMetadata(lockstep::distribute::kTokenMetadata, kToken);
  pb::Empty empty;
  switch (method % 8) {
    case 0: {
      pb::RegisterRequest r;
      if (!parse(r, bytes)) return false;
      (void)stub.Register(&ctx, r, &empty);
      return true;
    }
    case 1: {
      pb::Task r;
      if (!parse(r, bytes)) return false;
      (void)stub.Heartbeat(&ctx, r, &empty);
      return true;
    }
    case 2: {
      pb::Task r;
      if (!parse(r, bytes)) return false;
      auto reader = stub.Watch(&ctx, r);
      for (pb::Event event; reader->Read(&event);) {
      }
      (void)reader->Finish();
      return true;
    }
    case 3: {
      pb::SetRequest r;
      if (!parse(r, bytes)) return false;
      (void)stub.Set(&ctx, r, &empty);
      return true;
    }
    case 4: {
      pb::GetRequest r;
      pb::GetResponse response;
      if (!parse(r, bytes)) return false;
      (void)stub.Get(&ctx, r, &response);
      return true;
    }
    case 5:
    case 6: {
      pb::BarrierRequest r;
      if (!parse(r, bytes)) return false;
      (void)(method % 8 == 5 ? stub.Barrier(&ctx, r, &empty) : stub.Shutdown(&ctx, r, &empty));
      return true;
    }
    default: {
      pb::ReportErrorRequest r;
      if (!parse(r, bytes)) return false;
      (void)stub.ReportError(&ctx, r, &empty);
      return true;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  static const int port = [] {
    fuzz::scratch_dir();  // quiets the log
    return free_port();
  }();
  // One channel for the process, reconnecting within milliseconds to each input's service: a channel per input
  // is torn down by gRPC's own threads after the input ends, which libFuzzer's leak check takes for a leak.
  static const auto stub = [] {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 5);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 5);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 20);
    return pb::Coordination::NewStub(
        grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args));
  }();
  if (size < 1) return 0;
  distribute::CoordinationOptions options;
  options.service_address = "127.0.0.1:" + std::to_string(port);
  options.security.token = kToken;
  options.world_size = 1 + data[0] % 3;
  options.heartbeat_timeout = std::chrono::seconds(60);  // silence is not what this target tests
  options.startup_timeout = std::chrono::seconds(60);
  distribute::CoordinationService service(options);

  std::vector<std::future<bool>> calls;
  for (size_t at = 1; at + 3 <= size && calls.size() < kMaxCalls;) {
    const uint8_t method = data[at], token = data[at + 1];
    const size_t length = std::min<size_t>(data[at + 2], size - at - 3);
    const std::string_view bytes = fuzz::as_text(data + at + 3, length);
    at += 3 + length;
    calls.push_back(
        std::async(std::launch::async, [&, method, token, bytes] { return call(*stub, method, token, bytes); }));
    calls.back().wait_for(kStagger);
  }
  for (auto& c : calls) c.get();
  return 0;
}
