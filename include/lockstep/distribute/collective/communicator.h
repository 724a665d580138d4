// The narrow collective interface every backend implements: all_reduce, broadcast, all_gather and
// barrier over raw buffers, each with one options struct. Every worker must issue the same collectives in
// the same order with the same tags; a collective that cannot finish throws instead of hanging.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/core/dtype.h"

namespace lockstep::distribute {

// tf.distribute.ReduceOp, plus MAX and MIN.
enum class ReduceOp { SUM, MEAN, MAX, MIN };

// Every collective tag lockstep uses, handed out here and nowhere else: two features on one tag would mix
// their data or deadlock. Gradient buckets take bucket_tag(b) below kBucketTagLimit; every other feature has
// its own value above it (a test checks that they are distinct and that tag_name names each).
inline constexpr uint32_t kBucketTagLimit = 1u << 20;
enum class Tag : uint32_t {
  kMetrics = kBucketTagLimit,  // sync-on-read metrics, Strategy::reduce and gather
  kInitialValues,              // the chief's initial variable values
  kMerge,                      // merge_call
  kInput,                      // distributed input agreeing that the data has ended
  kCheckpoint,                 // Checkpoint and CheckpointManager saving and restoring
  kPreemption,                 // agreeing on a preemption and exiting after it
  kSavedModel,                 // model.save, save_weights, load_model, ModelCheckpoint, TensorBoard's last write
  kCommandLine,                // lockstep train's own exchanges (weights hashes, its report)
  kMappedGradients,            // gradient buckets read in place: their mapping, and each step's "filled"
  kEnd                         // not a tag: one past the last
};
// "kCheckpoint", ... for messages and tests.
const char* tag_name(Tag tag);
// The tag of gradient bucket `bucket` (0-based): bucket + 1. ValueError past kBucketTagLimit - 2.
uint32_t bucket_tag(size_t bucket);

struct CollectiveOptions {
  // Collectives that may be in flight at once need distinct tags (gloo's slot); 0 for sequential use.
  uint32_t tag = 0;
  // Longest a collective may wait for its peers; then it throws DeadlineExceededError.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
};
// Options for a feature's collectives: its tag and a timeout (long by default: a peer may be writing a file).
CollectiveOptions collective_options(Tag tag, std::chrono::milliseconds timeout = std::chrono::seconds(600));

// Memory every rank of a communicator reads in place, for workers that share a host (Communicator::map_regions):
// each rank writes its own region and reads the others' without copying them, once a collective (a barrier) has
// put the writes before the reads.
class MappedRegions {
 public:
  virtual ~MappedRegions() = default;
  // Rank r's region, 64-byte aligned: this rank's own is for writing, the others' for reading only. The others'
  // stay readable while this object and its communicator live, even after their process has exited.
  virtual void* region(int rank) const = 0;
  // Keeps this rank's own region alive as long as the pointer does (tensors that view it may outlive the rest).
  virtual std::shared_ptr<const void> own() const = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In place over `count` elements of `dtype` (float32, bfloat16, float64, int64). MEAN divides the sum
  // by size(). Every rank ends with bitwise the same result.
  virtual void all_reduce(void* data, size_t count, DType dtype, ReduceOp op, const CollectiveOptions& options = {}) = 0;
  // `bytes` from rank `root` into every rank's `data`.
  virtual void broadcast(void* data, size_t bytes, int root, const CollectiveOptions& options = {}) = 0;
  // Rank r's `bytes` of `input` land at output + r * bytes on every rank.
  virtual void all_gather(const void* input, void* output, size_t bytes, const CollectiveOptions& options = {}) = 0;
  virtual void barrier(const CollectiveOptions& options = {}) = 0;
  // Collective: every rank maps `bytes` that every other rank can read in place. nullptr on every rank where the
  // backend cannot (all but shared memory) or where some rank could not map the others' memory. Destroy it before
  // the communicator.
  virtual std::unique_ptr<MappedRegions> map_regions(size_t /*bytes*/, const CollectiveOptions& /*options*/ = {}) {
    return nullptr;
  }
};

// Who the ranks of a multi-process backend (gloo, shared memory) are, and how they meet through the store.
struct RendezvousOptions {
  // Per rank, e.g. "worker:1 at 127.0.0.1:23456", for error messages; empty: "rank N".
  std::vector<std::string> peer_names;
  // Per rank, its task ("worker:1"): the Error::culprit() of an error that blames that rank; empty: none.
  std::vector<std::string> peer_tasks;
  // How long the rendezvous (store keys, the first connection to every peer) may take.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(120)};
  // Key prefix in the store; use a new one for each rebuild of the communicator.
  std::string prefix;
};

// The rendezvous a multi-process backend needs: a key-value store every worker reaches (the coordination
// service's). get() blocks until the key exists or the timeout passes (then DeadlineExceededError).
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  virtual std::string get(const std::string& key, std::chrono::milliseconds timeout) = 0;
};

}  // namespace lockstep::distribute
