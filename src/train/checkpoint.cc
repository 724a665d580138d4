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
#include <tuple>

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
const std::vector<std::string>& LoadStatus::unused() const { return d_->unused; }
void LoadStatus::mark_restored(const std::string& entry) { std::erase(d_->unused, entry); }

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
  // broadcasts the bytes) and whose saved state fits the objects on every worker; returns its prefix, or ""
  // when there is no candidate. When every candidate fails it throws the last one's error: starting afresh
  // would silently discard the job's progress.
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
  nlohmann::json mine = nlohmann::json::object();  // this worker's own state of each object, gathered below
  for (const auto& [name, object] : objects) {
    nlohmann::json own = object->save_worker();
    if (!own.is_null()) mine[name] = own;
    if (!chief()) continue;  // the shared state is the same on every worker, and only the chief writes
    TrackableState state = object->save();
    // The run's position, readable without parsing the objects: fit's, the optimizer's, or scalar Variables
    // named as in TF's tutorials.
    for (const nlohmann::json* v : {&state.values, &own})
      for (const char* key : {"epoch", "step_in_epoch", "iterations"})
        if (v->is_object() && v->contains(key))
          snap.metadata[key == std::string("iterations") ? "step" : key] = (*v)[key].dump();
    if ((name == "epoch" || name == "step_in_epoch") && state.values.contains("scalar"))
      snap.metadata[name] = make_message(static_cast<int64_t>(state.values["scalar"].get<double>()));
    for (NamedTensor& t : state.tensors)
      snap.tensors.push_back({t.name.empty() ? name : name + "/" + t.name, std::move(t.tensor)});
    values[name] = std::move(state.values);
  }
  if (!mine.empty()) {
    std::vector<nlohmann::json> all;
    for (const std::string& text : distribute::all_gather_bytes(comm(), mine.dump(), kCollective))
      all.push_back(nlohmann::json::parse(text));
    nlohmann::json per_worker = nlohmann::json::object();
    for (const auto& item : mine.items()) {
      nlohmann::json each = nlohmann::json::array();
      for (const nlohmann::json& worker : all) each.push_back(worker.at(item.key()));
      per_worker[item.key()] = std::move(each);
    }
    snap.metadata["per_worker"] = per_worker.dump();
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
  // Version 1 kept per-worker state inside the objects' values ({"per_worker": [...]}); version 2 beside them.
  const std::string& version = meta("format_version");
  LS_CHECK(version == "1" || version == std::to_string(kCheckpointFormatVersion), DataLossError, "checkpoint file ",
           path, " has format version ", version, " but this lockstep reads versions 1 to ", kCheckpointFormatVersion,
           "; restore it with the lockstep that wrote it");
  nlohmann::json values, per_worker = nlohmann::json::object();
  int64_t counter = 0;
  try {
    values = nlohmann::json::parse(meta("objects"));
    if (auto it = file.metadata.find("per_worker"); it != file.metadata.end())
      per_worker = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    throw DataLossError(make_message("checkpoint file ", path, " has unreadable metadata (", e.what(), ")"));
  }
  LS_CHECK(values.is_object() && per_worker.is_object(), DataLossError, "checkpoint file ", path,
           " has unreadable metadata (its \"objects\" or \"per_worker\" are not a JSON object)");
  if (version == "1")
    for (auto& item : values.items())
      if (item.value().is_object() && item.value().contains("per_worker")) {
        per_worker[item.key()] = item.value()["per_worker"];
        item.value() = nlohmann::json::object();
      }
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
      match = object->restore(state);
      if (per_worker.contains(name)) {
        const nlohmann::json& each = per_worker[name];
        LS_CHECK(each.is_array() && !each.empty(), DataLossError, "checkpoint file ", path,
                 ": the per-worker state of '", name, "' is not a list with one entry per worker");
        RestoreMatch own = object->restore_worker({each.begin(), each.end()}, world_size(), rank());
        match.missing.insert(match.missing.end(), own.missing.begin(), own.missing.end());
        match.unused.insert(match.unused.end(), own.unused.begin(), own.unused.end());
      } else if (!object->save_worker().is_null()) {
        match.missing.push_back("(its per-worker state)");
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
  for (const nlohmann::json* saved : {&values, &per_worker})
    for (const auto& item : saved->items())  // not a structured binding: clang 14 cannot capture one
      if (std::none_of(objects.begin(), objects.end(), [&](const auto& o) { return o.first == item.key(); }) &&
          std::find(detail.unused.begin(), detail.unused.end(), item.key()) == detail.unused.end())
        detail.unused.push_back(item.key());
  if (set_counter) save_counter = counter;
  metadata = file.metadata;
}

std::string Checkpoint::Impl::restore(const std::vector<std::string>& candidates, bool set_counter,
                                      std::shared_ptr<LoadStatus::Detail>& detail) {
  finish_write();
  using distribute::ReduceOp;
  size_t next = 0;  // the chief's next candidate
  for (;;) {
    // The chief finds the next candidate that reads and parses; the others learn which and get its bytes.
    std::string chosen, bytes;
    std::optional<SafetensorsFile> parsed;
    distribute::on_chief(
        comm(),
        [&] {
          for (; next < candidates.size(); ++next) {
            const std::string file = file_of(candidates[next]);
            try {
              bytes = read_file(file);
              parsed = parse_safetensors(bytes, file);
              chosen = candidates[next++];
              return;
            } catch (const std::exception& e) {
              if (next + 1 < candidates.size()) {
                log(LogLevel::warning, e.what(), "; falling back to ", file_of(candidates[next + 1]));
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
    auto attempt = std::make_shared<LoadStatus::Detail>();
    attempt->path = chosen;
    std::exception_ptr failed;
    try {
      apply(*parsed, file, set_counter, *attempt);
    } catch (const DataLossError&) {
      failed = std::current_exception();
    } catch (const ValueError&) {
      failed = std::current_exception();
    }
    // A saved state that is malformed (damage no CRC covers) or does not fit these objects (another model's
    // checkpoint), on any worker: all of them move on to the next candidate together, or raise that error.
    if (distribute::agree(comm(), failed ? 1 : 0, ReduceOp::MAX, kCollective) != 0) {
      attempt->checked = true;  // discarded: nothing to report about its unused entries
      const bool more = distribute::agree(comm(), chief() && next < candidates.size(), ReduceOp::MAX, kCollective);
      if (!more) distribute::raise_if_any(comm(), failed, kCollective);
      std::string why;
      for (const std::string& m : distribute::all_gather_bytes(comm(), failed ? message_of(failed) : "", kCollective))
        if (why.empty()) why = m;
      if (chief()) log(LogLevel::warning, why, "; falling back to ", file_of(candidates[next]));
      continue;
    }
    detail = std::move(attempt);
    // Every worker restored from the same bytes; checking the counter across workers catches a worker that
    // took another path through this code.
    LS_CHECK(distribute::agree(comm(), save_counter, ReduceOp::MAX, kCollective) ==
                 distribute::agree(comm(), save_counter, ReduceOp::MIN, kCollective),
             RuntimeError, "workers restored different checkpoints from ", file, "; restart the job");
    return chosen;
  }
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

std::string index_file(const std::string& directory) {
  return (fs::path(directory) / kIndexName).string();
}

// An index larger than this is not one a CheckpointManager wrote (that would be some 100000 checkpoints).
constexpr uintmax_t kMaxIndexBytes = 16 << 20;

// TF's CheckpointState text: "key: value" lines. Parsed by hand, not with std::regex, which recurses per
// character: a damaged index with a long line must not exhaust the stack. nullopt when there is none (or it
// cannot be read, which is logged); each entry once, the latest (model_checkpoint_path) last.
std::optional<Index> read_index(const std::string& directory) {
  const std::string file = index_file(directory);
  std::error_code ec;
  if (const uintmax_t size = fs::file_size(file, ec); !ec && size > kMaxIndexBytes) {
    log(LogLevel::warning, "ignoring ", file, ": ", size, " bytes is no checkpoint index; scanning the directory");
    return std::nullopt;
  }
  std::ifstream in(file);
  if (!in) {
    if (fs::exists(file, ec)) log(LogLevel::warning, "ignoring ", file, ": it cannot be read; scanning the directory");
    return std::nullopt;
  }
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
      std::string shown = line.substr(0, 80);  // a damaged index may hold any bytes: no control codes on stderr
      for (char& c : shown)
        if (c < ' ' || c == '\x7f') c = '?';
      log(LogLevel::warning, "ignoring a malformed line of ", file, ": ", shown, line.size() > 80 ? "..." : "");
    }
  }
  const auto named = [&](const std::string& prefix) {
    return std::find_if(index.all.begin(), index.all.end(), [&](const IndexEntry& e) { return e.prefix == prefix; });
  };
  for (size_t i = 0; i < paths.size(); ++i)
    if (named(paths[i]) == index.all.end()) index.all.push_back({paths[i], i < stamps.size() ? stamps[i] : 0});
  // TF writes the latest last; an index edited to roll back names an older one, listed anywhere or not at all.
  if (!latest.empty()) {
    auto it = named(latest);
    const IndexEntry entry = it == index.all.end() ? IndexEntry{latest, 0} : *it;
    if (it != index.all.end()) index.all.erase(it);
    index.all.push_back(entry);
  }
  return index;
}

std::string absolute_prefix(const std::string& directory, const std::string& prefix) {
  return fs::path(prefix).is_absolute() ? prefix : (fs::path(directory) / prefix).string();
}

// The file name of an index entry that names a checkpoint of `directory` itself ("ckpt-3", "./ckpt-3", its
// absolute path), or nullopt for one elsewhere: an index speaks only for its own directory.
std::optional<std::string> name_in(const std::string& directory, const std::string& entry) {
  if (entry.empty() || entry.find('\0') != std::string::npos) return std::nullopt;
  const fs::path path = fs::absolute(fs::path(directory) / entry).lexically_normal();
  if (!path.has_filename() || path.parent_path() != (fs::absolute(directory) / "").lexically_normal().parent_path())
    return std::nullopt;
  return path.filename().string();
}

void write_index(const std::string& directory, const Index& index) {
  std::string text;
  if (!index.all.empty()) text += "model_checkpoint_path: " + quoted(index.all.back().prefix) + "\n";
  for (const IndexEntry& e : index.all) text += "all_model_checkpoint_paths: " + quoted(e.prefix) + "\n";
  for (const IndexEntry& e : index.all)
    text += make_message("all_model_checkpoint_timestamps: ", std::to_string(e.timestamp), "\n");
  text += "last_preserved_timestamp: " + std::to_string(index.last_preserved) + "\n";
  write_file_atomically(index_file(directory), text);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The names (less the suffix) of the "<name>-<n>.safetensors" files in the directory, of any name when `name` is
// empty: what an index that was lost or damaged would have listed.
std::vector<std::string> scan_directory(const std::string& directory, const std::string& name) {
  const std::string base =
      name.empty() ? ".+" : std::regex_replace(name, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)");
  const std::regex re(base + R"(-\d+\.safetensors)");
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory, ec))
    if (const std::string file = entry.path().filename().string(); std::regex_match(file, re))
      found.push_back(prefix_of(file));
  return found;
}

// A non-negative decimal integer, or -1.
int64_t parse_count(const std::string& text) {
  int64_t n = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return ec == std::errc() && end == text.data() + text.size() && n >= 0 ? n : -1;
}

// A checkpoint file as its header describes it: enough to order a directory's checkpoints by their own content
// (the newest has the largest save_counter, then step) without reading their tensors, and never by file times.
struct Found {
  std::string prefix;  // the file name less the suffix
  int64_t save_counter = -1, step = -1;
  std::string problem;  // why it cannot be restored; empty while its header reads
  // Restorable ones first, then by content; the number in the name breaks ties.
  auto rank() const {
    return std::tuple(problem.empty(), save_counter, step, parse_count(prefix.substr(prefix.rfind('-') + 1)));
  }
};

// Reads the header of a checkpoint of `directory`. Given this program's object names, a checkpoint that holds
// none of them is another program's: a problem too.
Found inspect(const std::string& directory, const std::string& prefix, const std::vector<std::string>& objects) {
  Found f;
  f.prefix = prefix;
  const std::string file = file_of(absolute_prefix(directory, prefix));
  try {
    const std::map<std::string, std::string> meta = load_safetensors_metadata(file);
    const auto value = [&](const char* key) {
      auto it = meta.find(key);
      return it == meta.end() ? std::string() : it->second;
    };
    f.save_counter = parse_count(value("save_counter"));
    f.step = parse_count(value("step"));
    const nlohmann::json saved = nlohmann::json::parse(value("objects"), nullptr, false);
    std::vector<std::string> names;
    if (saved.is_object())
      for (const auto& item : saved.items()) names.push_back(item.key());
    if (value("format") != kCheckpointFormat)
      f.problem = make_message("checkpoint file ", file, " is not a lockstep checkpoint (its metadata has no format '",
                               kCheckpointFormat, "')");
    else if (f.save_counter < 0 || !saved.is_object())
      f.problem = make_message("checkpoint file ", file, " has unreadable metadata (its save_counter or objects)");
    else if (!objects.empty() &&
             std::none_of(objects.begin(), objects.end(), [&](const std::string& o) { return saved.contains(o); }))
      f.problem = make_message("checkpoint file ", file, " holds objects (", list(names),
                               "), none of this checkpoint's (", list(objects), "): it is another program's");
  } catch (const std::exception& e) {
    f.problem = e.what();
  }
  return f;
}

// Why a checkpoint file cannot be restored, or "" when it can: it opens, parses and passes every CRC32C. The last
// file found whole is remembered with its size and modification time, so that a poller asking again about an
// unchanged file (the sidecar evaluator, every 200 ms) does not read it whole each time.
std::string damage_of(const std::string& file) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(file, ec);
  const fs::file_time_type time = fs::last_write_time(file, ec);
  const auto stamp = std::tuple(file, size, time);
  static std::mutex mutex;
  static std::optional<std::remove_const_t<decltype(stamp)>> last_whole;
  if (!ec) {
    std::lock_guard lock(mutex);
    if (last_whole == stamp) return "";
  }
  try {
    load_safetensors(file);
  } catch (const std::exception& e) {
    return e.what();
  }
  std::lock_guard lock(mutex);
  if (!ec) last_whole = stamp;
  return "";
}

// Newest first by content; those whose header fails come last.
std::vector<Found> newest_first(std::vector<Found> found) {
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.rank() > b.rank(); });
  return found;
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
  const std::optional<Index> index = read_index(directory);
  const std::string file = index_file(directory);
  std::string distrust;  // why the index's answer is not the answer
  std::optional<std::string> named;
  if (!index) {
    distrust = make_message("there is no checkpoint index ", file);
  } else if (index->all.empty()) {
    distrust = make_message("checkpoint index ", file, " names no checkpoint (it is empty or damaged)");
  } else if (named = name_in(directory, index->all.back().prefix); !named) {
    distrust =
        make_message("checkpoint index ", file, " names ", index->all.back().prefix, ", which is not in ", directory);
  } else {
    const std::string prefix = absolute_prefix(directory, *named);
    std::string problem = inspect(directory, *named, {}).problem;
    if (problem.empty()) problem = damage_of(file_of(prefix));
    if (problem.empty()) return prefix;
    distrust = make_message("checkpoint index ", file, " names ", *named, ", which cannot be restored: ", problem);
  }
  // The index cannot be trusted: the newest valid checkpoint on disk, as a restore falls back to it.
  std::vector<Found> found;
  for (const std::string& prefix : scan_directory(directory, ""))
    if (prefix != named) found.push_back(inspect(directory, prefix, {}));
  if (!index && found.empty()) return std::nullopt;  // nothing saved here yet: TF's answer, without a word
  for (const Found& f : newest_first(std::move(found))) {
    const std::string prefix = absolute_prefix(directory, f.prefix);
    const std::string problem = f.problem.empty() ? damage_of(file_of(prefix)) : f.problem;
    if (problem.empty()) {
      log(LogLevel::warning, distrust, "; using ", prefix, ", the newest valid checkpoint in ", directory);
      return prefix;
    }
    log(LogLevel::warning, problem, "; skipping it");
  }
  log(LogLevel::warning, distrust, "; there is no valid checkpoint in ", directory, " either");
  return std::nullopt;
}

// ---- checkpoint manager ----

struct CheckpointManager::Impl {
  Checkpoint checkpoint;  // a handle on the user's checkpoint's state: it may be moved after this is made
  std::string directory;
  CheckpointManagerOptions options;
  std::mutex mutex;  // the writer thread updates the index
  Index index;       // what this manager may delete: what the index it found listed, and what it saved
  std::vector<std::string> restorable;  // newest first, the order restore_or_initialize tries; the first is whole
  std::string unrestorable;             // why not, when the directory holds checkpoints and none of them restores
  std::optional<int64_t> last_saved_step;

  Impl(const Checkpoint& c, std::string dir, CheckpointManagerOptions o)
      : checkpoint(c.impl_), directory(std::move(dir)), options(std::move(o)) {}

  // After a new checkpoint is durable: index it, then prune, so an index never names a missing file.
  void commit(const std::string& relative) {
    std::vector<IndexEntry> doomed;
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
        doomed.push_back(old);
      }
      snapshot = index;
      std::erase(restorable, absolute_prefix(directory, relative));
      for (const IndexEntry& e : doomed) std::erase(restorable, absolute_prefix(directory, e.prefix));
      restorable.insert(restorable.begin(), absolute_prefix(directory, relative));
    }
    // The index lists the doomed until they are deleted: a crash in between leaves them listed, for the next
    // manager to prune, rather than unlisted, where no manager deletes them.
    if (!doomed.empty()) {
      Index listing_doomed = snapshot;
      listing_doomed.all.insert(listing_doomed.all.begin(), doomed.begin(), doomed.end());
      write_index(directory, listing_doomed);
    }
    for (const IndexEntry& e : doomed) {
      std::error_code ec;
      fs::remove(file_of(absolute_prefix(directory, e.prefix)), ec);
    }
    write_index(directory, snapshot);
  }

  std::optional<std::string> adopt_index();
  void survey();
};

