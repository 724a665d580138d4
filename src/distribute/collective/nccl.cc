// The NCCL backend: one NCCL communicator per process, created non-blocking (so its rendezvous has a timeout),
// collectives queued on the GPU's one stream (ordered after the kernels that filled the buffers) and waited for by
// polling that stream and NCCL's asynchronous error, so that a collective never hangs past its timeout.
#include "lockstep/distribute/collective/nccl.h"

#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include "lockstep/core/error.h"
#include "reduce-impl.h"

#if LOCKSTEP_WITH_CUDA
#include <cuda_runtime.h>
#include <nccl.h>

#include "lockstep/kernels/cuda/runtime.h"
#endif

namespace lockstep::distribute {

#if LOCKSTEP_WITH_CUDA

namespace {

namespace cuda = kernels::cuda;
using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return ncclFloat32;
    case DType::bfloat16: return ncclBfloat16;
    case DType::float64: return ncclFloat64;
    case DType::int64: return ncclInt64;
    case DType::int32: return ncclInt32;
    case DType::uint8: return ncclUint8;
    case DType::bool_: break;
  }
  throw InvalidArgumentError(make_message("NCCL all_reduce of ", dtype_name(dtype), " is not supported"));
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM: return ncclSum;
    case ReduceOp::MEAN: return ncclAvg;
    case ReduceOp::MAX: return ncclMax;
    case ReduceOp::MIN: return ncclMin;
  }
  return ncclSum;
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(KeyValueStore& store, int rank, int size, const NcclOptions& o)
      : peers_{rank, size, o.peer_names, o.peer_tasks}, device_(o.device) {
    cuda::set_device(device_);
    stream_ = static_cast<cudaStream_t>(cuda::native_stream(device_));
    ncclUniqueId id;
    const std::string key = o.prefix + "/unique_id";
    if (rank == 0) {
      check(ncclGetUniqueId(&id), "ncclGetUniqueId");
      store.set(key, std::string(reinterpret_cast<const char*>(&id), sizeof id));
    } else {
      const std::string bytes = store.get(key, o.connect_timeout);
      LS_CHECK(bytes.size() == sizeof id, DataLossError, "NCCL rendezvous: the unique id in the store has ",
               bytes.size(), " bytes, expected ", sizeof id);
      std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(&id));
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // returns at once; wait() below bounds the rendezvous by connect_timeout
    ncclResult_t r = ncclCommInitRankConfig(&comm_, size, id, rank, &config);
    if (r != ncclInProgress) check(r, "ncclCommInitRankConfig");
    wait_for_comm(Clock::now() + o.connect_timeout,
                  make_message("NCCL rendezvous of ", peers_.self(), " on /gpu:", device_));
  }

  ~NcclCommunicator() override {
    if (!comm_) return;
    // A broken communicator may have operations that never finish: abort instead of waiting for them.
    if (failure_.happened()) ncclCommAbort(comm_);
    else ncclCommDestroy(comm_);
  }

  int rank() const override { return peers_.rank; }
  int size() const override { return peers_.size; }

  void all_reduce(void* data, size_t count, DType dtype, ReduceOp op, const CollectiveOptions& o) override {
    if (count == 0) return;
    run(data, nullptr, count * dtype_size(dtype), 0, o, "all_reduce", [&](const void* in, void* out) {
      return ncclAllReduce(in, out, count, nccl_type(dtype), nccl_op(op), comm_, stream_);
    });
  }

  void broadcast(void* data, size_t bytes, int root, const CollectiveOptions& o) override {
    LS_CHECK(root >= 0 && root < size(), ValueError, "broadcast root ", root, " is not a rank of ", size());
    if (bytes == 0) return;
    run(data, nullptr, bytes, 0, o, "broadcast",
        [&](const void* in, void* out) { return ncclBroadcast(in, out, bytes, ncclUint8, root, comm_, stream_); });
  }

  void all_gather(const void* input, void* output, size_t bytes, const CollectiveOptions& o) override {
    if (bytes == 0) return;
    run(const_cast<void*>(input), output, bytes, bytes * static_cast<size_t>(size()), o, "all_gather",
        [&](const void* in, void* out) { return ncclAllGather(in, out, bytes, ncclUint8, comm_, stream_); });
  }

  void barrier(const CollectiveOptions& o) override {
    float one = 1;
    all_reduce(&one, 1, DType::float32, ReduceOp::SUM, o);
  }

 private:
  static bool on_device(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return a.type == cudaMemoryTypeDevice;
  }

  // A buffer as the GPU sees it: the caller's own when it is GPU memory, else GPU scratch of the same size that
  // holds a copy of it (when `upload`) and is returned to the allocator after.
  class OnGpu {
   public:
    OnGpu(void* p, size_t bytes, int device, bool upload) : bytes_(bytes), device_(device), p_(p) {
      if (on_device(p)) return;
      scratch_ = cuda::allocate(bytes, device);
      if (upload) cuda::copy(scratch_, p, bytes, cuda::CopyKind::host_to_device, device);
    }
    ~OnGpu() {
      if (scratch_) cuda::release(scratch_, bytes_, device_);
    }
    void* get() const { return scratch_ ? scratch_ : p_; }
    // Copies the result back when this is scratch for host memory.
    void download() const {
      if (scratch_) cuda::copy(p_, scratch_, bytes_, cuda::CopyKind::device_to_host, device_);
    }

   private:
    size_t bytes_;
    int device_;
    void* p_;
    void* scratch_ = nullptr;
  };

  // Runs `call(in, out)` on GPU views of `input` (bytes) and `output` (out_bytes; null: in place), then waits.
  template <typename Call>
  void run(void* input, void* output, size_t bytes, size_t out_bytes, const CollectiveOptions& o, const char* what,
           Call&& call) {
    std::lock_guard lock(mutex_);
    failure_.check();
    cuda::set_device(device_);
    const std::string op = make_message("NCCL ", what, " (tag ", o.tag, ") on ", peers_.self());
    const OnGpu in(input, bytes, device_, true);
    const std::optional<OnGpu> out = output ? std::optional<OnGpu>(std::in_place, output, out_bytes, device_, false)
                                            : std::nullopt;
    const ncclResult_t r = call(in.get(), out ? out->get() : in.get());
    if (r != ncclSuccess && r != ncclInProgress) check(r, op.c_str());
    wait_for_stream(Clock::now() + o.timeout, op, o.timeout);
    (out ? *out : in).download();
  }

  // Polls until the communicator's initialisation ends.
  void wait_for_comm(Clock::time_point deadline, const std::string& op) {
    for (;;) {
      ncclResult_t state = ncclSuccess;
      check(ncclCommGetAsyncError(comm_, &state), op.c_str());
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) check(state, op.c_str());
      if (Clock::now() > deadline) {
        failure_.record({detail::Failure::deadline,
                         make_message(op, " timed out: not every worker joined; check the other workers' logs")});
        ncclCommAbort(comm_);
        comm_ = nullptr;
        failure_.check();
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // Polls until everything queued on the stream (the collective included) has run, NCCL reports an error, or the
  // deadline passes.
  void wait_for_stream(Clock::time_point deadline, const std::string& op, std::chrono::milliseconds timeout) {
    auto nap = std::chrono::microseconds(5);
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) {
        cudaGetLastError();
        failure_.raise({detail::Failure::unavailable,
                        make_message(op, " failed on /gpu:", device_, ": ", cudaGetErrorString(e))});
      }
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        failure_.raise({detail::Failure::unavailable,
                        make_message(op, " failed: ", ncclGetErrorString(state),
                                     " (a peer may have stopped; check the other workers' logs)")});
      }
      if (Clock::now() > deadline) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        failure_.raise(detail::timed_out(op, timeout));
      }
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(500));
    }
  }

  void check(ncclResult_t r, const char* call) {
    if (r == ncclSuccess) return;
    failure_.raise({detail::Failure::unavailable,
                    make_message(call, " failed on /gpu:", device_, ": ", ncclGetErrorString(r), " (",
                                 ncclGetLastError(comm_), "); if NCCL cannot run here (two workers on one GPU, no "
                                 "route between the GPUs), use CommunicationImplementation::RING")});
  }

  detail::Peers peers_;
  int device_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  std::mutex mutex_;  // one collective at a time
  detail::FirstFailure failure_;
};

}  // namespace

bool nccl_available() { return true; }

std::unique_ptr<Communicator> make_nccl_communicator(KeyValueStore& store, int rank, int size,
                                                     const NcclOptions& options) {
  detail::check_rendezvous(options, rank, size, "NcclOptions");
  return std::make_unique<NcclCommunicator>(store, rank, size, options);
}

#else

bool nccl_available() { return false; }

std::unique_ptr<Communicator> make_nccl_communicator(KeyValueStore&, int, int, const NcclOptions&) {
  throw FailedPreconditionError(
      "CommunicationImplementation::NCCL needs a build of lockstep with CUDA (nvcc, NCCL): use AUTO or RING");
}

#endif

}  // namespace lockstep::distribute
