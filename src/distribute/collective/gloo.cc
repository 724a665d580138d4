// The gloo backend: a tcp device on the worker's own address, a full mesh of pairs set up through our KeyValueStore, and gloo's ring algorithms (each element of an all_reduce is reduced by one rank and then copied
// to the others, so every rank ends with the same bits). The watchdog turns a broken connection into an error
// naming the peer, at once; gloo errors become lockstep errors that carry the task they blame.
#include "lockstep/distribute/collective/gloo.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/attr.h>
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "gloo-impl.h"

namespace lockstep::distribute {

namespace detail {

std::shared_ptr<gloo::transport::Context> GlooDevice::createContext(int rank, int size) {
  auto context = std::make_shared<TrackingContext>(gloo::transport::tcp::Device::createContext(rank, size));
  last_context_ = context;
  return context;
}

}  // namespace detail

namespace {

namespace tcp = gloo::transport::tcp;
using detail::Peers;
using detail::Watchdog;
using std::chrono::milliseconds;

// gloo writes to sockets with writev, which raises SIGPIPE when the peer has died; the default action
// would kill this worker instead of letting the collective throw. A handler someone installed is kept.
void ignore_sigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current = {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
        current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
  });
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(int rank, int size, const GlooOptions& options)
      : peers_{rank, size, options.peer_names, options.peer_tasks}, watchdog_(peers_) {}

  void connect(KeyValueStore& store, const GlooOptions& options) {
    if (size() == 1) return;
    try {
      tcp::attr attr;
      attr.hostname = options.hostname;
      device_ = std::make_shared<detail::GlooDevice>(tcp::CreateDeviceAttr(attr));
    } catch (const std::exception& e) {
      throw UnavailableError(make_message("gloo cannot listen on host '", options.hostname, "' on ", peers_.self(),
                                          " (", detail::strip_location(e.what()),
                                          "); set this worker's TF_CONFIG address to a name or IP of this machine"));
    }
    detail::StoreAdapter adapter(store, options, peers_);
    context_ = std::make_shared<gloo::rendezvous::Context>(rank(), size());
    context_->setTimeout(options.connect_timeout);
    try {
      std::shared_ptr<gloo::transport::Device> device = device_;
      context_->connectFullMesh(adapter, device);
    } catch (const gloo::Exception& e) {
      throw_connect_error(e.what());
    } catch (const gloo::EnforceNotMet& e) {
      throw_connect_error(e.what());
    } catch (...) {
      device_->take_last_context();  // the store's own error (a rank that never came): break the device's cycle
      throw;
    }
    transport_ = device_->take_last_context();
    watchdog_.start(context_, transport_.get());
  }

  int rank() const override { return peers_.rank; }
  int size() const override { return peers_.size; }

  void all_reduce(void* data, size_t count, DType dtype, ReduceOp op, const CollectiveOptions& options) override {
    check_failure();
    detail::visit_reducible(dtype, "all_reduce", [&](auto x) {
      using T = decltype(x);
      if (count == 0) return;
      if (size() > 1) {
        run("all_reduce", options, [&] {
          gloo::AllreduceOptions o(context_);
          o.setOutput(static_cast<T*>(data), count);
          o.setReduceFunction(detail::reduce_function<T>(op));
          o.setTag(options.tag);
          o.setTimeout(gloo_timeout(options));
          gloo::allreduce(o);
        });
      }
      // Every rank divides the same bits the same way, so MEAN stays identical across ranks.
      if (op == ReduceOp::MEAN) detail::divide_elements<T>(data, count, size());
    });
  }

  void broadcast(void* data, size_t bytes, int root, const CollectiveOptions& options) override {
    LS_CHECK(root >= 0 && root < size(), ValueError, "broadcast root must be a rank in [0, ", size(), "), got ", root);
    check_failure();
    if (size() == 1 || bytes == 0) return;
    run("broadcast", options, [&] {
      gloo::BroadcastOptions o(context_);
      o.setOutput(static_cast<uint8_t*>(data), bytes);
      o.setRoot(root);
      o.setTag(options.tag);
      o.setTimeout(gloo_timeout(options));
      gloo::broadcast(o);
    });
  }

  void all_gather(const void* input, void* output, size_t bytes, const CollectiveOptions& options) override {
    check_failure();
    uint8_t* mine = static_cast<uint8_t*>(output) + static_cast<size_t>(rank()) * bytes;
    if (bytes > 0 && mine != input) std::memmove(mine, input, bytes);
    if (size() == 1 || bytes == 0) return;
    run("all_gather", options, [&] {
      gloo::AllgatherOptions o(context_);
      o.setOutput(static_cast<uint8_t*>(output), bytes * static_cast<size_t>(size()));  // in place: ours is there
      o.setTag(options.tag);
      o.setTimeout(gloo_timeout(options));
      gloo::allgather(o);
    });
  }

  void barrier(const CollectiveOptions& options) override {
    check_failure();
    if (size() == 1) return;
    run("barrier", options, [&] {
      gloo::BarrierOptions o(context_);
      o.setTag(options.tag);
      o.setTimeout(gloo_timeout(options));
      gloo::barrier(o);
    });
  }

 private:
  static milliseconds gloo_timeout(const CollectiveOptions& options) {
    return std::max(options.timeout, milliseconds(1));  // gloo reads 0 as "use the context's timeout"
  }

  void check_failure() { watchdog_.check(); }

  template <typename F>
  void run(const char* kind, const CollectiveOptions& options, F&& f) {
    const Watchdog::Collective c = watchdog_.enter(
        make_message("gloo ", kind, " (tag ", options.tag, ") on ", peers_.self(), " of ", size()), options.timeout);
    try {
      f();
    } catch (const gloo::Exception& e) {
      watchdog_.fail(c, e.what());
    } catch (const gloo::EnforceNotMet& e) {
      watchdog_.fail(c, e.what());
    } catch (...) {
      watchdog_.abandon(c);
      throw;
    }
    watchdog_.leave(c);
  }

  // The rendezvous failed: the pair that holds a connection error names the peer (gloo connects one pair at a
  // time, so at most the one it was connecting does).
  [[noreturn]] void throw_connect_error(const std::string& what) {
    const std::shared_ptr<detail::TrackingContext> transport = device_->take_last_context();
    const int peer = transport ? detail::first_failed_peer(*transport) : -1;
    throw UnavailableError(
        make_message(
            "gloo rendezvous: ", peers_.self(), " could not connect to ", peer >= 0 ? peers_.name(peer) : "its peers",
            " (", detail::strip_location(what),
            "); check that every worker is running and that the workers' TF_CONFIG addresses reach each other"),
        Culprit{peers_.task(peer)});
  }

  const Peers peers_;
  std::shared_ptr<detail::GlooDevice> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;  // null when size is 1
  std::shared_ptr<detail::TrackingContext> transport_;  // context_'s transport
  Watchdog watchdog_;                                   // stopped before context_ goes
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(KeyValueStore& store, int rank, int size,
                                                     const GlooOptions& options) {
  LS_CHECK(size >= 1, ValueError, "gloo communicator size must be at least 1, got ", size);
  detail::check_rendezvous(options, rank, size, "GlooOptions");
  ignore_sigpipe();
  auto communicator = std::make_unique<GlooCommunicator>(rank, size, options);
  communicator->connect(store, options);
  return communicator;
}

}  // namespace lockstep::distribute