// Takes as this manager's the entries of the directory's index that name files of the directory that exist, each
// once, and returns the name of the index's latest when it is one of them. What it passes over it says.
std::optional<std::string> CheckpointManager::Impl::adopt_index() {
  const std::string file = index_file(directory);
  const std::optional<Index> read = read_index(directory);
  std::optional<std::string> latest;
  if (read) {
    index.last_preserved = read->last_preserved;
    for (const IndexEntry& e : read->all) {
      const std::optional<std::string> name = name_in(directory, e.prefix);
      std::error_code ec;
      if (!name) {
        log(LogLevel::warning, file, " lists ", e.prefix, ", which is not in ", directory,
            ": this manager neither restores nor deletes it");
      } else if (const std::string path = file_of(absolute_prefix(directory, *name)); !fs::exists(path, ec)) {
        log(LogLevel::warning, file, " lists ", e.prefix, ", but its file ", path,
            " is missing: dropped from the list");
      } else {
        std::erase_if(index.all, [&](const IndexEntry& f) { return f.prefix == *name; });
        index.all.push_back({*name, e.timestamp});
        if (&e == &read->all.back()) latest = name;
      }
    }
  }
  if (index.last_preserved == 0) index.last_preserved = now_seconds();  // TF: the manager's creation
  return latest;
}

