// Checkpoint: snapshots of named trackables in one safetensors file, saved and restored collectively over the
// workers of a strategy (the chief writes and reads; restore broadcasts the file's bytes), optionally written
// by a background thread. CheckpointManager: numbered checkpoints in a directory with TF's "checkpoint"
// index file, pruning, and restore with fallback past corrupted files.
#include "lockstep/train/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "lockstep/core/files.h"
#include "lockstep/core/logging.h"
#include "lockstep/core/version.h"
#include "lockstep/distribute/collective/cross_worker.h"

namespace lockstep::train {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSuffix = ".safetensors";
// Collectives of checkpoints run between steps, never beside another collective with this tag.
const distribute::CollectiveOptions kCollective = distribute::collective_options(distribute::Tag::kCheckpoint);

std::string file_of(const std::string& prefix) {
  return prefix.ends_with(kSuffix) ? prefix : prefix + kSuffix;
}
std::string prefix_of(const std::string& path) {
  return path.ends_with(kSuffix) ? path.substr(0, path.size() - std::strlen(kSuffix)) : path;
}

// The message of an error held as an exception_ptr.
std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

// Records a durable checkpoint as the latest in its directory's "checkpoint" index file (defined below).
void add_to_index(const std::string& prefix);

// What save() hands the writer: everything needed to produce the file, no longer tied to live objects.
struct Snapshot {
  std::vector<NamedTensor> tensors;
  std::map<std::string, std::string> metadata;
};

}  // namespace

// ---- load status ----

struct LoadStatus::Detail {
  std::string path;
  std::vector<std::string> missing;  // "<object>/<entry>" the objects wanted but the checkpoint lacked
  std::vector<std::string> unused;   // checkpoint entries nobody took
  std::vector<std::string> unmatched_objects;  // objects of the checkpoint with nothing saved for them
  bool checked = false;
  ~Detail() {
    if (!checked && !unused.empty())
      log(LogLevel::warning, "checkpoint ", path, ": ", unused.size(), " saved value(s) were not restored (",
          unused.front(), unused.size() > 1 ? ", ..." : "",
          "); call expect_partial() on the restore status if that is intended");
  }
};

LoadStatus::LoadStatus(std::shared_ptr<Detail> detail) : d_(std::move(detail)) {}
const std::string& LoadStatus::path() const { return d_->path; }

namespace {
std::string list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 5) out += make_message(" and ", names.size() - 5, " more");
  return out;
}
}  // namespace

LoadStatus& LoadStatus::assert_existing_objects_matched() {
  d_->checked = true;
  LS_CHECK(!d_->path.empty(), ValueError, "nothing was restored (restore(\"\")): there is no checkpoint to match");
  LS_CHECK(d_->unmatched_objects.empty(), ValueError, "checkpoint ", d_->path, " has nothing for object(s) ",
           list(d_->unmatched_objects), ": it was saved from other objects; check the names given to Checkpoint");
  LS_CHECK(d_->missing.empty(), ValueError, "checkpoint ", d_->path, " lacks ", list(d_->missing),
           ": it was saved from another model or optimizer");
  return *this;
}

LoadStatus& LoadStatus::assert_consumed() {
  assert_existing_objects_matched();
  LS_CHECK(d_->unused.empty(), ValueError, "checkpoint ", d_->path, " holds value(s) nothing restored: ",
           list(d_->unused), "; add the objects they belong to, or call expect_partial()");
  return *this;
}

LoadStatus& LoadStatus::expect_partial() {
  d_->checked = true;
  return *this;
}

// ---- checkpoint ----

struct Checkpoint::Impl {
  std::vector<std::pair<std::string, TrackablePtr>> objects;
  CheckpointOptions options;
  distribute::Strategy* strategy = nullptr;
  int64_t save_counter = 0;
  std::map<std::string, std::string> metadata;

  // The background write: at most one in flight.
  std::thread writer;
  std::mutex error_mutex;
  std::exception_ptr writer_error;

