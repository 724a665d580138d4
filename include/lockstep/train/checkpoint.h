// tf.train.Checkpoint and tf.train.CheckpointManager: named trackables saved to one safetensors file
// ("<prefix>-<n>.safetensors", tensors named "<object>/<name>", the objects' values and the run's position in
// a JSON __metadata__), written atomically and durably, optionally by a background thread. Under a
// multi-worker strategy saving and restoring are collective: every worker calls them; the chief alone writes
// and reads the file, and restore broadcasts its bytes, so workers need no shared file system.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/train/trackable.h"

namespace lockstep::train {

// The file format's identity, in every checkpoint's metadata.
inline constexpr const char* kCheckpointFormat = "lockstep.checkpoint";
inline constexpr int kCheckpointFormatVersion = 2;

struct CheckpointOptions {
  // Two-phase saves: save() only snapshots state into host buffers and a background thread writes the file;
  // a save waits only while the previous write is still running (TF: experimental_enable_async_checkpoint).
  bool async = false;
  // The strategy whose workers save together; default: that of the first object that has one.
  distribute::Strategy* strategy = nullptr;
};

// What restore() matched (tf.train.Checkpoint's load status). Assertions throw ValueError listing the
// entries; a status that is neither asserted nor expect_partial() logs unused entries when destroyed.
class LoadStatus {
 public:
  // Every checkpoint entry was used and every object got all its state.
  LoadStatus& assert_consumed();
  // Every object in the checkpoint got all its state; extra checkpoint entries are allowed.
  LoadStatus& assert_existing_objects_matched();
  // Silences the warning about checkpoint entries nobody used.
  LoadStatus& expect_partial();
  // The file restored; empty for a status from restore("") (nothing restored).
  const std::string& path() const;
  // The checkpoint entries no object has taken so far.
  const std::vector<std::string>& unused() const;
  // Counts `entry` as restored after restore() returned: TF's deferred restoration, where a variable created later
  // at a path the checkpoint has a value for takes that value when it is added.
  void mark_restored(const std::string& entry);
  struct Detail;
  explicit LoadStatus(std::shared_ptr<Detail> detail);

 private:
  std::shared_ptr<Detail> d_;
};

class Checkpoint {
 public:
  explicit Checkpoint(std::vector<std::pair<std::string, TrackableRef>> objects, CheckpointOptions options = {});
  ~Checkpoint();  // waits for a background write in flight (its failure is logged)
  // Movable (made in a strategy's scope, used after it); a CheckpointManager made from it keeps working.
  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  // Increments save_counter and writes "<file_prefix>-<save_counter>"; returns that prefix. As TF's, it creates
  // the prefix's directory (and its parents) when missing.
  std::string save(const std::string& file_prefix);
  // Writes "<file_prefix>" as is, save_counter untouched; returns it.
  std::string write(const std::string& file_prefix);
  // Restores the objects (and save_counter) from a prefix that save() returned (the ".safetensors"
  // suffix may be given too). restore("") restores nothing. NotFoundError for a missing file,
  // DataLossError for a corrupted one, ValueError for mismatched state.
  LoadStatus restore(const std::string& save_path);
  // As restore(), but save_counter keeps its value (the counterpart of write()).
  LoadStatus read(const std::string& save_path);
  // Waits until every save so far is durable; rethrows the error of a failed background write.
  void sync();
  // Whether later saves write in the background (CheckpointOptions::async), as TF takes that option with each save.
  // Safe between saves: a save waits for the previous write before it starts.
  void set_async(bool async);

  int64_t save_counter() const;
  // The metadata of the last file saved or restored: step, epoch, step_in_epoch, world_size, ...
  const std::map<std::string, std::string>& metadata() const;
  distribute::Strategy* strategy() const;
  bool is_chief() const;

  struct Impl;

 private:
  friend class CheckpointManager;
  friend class PreemptionCheckpointHandler;
  // For PreemptionCheckpointHandler, which saves its step count with the user's objects.
  void add_object(const std::string& name, TrackablePtr object);
  void remove_object(const TrackablePtr& object);
  // A second handle on the same state, for the managers that save it; it does not wait for writes when it goes.
  explicit Checkpoint(std::shared_ptr<Impl> impl) : impl_(std::move(impl)), owner_(false) {}
  std::shared_ptr<Impl> impl_;
  bool owner_ = true;
};

// The checkpoint prefix that `directory`'s "checkpoint" index file names as the latest, when its file is in that
// directory and valid (it parses and every CRC32C checks); where the index is missing, unreadable, names nothing,
// names a file elsewhere or one that is missing or damaged, a warning says so and the newest valid
// "<name>-<n>.safetensors" there (by its save_counter and step, not its file time) is returned instead; nullopt
// when there is none (quietly when the directory holds neither index nor checkpoint). TF returns None instead.
std::optional<std::string> latest_checkpoint(const std::string& directory);

struct CheckpointManagerOptions {
  std::optional<int> max_to_keep = 5;  // nullopt keeps every checkpoint
  std::optional<double> keep_checkpoint_every_n_hours = std::nullopt;
  std::string checkpoint_name = "ckpt";
  // With checkpoint_interval: save() does nothing until step_counter() has advanced that far since the last save.
  std::function<int64_t()> step_counter = nullptr;
  std::optional<int64_t> checkpoint_interval = std::nullopt;
  // restore_or_initialize() calls it when there is no checkpoint.
  std::function<void()> init_fn = nullptr;
};

// The manager keeps (and may prune) the checkpoints that the directory's index listed when it started and those it
// saves, no others: a file the index does not list, names outside the directory, or a damaged index, is never
// deleted by it, only logged, and restored when it is the newest valid checkpoint left.
class CheckpointManager {
 public:
  CheckpointManager(Checkpoint& checkpoint, std::string directory, CheckpointManagerOptions options = {});
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  // Saves "<directory>/<checkpoint_name>-<n>", n = checkpoint_number or the checkpoint's save_counter, then
  // updates the index file and deletes checkpoints beyond max_to_keep — both only once the new file is
  // durable. Returns the prefix, or nullopt when the interval has not passed (and check_interval).
  std::optional<std::string> save(std::optional<int64_t> checkpoint_number = std::nullopt, bool check_interval = true);
  // Restores the index's latest checkpoint (as TF does: an index edited to name an older one rolls back) or, when
  // that is not valid, the newest valid one in the directory, listed or not, by its own save_counter and step. A
  // checkpoint is skipped, with a warning naming it and why, when its file is missing, truncated, corrupted
  // (CRC32C), not a lockstep checkpoint, holds none of this checkpoint's objects, or its saved state is malformed
  // or does not fit them (another model's). Calls init_fn when there is no checkpoint; throws DataLossError when
  // there are checkpoints and none restores (starting afresh would discard the job's progress). Returns the prefix.
  std::optional<std::string> restore_or_initialize();
  // The checkpoint restore_or_initialize() restores (or restored), then the last one saved; nullopt when none.
  std::optional<std::string> latest_checkpoint() const;
  // The checkpoints this manager keeps and prunes, oldest first.
  std::vector<std::string> checkpoints() const;
  const std::string& directory() const;
  // Waits for a background write (and the index update and pruning after it).
  void sync();
  // After a completed run: deletes the checkpoints this manager keeps and its index file (the chief does),
  // and the directory if that leaves it empty — never other files in it (BackupAndRestore's cleanup).
  void delete_checkpoints();

  struct Impl;

 private:
  friend class PreemptionCheckpointHandler;
  Checkpoint& checkpoint() const;
  std::shared_ptr<Impl> impl_;
};

}  // namespace lockstep::train