// At start-up, on the chief: what to manage and in which order to restore. Nothing is deleted here: an index
// that lost lines, or was edited to roll back, must not cost a checkpoint, so what it does not list is kept,
// never deleted by this manager, and said.
void CheckpointManager::Impl::survey() {
  std::error_code ec;
  const bool has_index = fs::exists(index_file(directory), ec);  // though perhaps unreadable
  const std::optional<std::string> latest = adopt_index();
  std::vector<std::string> objects;
  for (const auto& named : checkpoint.impl_->objects) objects.push_back(named.first);
  std::map<std::string, Found> found;
  for (const IndexEntry& e : index.all) found.emplace(e.prefix, inspect(directory, e.prefix, objects));
  std::vector<std::string> unlisted;
  for (const std::string& name : scan_directory(directory, options.checkpoint_name))
    if (!found.count(name)) {
      unlisted.push_back(name);
      found.emplace(name, inspect(directory, name, objects));
    }
  std::sort(unlisted.begin(), unlisted.end(),
            [&](const std::string& a, const std::string& b) { return found.at(a).rank() < found.at(b).rank(); });
  const std::string index_path = index_file(directory);
  if (!unlisted.empty())  // files kept every n hours are unlisted on purpose
    log(options.keep_checkpoint_every_n_hours ? LogLevel::info : LogLevel::warning,
        has_index ? make_message(index_path, " does not list ")
                  : make_message("there is no checkpoint index ", index_path, ", but ", directory, " holds "),
        unlisted.size(), " checkpoint(s)", has_index ? " of " + directory : "", " (", list(unlisted),
        "): kept, and never deleted by this manager; ",
        latest ? "restored only when the index's latest is not valid (a save of the same number replaces one)"
               : "the newest valid one is restored");
  // Oldest first, as pruning takes them, whatever order the index gave; its latest stays last.
  std::sort(index.all.begin(), index.all.end() - (latest ? 1 : 0), [&](const IndexEntry& a, const IndexEntry& b) {
    return found.at(a.prefix).rank() < found.at(b.prefix).rank();
  });
  // The index's latest first, as TF restores it (an index edited to name an older one rolls back), then every
  // other checkpoint here, listed or not, newest first by its own metadata. The first is checked whole now, so
  // that latest_checkpoint() names one that restores; each skipped is said, with why.
  std::vector<Found> order;
  for (const auto& item : found)
    if (item.first != latest) order.push_back(item.second);
  order = newest_first(std::move(order));
  if (latest) order.insert(order.begin(), found.at(*latest));
  std::vector<std::string> problems;
  bool fell_back = false;  // the newest restorable is not the first in order
  for (const Found& f : order) {
    const std::string prefix = absolute_prefix(directory, f.prefix);
    std::string problem = f.problem;
    if (problem.empty() && restorable.empty()) problem = damage_of(file_of(prefix));
    if (!problem.empty()) problems.push_back(problem);
    else restorable.push_back(prefix);
    fell_back |= restorable.empty();
  }
  // Where none restores, the error restore_or_initialize() raises names the newest's problem, in one line.
  if (restorable.empty() && !problems.empty())
    unrestorable = make_message(problems.front(), " (none of the ", found.size(), " checkpoints in ", directory,
                                " can be restored; move the directory away to start afresh)");
  for (size_t i = restorable.empty() ? 1 : 0; i < problems.size(); ++i)
    log(LogLevel::warning, problems[i], "; skipping it");
  if (fell_back && !restorable.empty())
    log(LogLevel::warning, "the newest valid checkpoint in ", directory, " is ", restorable.front());
}

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
    if ((file.starts_with(impl_->options.checkpoint_name + "-") &&
         file.find(std::string(kSuffix) + ".tmp.") != std::string::npos) ||
        file.starts_with(std::string(kIndexName) + ".tmp."))
      fs::remove(entry.path(), ec);
  }
  impl_->survey();
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
  sync();  // a background save in flight is the newest candidate
  Checkpoint::Impl& c = *impl_->checkpoint.impl_;
  std::vector<std::string> candidates;
  std::string unrestorable;
  {
    std::lock_guard lock(impl_->mutex);
    candidates = impl_->restorable;
    unrestorable = impl_->unrestorable;
  }
  // Checkpoints here and none restorable: starting afresh would silently discard the job's progress (and
  // its saves would prune the damaged files).
  distribute::on_chief(
      c.comm(), [&] { LS_CHECK(!candidates.empty() || unrestorable.empty(), DataLossError, unrestorable); },
      kCollective);
  std::shared_ptr<LoadStatus::Detail> detail;
  const std::string chosen = c.restore(candidates, true, detail);
  if (chosen.empty()) {
    if (impl_->options.init_fn) impl_->options.init_fn();
    return std::nullopt;
  }
  LoadStatus(detail).expect_partial();
  {
    std::lock_guard lock(impl_->mutex);  // latest_checkpoint() names what was restored
    auto it = std::find(impl_->restorable.begin(), impl_->restorable.end(), chosen);
    if (it != impl_->restorable.end()) impl_->restorable.erase(impl_->restorable.begin(), it);
  }
  if (impl_->options.step_counter) impl_->last_saved_step = impl_->options.step_counter();
  return chosen;
}

std::optional<std::string> CheckpointManager::latest_checkpoint() const {
  std::lock_guard lock(impl_->mutex);
  if (impl_->restorable.empty()) return std::nullopt;
  return impl_->restorable.front();
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
  impl_->restorable.clear();
  impl_->unrestorable.clear();
}

Checkpoint& CheckpointManager::checkpoint() const { return impl_->checkpoint; }

}  // namespace lockstep::train