  ~Impl();  // waits for the write in flight
  distribute::Communicator* comm() const { return strategy ? strategy->cross_worker() : nullptr; }
  bool chief() const { return !strategy || strategy->is_chief(); }
  int rank() const { return strategy ? strategy->worker_rank() : 0; }
  int world_size() const { return strategy ? strategy->num_workers() : 1; }

  void join_writer() {
    if (writer.joinable()) writer.join();
  }
  // Joins the write in flight; on every worker, raises the error it hit (the chief's, shared).
  void finish_write() {
    join_writer();
    std::exception_ptr error;
    {
      std::lock_guard lock(error_mutex);
      error = std::exchange(writer_error, nullptr);
    }
    distribute::raise_if_any(comm(), error, kCollective);
  }

  Snapshot snapshot() const;
  // Writes the snapshot (chief), then runs after_durable; in the background when async.
  void persist(const std::string& prefix, Snapshot snap, std::function<void()> after_durable);
  std::string write(const std::string& prefix, std::function<void()> after_durable);
  // Restores from the first candidate whose file is valid (the chief reads, warns about bad ones and
  // broadcasts the bytes); returns its prefix, or "" when there is no candidate. When every candidate is
  // damaged it throws the last one's error: starting afresh would silently discard the job's progress.
  std::string restore(const std::vector<std::string>& candidates, bool set_counter,
                      std::shared_ptr<LoadStatus::Detail>& detail);
  void apply(const SafetensorsFile& file, const std::string& path, bool set_counter, LoadStatus::Detail& detail);
  LoadStatus restore_path(const std::string& save_path, bool set_counter);
};

Checkpoint::Checkpoint(std::vector<std::pair<std::string, TrackableRef>> objects, CheckpointOptions options)
    : impl_(std::make_shared<Impl>()) {
  impl_->options = options;
  std::set<std::string> names;
  for (auto& [name, ref] : objects) {
    LS_CHECK(!name.empty() && name.find('/') == std::string::npos, ValueError, "checkpoint object name '", name,
             "' must be non-empty and contain no '/'");
    LS_CHECK(names.insert(name).second, ValueError, "checkpoint object name '", name,
             "' is given twice; each object needs its own name");
    impl_->objects.emplace_back(name, ref.get());
    if (!impl_->strategy) impl_->strategy = ref.get()->strategy();
  }
  if (options.strategy) impl_->strategy = options.strategy;
}

Checkpoint::Impl::~Impl() {
  // The writer's own task may hold the last handle (a manager's, through after_durable): it is ending then.
  if (writer.joinable() && writer.get_id() == std::this_thread::get_id()) writer.detach();
  join_writer();
  if (writer_error) log(LogLevel::error, "a background checkpoint write failed: ", message_of(writer_error));
}

Checkpoint::~Checkpoint() {
  if (owner_ && impl_) impl_->join_writer();
}
Checkpoint::Checkpoint(Checkpoint&& other) noexcept : impl_(std::move(other.impl_)), owner_(other.owner_) {}
Checkpoint& Checkpoint::operator=(Checkpoint&& other) noexcept {
  if (this == &other) return *this;
  Checkpoint replaced(std::move(*this));  // going, it waits for a write of the state it held, as the destructor does
  impl_ = std::move(other.impl_);
  owner_ = other.owner_;
  return *this;
}

Snapshot Checkpoint::Impl::snapshot() const {
  Snapshot snap;
  nlohmann::json values = nlohmann::json::object();
  nlohmann::json mine = nlohmann::json::object();  // this worker's per-worker values, gathered below
  for (const auto& [name, object] : objects) {
    if (!chief() && !object->per_worker()) continue;  // the same on every worker, and only the chief writes
    TrackableState state = object->save();
    // The run's position, readable without parsing the objects: fit's, the optimizer's, or scalar Variables
    // named as in TF's tutorials.
    for (const char* key : {"epoch", "step_in_epoch", "iterations"})
      if (state.values.contains(key)) snap.metadata[key == std::string("iterations") ? "step" : key] = state.values[key].dump();
    if ((name == "epoch" || name == "step_in_epoch") && state.values.contains("scalar"))
      snap.metadata[name] = make_message(static_cast<int64_t>(state.values["scalar"].get<double>()));
    if (object->per_worker()) {
      LS_CHECK(state.tensors.empty(), ValueError, "checkpoint object '", name,
               "' differs per worker and must keep its state in values, not tensors");
      mine[name] = std::move(state.values);
      continue;
    }
    for (NamedTensor& t : state.tensors)
      snap.tensors.push_back({t.name.empty() ? name : name + "/" + t.name, std::move(t.tensor)});
    values[name] = std::move(state.values);
  }
  if (!mine.empty()) {
    std::vector<std::string> all = distribute::all_gather_bytes(comm(), mine.dump(), kCollective);
    for (const auto& [name, unused] : mine.items()) {
      nlohmann::json per = nlohmann::json::array();
      for (const std::string& text : all) per.push_back(nlohmann::json::parse(text).at(name));
      values[name] = {{"per_worker", std::move(per)}};
    }
  }
  snap.metadata["format"] = kCheckpointFormat;
  snap.metadata["format_version"] = std::to_string(kCheckpointFormatVersion);
  snap.metadata["lockstep_version"] = version();
  snap.metadata["save_counter"] = std::to_string(save_counter);
  snap.metadata["world_size"] = std::to_string(world_size());
  snap.metadata["objects"] = values.dump();
  return snap;
}

void Checkpoint::Impl::persist(const std::string& prefix, Snapshot snap, std::function<void()> after_durable) {
  auto work = [this, file = file_of(prefix), snap = std::move(snap), after_durable = std::move(after_durable)] {
    std::exception_ptr error;
    try {
      make_parent_directories(file);  // as TF's checkpoint.save creates the prefix's directory
      save_safetensors(file, snap.tensors, snap.metadata);
      if (after_durable) after_durable();
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(error_mutex);
    writer_error = error;
  };
  if (options.async)
    writer = std::thread([work = std::move(work), pending = std::make_shared<PendingWrite>()] { work(); });
  else
    work();
}

std::string Checkpoint::Impl::write(const std::string& prefix, std::function<void()> after_durable) {
  LS_CHECK(!prefix.empty(), ValueError, "checkpoint file prefix is empty; give a path such as /tmp/ckpt/ckpt");
  finish_write();  // the previous write must be done (and must have worked) before the next starts
  Snapshot snap = snapshot();
  metadata = snap.metadata;
  if (chief()) persist(prefix, std::move(snap), std::move(after_durable));
  else make_parent_directories_if_possible(prefix);
  if (!options.async) finish_write();
  return prefix;
}

std::string Checkpoint::save(const std::string& file_prefix) {
  ++impl_->save_counter;
  const std::string prefix = make_message(file_prefix, "-", impl_->save_counter);
  // As TF's save: the directory's index names it, so latest_checkpoint(dir) finds it.
  return impl_->write(prefix, [prefix] { add_to_index(prefix); });
}

std::string Checkpoint::write(const std::string& file_prefix) { return impl_->write(file_prefix, nullptr); }

void Checkpoint::sync() { impl_->finish_write(); }
void Checkpoint::set_async(bool async) { impl_->options.async = async; }

void Checkpoint::add_object(const std::string& name, TrackablePtr object) {
  impl_->objects.emplace_back(name, std::move(object));
}
void Checkpoint::remove_object(const TrackablePtr& object) {
  std::erase_if(impl_->objects, [&](const auto& o) { return o.second == object; });
}

int64_t Checkpoint::save_counter() const { return impl_->save_counter; }
const std::map<std::string, std::string>& Checkpoint::metadata() const { return impl_->metadata; }
distribute::Strategy* Checkpoint::strategy() const { return impl_->strategy; }
bool Checkpoint::is_chief() const { return impl_->chief(); }

void Checkpoint::Impl::apply(const SafetensorsFile& file, const std::string& path, bool set_counter,
                             LoadStatus::Detail& detail) {
  auto meta = [&](const std::string& key) -> const std::string& {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end())
      throw DataLossError(make_message("checkpoint file ", path, " has no '", key, "' in its metadata: ",
                                       "it was not written by lockstep's Checkpoint; use load_weights for weight files"));
    return it->second;
  };
  LS_CHECK(meta("format") == kCheckpointFormat, DataLossError, "checkpoint file ", path, " has format '",
           meta("format"), "', not '", kCheckpointFormat, "'");
  LS_CHECK(meta("format_version") == std::to_string(kCheckpointFormatVersion), DataLossError, "checkpoint file ",
           path, " has format version ", meta("format_version"), " but this lockstep reads version ",
           kCheckpointFormatVersion, "; restore it with the lockstep that wrote it");
  nlohmann::json values;
  int64_t counter = 0;
  try {
    values = nlohmann::json::parse(meta("objects"));
  } catch (const nlohmann::json::exception& e) {
    throw DataLossError(make_message("checkpoint file ", path, " has unreadable metadata (", e.what(), ")"));
  }
  LS_CHECK(values.is_object(), DataLossError, "checkpoint file ", path,
           " has unreadable metadata (its \"objects\" are not a JSON object)");
  const std::string& counter_text = meta("save_counter");
  auto [end, ec] = std::from_chars(counter_text.data(), counter_text.data() + counter_text.size(), counter);
  LS_CHECK(ec == std::errc() && end == counter_text.data() + counter_text.size() && counter >= 0, DataLossError,
           "checkpoint file ", path, " has unreadable metadata (save_counter '", counter_text,
           "' is not a count of saves)");

  std::set<std::string> used_tensors;
  for (const auto& [name, object] : objects) {
    TrackableState state;
    const std::string prefix = name + "/";
    for (const NamedTensor& t : file.tensors) {
      if (t.name == name)
        state.tensors.push_back({"", t.tensor});
      else if (t.name.starts_with(prefix))
        state.tensors.push_back({t.name.substr(prefix.size()), t.tensor});
    }
    const bool saved = values.contains(name);
    if (!saved && state.tensors.empty()) {
      detail.unmatched_objects.push_back(name);
      continue;
    }
    if (saved) state.values = values.at(name);
    RestoreMatch match;
    // An object reads its own saved values; a missing key or a wrong type there is damage, not a bug.
    try {
      if (object->per_worker()) {
        LS_CHECK(
            state.values.is_object() && state.values.contains("per_worker") && state.values["per_worker"].is_array(),
            DataLossError, "checkpoint file ", path, ": object '", name, "' has no per-worker values");
        std::vector<nlohmann::json> all(state.values["per_worker"].begin(), state.values["per_worker"].end());
        if (static_cast<int64_t>(all.size()) == world_size())
          match = object->restore({{}, all[static_cast<size_t>(rank())]});
        else
          object->restore_resharded(all, world_size(), rank());
      } else {
        match = object->restore(state);
      }
    } catch (const nlohmann::json::exception& e) {
      throw DataLossError(make_message("checkpoint file ", path, ": the saved state of '", name, "' is malformed (",
                                       e.what(), "); restore from an earlier checkpoint"));
    }
    for (const std::string& m : match.missing) detail.missing.push_back(name + "/" + m);
    for (const std::string& u : match.unused) detail.unused.push_back(name + "/" + u);
    for (const NamedTensor& t : state.tensors) used_tensors.insert(t.name.empty() ? name : prefix + t.name);
  }
  for (const NamedTensor& t : file.tensors)
    if (!used_tensors.count(t.name)) detail.unused.push_back(t.name);
  for (const auto& item : values.items())  // not a structured binding: clang 14 cannot capture one
    if (std::none_of(objects.begin(), objects.end(), [&](const auto& o) { return o.first == item.key(); }))
      detail.unused.push_back(item.key());
  if (set_counter) save_counter = counter;
  metadata = file.metadata;
}

std::string Checkpoint::Impl::restore(const std::vector<std::string>& candidates, bool set_counter,
                                      std::shared_ptr<LoadStatus::Detail>& detail) {
  finish_write();
  // The chief finds the first candidate that reads and parses; the others learn which and get its bytes.
  std::string chosen, bytes;
  std::optional<SafetensorsFile> parsed;
  distribute::on_chief(
      comm(),
      [&] {
        for (size_t i = 0; i < candidates.size(); ++i) {
          const std::string file = file_of(candidates[i]);
          try {
            bytes = read_file(file);
            parsed = parse_safetensors(bytes, file);
            chosen = candidates[i];
            return;
          } catch (const std::exception& e) {
            if (i + 1 < candidates.size()) {
              log(LogLevel::warning, e.what(), "; falling back to ", file_of(candidates[i + 1]));
              continue;
            }
            if (candidates.size() == 1) throw;
            raise_error(error_kind(e), make_message(e.what(), " (none of the ", candidates.size(),
                                                    " checkpoints listed is readable)"));
          }
        }
      },
      kCollective);
  distribute::broadcast_bytes(comm(), chosen, 0, kCollective);
  if (chosen.empty()) return "";
  const std::string file = file_of(chosen);
  if (comm()) {
    distribute::broadcast_bytes(comm(), bytes, 0, kCollective);
    if (!parsed) parsed = parse_safetensors(bytes, file);
  }
  detail = std::make_shared<LoadStatus::Detail>();
  detail->path = chosen;
  apply(*parsed, file, set_counter, *detail);
  // Every worker restored from the same bytes; checking the counter across workers catches a worker that
  // took another path through this code.
  using distribute::ReduceOp;
  LS_CHECK(distribute::agree(comm(), save_counter, ReduceOp::MAX, kCollective) ==
               distribute::agree(comm(), save_counter, ReduceOp::MIN, kCollective),
           RuntimeError, "workers restored different checkpoints from ", file, "; restart the job");
  return chosen;
}

// Under several workers the chief's path decides, also when it is "" (nothing to restore) and another
// worker, without a shared file system, found none or another one: every worker takes part either way.
LoadStatus Checkpoint::restore(const std::string& save_path) { return impl_->restore_path(save_path, true); }
LoadStatus Checkpoint::read(const std::string& save_path) { return impl_->restore_path(save_path, false); }

LoadStatus Checkpoint::Impl::restore_path(const std::string& save_path, bool set_counter) {
  auto detail = std::make_shared<LoadStatus::Detail>();
  if (save_path.empty() && !comm()) return LoadStatus(detail);
  std::vector<std::string> candidates;
  if (!save_path.empty()) candidates.push_back(prefix_of(save_path));
  restore(candidates, set_counter, detail);
  return LoadStatus(detail);
}

// ---- the "checkpoint" index file (TF's CheckpointState as text) ----

namespace {

constexpr const char* kIndexName = "checkpoint";

struct IndexEntry {
  std::string prefix;  // as written: relative to the directory
  double timestamp = 0;
};
struct Index {
  std::vector<IndexEntry> all;  // oldest first; the last is the latest
  double last_preserved = 0;
};

std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump();  // TF's text format quotes like JSON for plain paths
}

// An index larger than this is not one a CheckpointManager wrote (that would be some 100000 checkpoints).
constexpr uintmax_t kMaxIndexBytes = 16 << 20;

// TF's CheckpointState text: "key: value" lines. Parsed by hand, not with std::regex, which recurses per
// character: a damaged index with a long line must not exhaust the stack.
std::optional<Index> read_index(const std::string& directory) {
  const fs::path file = fs::path(directory) / kIndexName;
  std::error_code ec;
  if (const uintmax_t size = fs::file_size(file, ec); !ec && size > kMaxIndexBytes) {
    log(LogLevel::warning, "ignoring ", file.string(), ": ", size,
        " bytes is no checkpoint index; scanning the directory");
    return std::nullopt;
  }
  std::ifstream in(file);
  if (!in) return std::nullopt;
  Index index;
  std::string latest;
  std::vector<std::string> paths;
  std::vector<double> stamps;
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon), " \t\r"), value = trim(line.substr(colon + 1), " \t\r");
    try {
      if (key == "model_checkpoint_path") latest = nlohmann::json::parse(value).get<std::string>();
      if (key == "all_model_checkpoint_paths") paths.push_back(nlohmann::json::parse(value).get<std::string>());
      if (key == "all_model_checkpoint_timestamps") stamps.push_back(std::stod(value));
      if (key == "last_preserved_timestamp") index.last_preserved = std::stod(value);
    } catch (const std::exception&) {
      log(LogLevel::warning, "ignoring a malformed line of ", file.string(), ": ", line.substr(0, 80),
          line.size() > 80 ? "..." : "");
    }
  }
  if (paths.empty() && !latest.empty()) paths.push_back(latest);
  if (!latest.empty() && (paths.empty() || paths.back() != latest)) {
    std::erase(paths, latest);
    paths.push_back(latest);
  }
  for (size_t i = 0; i < paths.size(); ++i) index.all.push_back({paths[i], i < stamps.size() ? stamps[i] : 0});
  return index;
}

std::string absolute_prefix(const std::string& directory, const std::string& prefix) {
  return fs::path(prefix).is_absolute() ? prefix : (fs::path(directory) / prefix).string();
}

void write_index(const std::string& directory, const Index& index) {
  std::string text;
  if (!index.all.empty()) text += "model_checkpoint_path: " + quoted(index.all.back().prefix) + "\n";
  for (const IndexEntry& e : index.all) text += "all_model_checkpoint_paths: " + quoted(e.prefix) + "\n";
  for (const IndexEntry& e : index.all) text += make_message("all_model_checkpoint_timestamps: ", std::to_string(e.timestamp), "\n");
  text += "last_preserved_timestamp: " + std::to_string(index.last_preserved) + "\n";
  write_file_atomically((fs::path(directory) / kIndexName).string(), text);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "<name>-<n>.safetensors" files in the directory, oldest (smallest n) first: what an index that was lost
// or damaged would have listed.
std::vector<IndexEntry> scan_directory(const std::string& directory, const std::string& name) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  const std::regex re(std::regex_replace(name, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") + R"(-(\d+)\.safetensors)");
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    std::smatch m;
    const std::string file = entry.path().filename().string();
    int64_t n = 0;  // a number past int64 is no file a manager wrote
    if (std::regex_match(file, m, re) &&
        std::from_chars(&*m[1].first, &*m[1].first + m[1].length(), n).ec == std::errc())
      found.emplace_back(n, prefix_of(file));
  }
  std::sort(found.begin(), found.end());
  std::vector<IndexEntry> out;
  for (auto& [n, prefix] : found) out.push_back({prefix, 0});
  return out;
}

void add_to_index(const std::string& prefix) {
  const fs::path path(prefix);
  const std::string directory = path.has_parent_path() ? path.parent_path().string() : ".";
  const std::string relative = path.filename().string();
  Index index = read_index(directory).value_or(Index{});
  std::erase_if(index.all, [&](const IndexEntry& e) { return e.prefix == relative; });
  index.all.push_back({relative, now_seconds()});
  if (index.last_preserved == 0) index.last_preserved = index.all.back().timestamp;
  write_index(directory, index);
}

}  // namespace

std::optional<std::string> latest_checkpoint(const std::string& directory) {
  std::optional<Index> index = read_index(directory);
  if (!index || index->all.empty()) return std::nullopt;
  const std::string prefix = absolute_prefix(directory, index->all.back().prefix);
  std::error_code ec;
  if (!fs::exists(file_of(prefix), ec)) return std::nullopt;
  return prefix;
}

// ---- checkpoint manager ----

struct CheckpointManager::Impl {
  Checkpoint checkpoint;  // a handle on the user's checkpoint's state: it may be moved after this is made
  std::string directory;
  CheckpointManagerOptions options;
  std::mutex mutex;  // the writer thread updates the index
  Index index;
  std::optional<int64_t> last_saved_step;

  Impl(const Checkpoint& c, std::string dir, CheckpointManagerOptions o)
      : checkpoint(c.impl_), directory(std::move(dir)), options(std::move(o)) {}

  // After a new checkpoint is durable: index it, then prune, so an index never names a missing file.
  void commit(const std::string& relative) {
    std::vector<std::string> doomed;
    Index snapshot;
    {
      std::lock_guard lock(mutex);
      const double now = now_seconds();
      std::erase_if(index.all, [&](const IndexEntry& e) { return e.prefix == relative; });
      index.all.push_back({relative, now});
      while (options.max_to_keep && static_cast<int>(index.all.size()) > *options.max_to_keep) {
        IndexEntry old = index.all.front();
        index.all.erase(index.all.begin());
        if (options.keep_checkpoint_every_n_hours &&
            old.timestamp - index.last_preserved >= *options.keep_checkpoint_every_n_hours * 3600.0) {
          index.last_preserved = old.timestamp;  // kept on disk, no longer managed
          continue;
        }
        doomed.push_back(old.prefix);
      }
      snapshot = index;
    }
    write_index(directory, snapshot);
    for (const std::string& prefix : doomed) {
      std::error_code ec;
      fs::remove(file_of(absolute_prefix(directory, prefix)), ec);
    }
  }
};

CheckpointManager::CheckpointManager(Checkpoint& checkpoint, std::string directory, CheckpointManagerOptions options)
    : impl_(std::make_shared<Impl>(checkpoint, std::move(directory), std::move(options))) {
  LS_CHECK(!impl_->directory.empty(), ValueError, "CheckpointManager needs a directory");
  LS_CHECK(!impl_->options.max_to_keep || *impl_->options.max_to_keep >= 1, ValueError,
           "max_to_keep must be at least 1 (or nullopt to keep all), got ", *impl_->options.max_to_keep);
  LS_CHECK(!impl_->options.checkpoint_interval || impl_->options.step_counter, ValueError,
           "checkpoint_interval needs a step_counter to measure it");
  if (!checkpoint.is_chief()) return;  // only the chief's directory matters
  std::error_code ec;
  fs::create_directories(impl_->directory, ec);
  LS_CHECK(!ec, Error, "cannot create checkpoint directory ", impl_->directory, ": ", ec.message());
  check_writable((fs::path(impl_->directory) / kIndexName).string(), "checkpoint index file");
  // Temporary files of writes that a crash interrupted ("ckpt-7.safetensors.tmp.<pid>.<n>"): never valid.
  for (const auto& entry : fs::directory_iterator(impl_->directory, ec)) {
    const std::string file = entry.path().filename().string();
    if ((file.starts_with(impl_->options.checkpoint_name + "-") && file.find(std::string(kSuffix) + ".tmp.") != std::string::npos) ||
        file.starts_with(std::string(kIndexName) + ".tmp."))
      fs::remove(entry.path(), ec);
  }
  std::optional<Index> index = read_index(impl_->directory);
  Index found;
  if (index) {
    for (const IndexEntry& e : index->all)
      if (fs::exists(file_of(absolute_prefix(impl_->directory, e.prefix)), ec)) found.all.push_back(e);
    found.last_preserved = index->last_preserved;
  }
  if (found.all.empty()) {
    found.all = scan_directory(impl_->directory, impl_->options.checkpoint_name);
  } else if (!impl_->options.keep_checkpoint_every_n_hours) {
    // Numbered files the index does not list were left by a crash (after a file's rename but before its
    // indexing, or after indexing but before pruning an old one): never restored nor pruned, they would
    // outlive the run and keep delete_checkpoints from removing the directory. Files kept every n hours are
    // unlisted too, hence the condition.
    const auto path = [&](const IndexEntry& e) { return absolute_prefix(impl_->directory, e.prefix); };
    for (const IndexEntry& e : scan_directory(impl_->directory, impl_->options.checkpoint_name))
      if (std::none_of(found.all.begin(), found.all.end(), [&](const IndexEntry& f) { return path(f) == path(e); }))
        fs::remove(file_of(path(e)), ec);
  }
  if (found.last_preserved == 0) found.last_preserved = now_seconds();  // TF: the manager's creation
  impl_->index = std::move(found);
}

CheckpointManager::~CheckpointManager() {
  // The background write may still call commit(); it holds impl_ alive through its own reference.
}

std::optional<std::string> CheckpointManager::save(std::optional<int64_t> checkpoint_number, bool check_interval) {
  Impl& m = *impl_;
  if (check_interval && m.options.checkpoint_interval) {
    const int64_t step = m.options.step_counter();
    if (m.last_saved_step && step - *m.last_saved_step < *m.options.checkpoint_interval) return std::nullopt;
    m.last_saved_step = step;
  }
  Checkpoint::Impl& c = *m.checkpoint.impl_;
  ++c.save_counter;
  const int64_t n = checkpoint_number.value_or(c.save_counter);
  const std::string relative = make_message(m.options.checkpoint_name, "-", n);
  const std::string prefix = (fs::path(m.directory) / relative).string();
  std::shared_ptr<Impl> keep = impl_;
  c.write(prefix, [keep, relative] { keep->commit(relative); });
  return prefix;
}

std::optional<std::string> CheckpointManager::restore_or_initialize() {
  std::vector<std::string> candidates;
  {
    std::lock_guard lock(impl_->mutex);
    for (auto it = impl_->index.all.rbegin(); it != impl_->index.all.rend(); ++it)
      candidates.push_back(absolute_prefix(impl_->directory, it->prefix));
  }
  std::shared_ptr<LoadStatus::Detail> detail;
  const std::string chosen = impl_->checkpoint.impl_->restore(candidates, true, detail);
  if (chosen.empty()) {
    if (impl_->options.init_fn) impl_->options.init_fn();
    return std::nullopt;
  }
  LoadStatus(detail).expect_partial();
  if (impl_->options.step_counter) impl_->last_saved_step = impl_->options.step_counter();
  return chosen;
}

std::optional<std::string> CheckpointManager::latest_checkpoint() const {
  std::lock_guard lock(impl_->mutex);
  if (impl_->index.all.empty()) return std::nullopt;
  return absolute_prefix(impl_->directory, impl_->index.all.back().prefix);
}

std::vector<std::string> CheckpointManager::checkpoints() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::string> out;
  for (const IndexEntry& e : impl_->index.all) out.push_back(absolute_prefix(impl_->directory, e.prefix));
  return out;
}

const std::string& CheckpointManager::directory() const { return impl_->directory; }

void CheckpointManager::sync() { impl_->checkpoint.sync(); }

void CheckpointManager::delete_checkpoints() {
  sync();
  if (!impl_->checkpoint.is_chief()) return;
  std::error_code ec;
  for (const std::string& prefix : checkpoints()) fs::remove(file_of(prefix), ec);
  fs::remove(fs::path(impl_->directory) / kIndexName, ec);
  fs::remove(impl_->directory, ec);  // only when empty
  std::lock_guard lock(impl_->mutex);
  impl_->index = {};
}

Checkpoint& CheckpointManager::checkpoint() const { return impl_->checkpoint; }

}  // namespace lockstep::train
