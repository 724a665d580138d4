// Checkpoint and CheckpointManager on one worker: what is saved and restored, load statuses, numbering,
// TF's index file, pruning only after the new file is durable and only of what the index listed, asynchronous
// writes, detection of truncated, bit-flipped, emptied, foreign and missing files, and indexes that lie, with
// fallback to the newest valid checkpoint and a warning naming each one skipped.
#include "lockstep/train/checkpoint.h"

#include <signal.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>

#include "../two_workers.h"
#include "lockstep/tensor/ops.h"
#include "lockstep/train/preemption.h"

namespace lockstep::train {
namespace {

namespace fs = std::filesystem;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lockstep_checkpoint_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

Variable scalar_var(double v, const std::string& name) {
  return Variable(scalar(v, DType::int64), {.name = name, .trainable = false});
}
Variable vector_var(std::vector<float> v, const std::string& name) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Variable(from_vector<float>(std::move(v), {n}), {.name = name});
}

TEST_F(CheckpointTest, SaveAndRestoreVariablesAndAnIteratorPosition) {
  Variable epoch = scalar_var(2, "epoch"), w = vector_var({1, 2, 3}, "w");
  data::Dataset ds = data::Dataset::range(0, 100).shuffle(100, 3).batch(4);
  data::Iterator it = ds.make_iterator(0);
  for (int i = 0; i < 5; ++i) it.next();
  Checkpoint ckpt({{"epoch", epoch}, {"w", w}, {"iterator", it}});
  const std::string saved = ckpt.save(path("ckpt"));
  EXPECT_EQ(saved, path("ckpt-1"));
  EXPECT_TRUE(fs::exists(path("ckpt-1.safetensors")));
  EXPECT_EQ(ckpt.save_counter(), 1);
  const Tensor expected_next = it.next()->x();

  // A "new process": other objects, restored from the file.
  Variable epoch2 = scalar_var(0, "epoch"), w2 = vector_var({0, 0, 0}, "w");
  data::Iterator it2 = ds.make_iterator(0);
  Checkpoint again({{"epoch", epoch2}, {"w", w2}, {"iterator", it2}});
  again.restore(saved).assert_consumed();
  EXPECT_EQ(epoch2.value().item<int64_t>(), 2);
  EXPECT_EQ(w2.value().to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(it2.next()->x().to_vector<int64_t>(), expected_next.to_vector<int64_t>());
  EXPECT_EQ(again.save_counter(), 1);
  EXPECT_EQ(again.metadata().at("epoch"), "2");
  EXPECT_EQ(again.save(path("ckpt")), path("ckpt-2"));  // numbering continues from the restored counter
}

TEST_F(CheckpointTest, WriteAndReadLeaveTheCounterAlone) {
  Variable w = vector_var({5}, "w");
  Checkpoint ckpt({{"w", w}});
  EXPECT_EQ(ckpt.write(path("plain")), path("plain"));
  EXPECT_EQ(ckpt.save_counter(), 0);
  w.assign(from_vector<float>({9}, {1}));
  ckpt.read(path("plain.safetensors")).assert_consumed();  // the suffix may be given too
  EXPECT_EQ(w.value().to_vector<float>(), std::vector<float>{5});
}

TEST_F(CheckpointTest, LoadStatusAssertions) {
  Variable a = vector_var({1}, "a"), b = vector_var({2}, "b");
  const std::string saved = Checkpoint({{"a", a}, {"b", b}}).save(path("ckpt"));
  // Fewer objects than saved: existing objects matched, but not consumed.
  Variable a2 = vector_var({0}, "a");
  LoadStatus partial = Checkpoint({{"a", a2}}).restore(saved);
  EXPECT_NO_THROW(partial.assert_existing_objects_matched());
  EXPECT_THROW(partial.assert_consumed(), ValueError);
  partial.expect_partial();
  // An object the checkpoint knows nothing of.
  Variable c = vector_var({0}, "c");
  EXPECT_THROW(Checkpoint({{"a", a2}, {"c", c}}).restore(saved).assert_existing_objects_matched(), ValueError);
  // restore("") restores nothing, and says so when asked.
  EXPECT_THROW(Checkpoint({{"a", a2}}).restore("").assert_consumed(), ValueError);
  // A shape mismatch names the variable and both shapes.
  Variable wide = vector_var({0, 0}, "a");
  try {
    Checkpoint({{"a", wide}, {"b", b}}).restore(saved);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("has shape (1,)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Checkpoint({{"a", a}, {"a", b}}), ValueError);  // one name twice
  EXPECT_THROW(Checkpoint({{"a/b", a}}), ValueError);
}

TEST_F(CheckpointTest, MissingAndForeignFilesAreClearErrors) {
  Variable w = vector_var({1}, "w");
  Checkpoint ckpt({{"w", w}});
  EXPECT_THROW(ckpt.restore(path("nothing-7")), NotFoundError);
  save_safetensors(path("weights.safetensors"), {{"w", from_vector<float>({1}, {1})}});
  try {
    ckpt.restore(path("weights"));
    ADD_FAILURE() << "no error";
  } catch (const DataLossError& e) {
    EXPECT_NE(std::string(e.what()).find("not written by lockstep's Checkpoint"), std::string::npos) << e.what();
  }
}

// As TF's checkpoint.save: the prefix's directory is created, its parents too; only what cannot be created is an
// error, and it names that directory.
TEST_F(CheckpointTest, SaveCreatesThePrefixsDirectory) {
  Variable w = vector_var({4}, "w");
  Checkpoint ckpt({{"w", w}});
  const std::string saved = ckpt.save(path("training_checkpoints/run/ckpt"));
  EXPECT_TRUE(fs::exists(saved + ".safetensors"));
  EXPECT_EQ(latest_checkpoint(path("training_checkpoints/run")), saved);
  EXPECT_TRUE(fs::exists(ckpt.write(path("written/ckpt")) + ".safetensors"));
  std::ofstream(path("a_file")) << "x";
  try {
    ckpt.save(path("a_file/sub/ckpt"));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create directory " + path("a_file/sub")), std::string::npos) << e.what();
  }
}

// A checkpoint made inside a block (a strategy's scope) is used after it; its manager follows it.
TEST_F(CheckpointTest, ACheckpointMovesAndItsManagerKeepsWorking) {
  Variable w = vector_var({1, 2}, "w");
  Checkpoint outside({{"unused", vector_var({0}, "unused")}});
  std::optional<CheckpointManager> manager;
  {
    Checkpoint inside({{"w", w}});
    manager.emplace(inside, path("managed"));
    outside = std::move(inside);
  }
  Checkpoint moved(std::move(outside));
  EXPECT_EQ(moved.save(path("moved")), path("moved-1"));
  w.assign(from_vector<float>({3, 4}, {2}));
  EXPECT_EQ(manager->save(), path("managed/ckpt-2"));  // one save counter, shared
  w.assign(from_vector<float>({0, 0}, {2}));
  moved.restore(path("moved-1")).assert_consumed();
  EXPECT_EQ(w.value().to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(manager->restore_or_initialize(), path("managed/ckpt-2"));
  EXPECT_EQ(w.value().to_vector<float>(), (std::vector<float>{3, 4}));
}

// Damages a file the way disks and crashes do.
void truncate_file(const std::string& p) { fs::resize_file(p, fs::file_size(p) / 2); }
void flip_a_bit(const std::string& p) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-3, std::ios::end);
  char c;
  f.get(c);
  f.seekp(-3, std::ios::end);
  f.put(static_cast<char>(c ^ 0x10));
}
void empty_file(const std::string& p) { fs::resize_file(p, 0); }
void remove_file(const std::string& p) { fs::remove(p); }

// What `f` writes to stderr (the warnings it logs).
template <typename F>
std::string stderr_of(F&& f) {
  ::testing::internal::CaptureStderr();
  try {
    f();
  } catch (...) {
    ::testing::internal::GetCapturedStderr();
    throw;
  }
  return ::testing::internal::GetCapturedStderr();
}

class ManagerFallback : public CheckpointTest, public ::testing::WithParamInterface<void (*)(const std::string&)> {};

TEST_P(ManagerFallback, RestoresTheNewestValidCheckpoint) {
  Variable w = vector_var({0}, "w");
  Checkpoint ckpt({{"w", w}});
  CheckpointManager manager(ckpt, path("backup"), {.max_to_keep = 3});
  for (float v : {1.f, 2.f, 3.f}) {
    w.assign(from_vector<float>({v}, {1}));
    manager.save();
  }
  GetParam()(path("backup/ckpt-3.safetensors"));
  Variable w2 = vector_var({0}, "w");
  Checkpoint fresh({{"w", w2}});
  const std::string said = stderr_of([&] {
    CheckpointManager again(fresh, path("backup"), {.max_to_keep = 3});
    EXPECT_EQ(again.restore_or_initialize(), path("backup/ckpt-2"));
  });
  EXPECT_EQ(w2.value().to_vector<float>(), std::vector<float>{2});
  EXPECT_NE(said.find(path("backup/ckpt-3.safetensors")), std::string::npos) << said;  // a warning names it
}

INSTANTIATE_TEST_SUITE_P(Damage, ManagerFallback,
                         ::testing::Values(&truncate_file, &flip_a_bit, &empty_file, &remove_file));

// Ways a "checkpoint" index lies, done to a directory holding ckpt-1..4 (w = 1..4) and an index listing them all.
struct IndexDamage {
  const char* name;
  std::function<void(const fs::path& dir)> damage;
  float restores;            // the w of the checkpoint the manager restores, and latest_checkpoint names
  const char* manager_says;  // in the manager's warnings
  const char* latest_says;   // in latest_checkpoint's; "" for none (the index is right)
};
void PrintTo(const IndexDamage& d, std::ostream* os) {
  *os << d.name;
}

void write_text(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}
std::string index_naming(const std::vector<std::string>& names, const std::string& latest) {
  std::string text = "model_checkpoint_path: \"" + latest + "\"\n";
  for (const std::string& n : names) text += "all_model_checkpoint_paths: \"" + n + "\"\n";
  return text;
}

const IndexDamage kIndexDamage[] = {
    {"KeptOnlyItsFirstLineAndTheNewestIsDamaged",
     [](const fs::path& d) {
       write_text(d / "checkpoint", "model_checkpoint_path: \"ckpt-4\"\n");
       flip_a_bit((d / "ckpt-4.safetensors").string());
     },
     3, "does not list 3 checkpoint(s)", "CRC32C"},
    {"RolledBackToAnOlderOne",
     [](const fs::path& d) { write_text(d / "checkpoint", index_naming({"ckpt-2"}, "ckpt-2")); }, 2,
     "does not list 3 checkpoint(s)", ""},
    {"RolledBackToADamagedOne",
     [](const fs::path& d) {
       write_text(d / "checkpoint", index_naming({"ckpt-2"}, "ckpt-2"));
       truncate_file((d / "ckpt-2.safetensors").string());
     },
     4, "ckpt-2.safetensors is corrupted", "ckpt-2.safetensors is corrupted"},
    {"IsEmpty", [](const fs::path& d) { write_text(d / "checkpoint", ""); }, 4, "does not list 4",
     "names no checkpoint"},
    {"IsGarbage",  // binary bytes, and a path that is no UTF-8
     [](const fs::path& d) {
       write_text(d / "checkpoint", std::string("\xff\xfe\0\x01\nmodel_checkpoint_path: \"\xc3\x28\"\n\x80", 34));
     },
     4, "malformed line", "names no checkpoint"},
    {"IsMissing", [](const fs::path& d) { fs::remove(d / "checkpoint"); }, 4, "there is no checkpoint index",
     "there is no checkpoint index"},
    {"NamesAFileInAnotherDirectory",
     [](const fs::path& d) {
       fs::create_directories(d.parent_path() / "elsewhere");
       fs::copy_file(d / "ckpt-1.safetensors", d.parent_path() / "elsewhere/ckpt-7.safetensors");
       write_text(d / "checkpoint", index_naming({"../elsewhere/ckpt-7"}, "../elsewhere/ckpt-7"));
     },
     4, "which is not in", "which is not in"},
    {"NamesANumberPastTheFiles",
     [](const fs::path& d) { write_text(d / "checkpoint", index_naming({"ckpt-99"}, "ckpt-99")); }, 4,
     "ckpt-99.safetensors is missing", "ckpt-99"},
    {"ListsTwiceAndOutOfOrder",
     [](const fs::path& d) {
       write_text(d / "checkpoint", index_naming({"ckpt-3", "ckpt-1", "ckpt-3", "ckpt-2", "./ckpt-1"}, "ckpt-3"));
     },
     3, "does not list 1 checkpoint(s)", ""},
    {"LosesTheNewestToAFileNumberedHigherButOlder",  // by content, not by the number in the name or the file's time
     [](const fs::path& d) {
       fs::remove(d / "checkpoint");
       fs::copy_file(d / "ckpt-1.safetensors", d / "ckpt-9.safetensors");
     },
     4, "there is no checkpoint index", "there is no checkpoint index"},
};

class IndexLies : public CheckpointTest, public ::testing::WithParamInterface<IndexDamage> {
 protected:
  void SetUp() override {
    CheckpointTest::SetUp();
    Variable w = vector_var({0}, "w");
    Checkpoint ckpt({{"w", w}});
    CheckpointManager manager(ckpt, path("run"), {.max_to_keep = 5});
    for (float v : {1.f, 2.f, 3.f, 4.f}) {
      w.assign(from_vector<float>({v}, {1}));
      manager.save();
    }
    GetParam().damage(dir_ / "run");
    for (const auto& entry : fs::directory_iterator(dir_ / "run")) before_.insert(entry.path().filename().string());
  }
  std::set<std::string> files() const {
    std::set<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir_ / "run")) out.insert(entry.path().filename().string());
    return out;
  }
  std::string restored(float w) const { return path("run/ckpt-" + std::to_string(static_cast<int>(w))); }
  std::set<std::string> before_;
};

// The manager deletes nothing at start-up, warns about what it ignores and restores the newest valid checkpoint.
TEST_P(IndexLies, TheManagerKeepsEveryCheckpointAndRestoresTheNewestValid) {
  Variable w = vector_var({0}, "w");
  Checkpoint ckpt({{"w", w}});
  std::optional<std::string> chosen, latest;
  const std::string said = stderr_of([&] {
    CheckpointManager manager(ckpt, path("run"), {.max_to_keep = 1});
    latest = manager.latest_checkpoint();
    chosen = manager.restore_or_initialize();
  });
  EXPECT_EQ(w.value().to_vector<float>(), std::vector<float>{GetParam().restores});
  EXPECT_EQ(chosen, latest);
  EXPECT_EQ(chosen, restored(GetParam().restores));
  EXPECT_NE(said.find(GetParam().manager_says), std::string::npos) << said;
  EXPECT_EQ(files(), before_);
}

TEST_P(IndexLies, LatestCheckpointWarnsAndNamesTheNewestValid) {
  std::optional<std::string> latest;
  const std::string said = stderr_of([&] { latest = latest_checkpoint(path("run")); });
  EXPECT_EQ(latest, restored(GetParam().restores));
  if (*GetParam().latest_says)
    EXPECT_NE(said.find(GetParam().latest_says), std::string::npos) << said;
  else
    EXPECT_EQ(said, "");
}

INSTANTIATE_TEST_SUITE_P(Index, IndexLies, ::testing::ValuesIn(kIndexDamage),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(CheckpointTest, LatestCheckpointOfAnEmptyOrMissingDirectoryIsQuiet) {
  fs::create_directories(path("empty"));
  EXPECT_EQ(stderr_of([&] { EXPECT_EQ(latest_checkpoint(path("empty")), std::nullopt); }), "");
  EXPECT_EQ(stderr_of([&] { EXPECT_EQ(latest_checkpoint(path("nowhere")), std::nullopt); }), "");
}

// What a crash between indexing a new checkpoint and pruning an old one leaves: the old one still listed (the
// index lists it until it is deleted), so the next manager prunes it. A file the index never listed stays.
TEST_F(CheckpointTest, ManagerPrunesOnlyWhatItsIndexListed) {
  Variable w = vector_var({0}, "w");
  const std::string dir = path("crash");
  {
    Checkpoint ckpt({{"w", w}});
    CheckpointManager manager(ckpt, dir, {.max_to_keep = 2});
    for (int i = 0; i < 3; ++i) manager.save();
  }
  fs::copy_file(dir + "/ckpt-2.safetensors", dir + "/ckpt-1.safetensors");
  write_text(dir + "/checkpoint", index_naming({"ckpt-1", "ckpt-2", "ckpt-3"}, "ckpt-3"));
  fs::copy_file(dir + "/ckpt-2.safetensors", dir + "/ckpt-7.safetensors");  // not listed: not this manager's
  Checkpoint ckpt({{"w", w}});
  std::optional<CheckpointManager> manager;
  const std::string said = stderr_of([&] { manager.emplace(ckpt, dir, CheckpointManagerOptions{.max_to_keep = 2}); });
  EXPECT_NE(said.find("(ckpt-7)"), std::string::npos) << said;
  EXPECT_EQ(manager->restore_or_initialize(), dir + "/ckpt-3");
  manager->save();
  EXPECT_EQ(manager->checkpoints(), (std::vector<std::string>{dir + "/ckpt-3", dir + "/ckpt-4"}));
  EXPECT_FALSE(fs::exists(dir + "/ckpt-1.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/ckpt-2.safetensors"));
  manager->delete_checkpoints();
  EXPECT_EQ(std::vector<fs::path>(fs::directory_iterator(dir), fs::directory_iterator()),
            std::vector<fs::path>{fs::path(dir) / "ckpt-7.safetensors"});
}

// A directory's newest checkpoints written by another program: one with other objects, one with the same names but
// other shapes. The manager skips both, saying why, and restores its own.
TEST_F(CheckpointTest, ManagerSkipsAnotherProgramsCheckpoints) {
  Variable w = vector_var({5}, "w");
  Checkpoint mine({{"w", w}});
  CheckpointManager manager(mine, path("shared"), {.max_to_keep = 5});
  manager.save();
  for (const auto& [name, value] : {std::pair{"other", vector_var({1}, "other")}, {"w", vector_var({1, 2}, "w")}}) {
    Checkpoint theirs({{name, value}});
    for (int i = 0; i < 3; ++i) theirs.save(path(std::string("theirs_") + name + "/ckpt"));
  }
  fs::copy_file(path("theirs_other/ckpt-3.safetensors"), path("shared/ckpt-8.safetensors"));
  fs::copy_file(path("theirs_w/ckpt-3.safetensors"), path("shared/ckpt-9.safetensors"));
  write_text(path("shared/checkpoint"), index_naming({"ckpt-1", "ckpt-8", "ckpt-9"}, "ckpt-9"));
  Variable back = vector_var({0}, "w");
  Checkpoint fresh({{"w", back}});
  const std::string said = stderr_of([&] {
    CheckpointManager again(fresh, path("shared"), {.max_to_keep = 5});
    EXPECT_EQ(again.restore_or_initialize(), path("shared/ckpt-1"));
  });
  EXPECT_EQ(back.value().to_vector<float>(), std::vector<float>{5});
  EXPECT_NE(said.find("ckpt-8.safetensors holds objects (other), none of this checkpoint's (w)"), std::string::npos)
      << said;
  EXPECT_NE(said.find("has shape (2,)"), std::string::npos) << said;
  EXPECT_NE(said.find("falling back to " + path("shared/ckpt-1.safetensors")), std::string::npos) << said;
}

// Checkpoints on disk and none of them restorable: an error naming the damage, never a fresh start that would
// discard the job's progress, and nothing deleted.
TEST_F(CheckpointTest, ManagerRefusesToStartAfreshOverDamagedCheckpoints) {
  Variable w = vector_var({0}, "w");
  {
    Checkpoint ckpt({{"w", w}});
    CheckpointManager manager(ckpt, path("lost"), {.max_to_keep = 3});
    for (int i = 0; i < 2; ++i) manager.save();
  }
  write_text(path("lost/checkpoint"), "garbage");
  truncate_file(path("lost/ckpt-1.safetensors"));
  flip_a_bit(path("lost/ckpt-2.safetensors"));
  bool initialized = false;
  Checkpoint ckpt({{"w", w}});
  stderr_of([&] {
    CheckpointManager manager(ckpt, path("lost"), {.max_to_keep = 1, .init_fn = [&] { initialized = true; }});
    EXPECT_EQ(manager.latest_checkpoint(), std::nullopt);
    try {
      manager.restore_or_initialize();
      ADD_FAILURE() << "no error";
    } catch (const DataLossError& e) {
      EXPECT_NE(std::string(e.what()).find("none of the 2 checkpoints in " + path("lost")), std::string::npos)
          << e.what();
    }
  });
  EXPECT_FALSE(initialized);
  EXPECT_TRUE(fs::exists(path("lost/ckpt-1.safetensors")));
  EXPECT_TRUE(fs::exists(path("lost/ckpt-2.safetensors")));
}

TEST_F(CheckpointTest, ManagerKeepsTheNewestWritesTFsIndexAndInitializes) {
  Variable w = vector_var({0}, "w");
  Checkpoint ckpt({{"w", w}});
  bool initialized = false;
  CheckpointManager manager(ckpt, path("run"), {.max_to_keep = 2, .init_fn = [&] { initialized = true; }});
  EXPECT_EQ(manager.restore_or_initialize(), std::nullopt);
  EXPECT_TRUE(initialized);
  for (int i = 0; i < 4; ++i) manager.save();
  EXPECT_EQ(manager.checkpoints(), (std::vector<std::string>{path("run/ckpt-3"), path("run/ckpt-4")}));
  EXPECT_FALSE(fs::exists(path("run/ckpt-2.safetensors")));
  EXPECT_EQ(latest_checkpoint(path("run")), path("run/ckpt-4"));
  std::ifstream index(path("run/checkpoint"));
  std::string first;
  std::getline(index, first);
  EXPECT_EQ(first, "model_checkpoint_path: \"ckpt-4\"");
  EXPECT_EQ(manager.save(10), path("run/ckpt-10"));  // an explicit number
  EXPECT_EQ(latest_checkpoint(path("nowhere")), std::nullopt);
  // A lost index file: the directory is scanned for the numbered files.
  fs::remove(path("run/checkpoint"));
  Checkpoint other({{"w", w}});
  CheckpointManager rescanned(other, path("run"), {.max_to_keep = 2});
  EXPECT_EQ(rescanned.latest_checkpoint(), path("run/ckpt-10"));
}

// On two workers without a shared file system: the chief's directory decides, and a checkpoint that fails to
// restore (another model's shapes) is passed over by both workers together; when every one fails, both raise.
TEST_F(CheckpointTest, TwoWorkersFallBackTogether) {
  Variable mine = vector_var({5}, "w"), theirs = vector_var({1, 2}, "w");
  Checkpoint({{"w", mine}}).save(path("chief/ckpt"));
  Checkpoint other({{"w", theirs}});
  for (int i = 0; i < 2; ++i) other.save(path("other/ckpt"));
  fs::copy_file(path("other/ckpt-2.safetensors"), path("chief/ckpt-2.safetensors"));
  write_text(path("chief/checkpoint"), index_naming({"ckpt-1", "ckpt-2"}, "ckpt-2"));
  fs::copy_file(path("other/ckpt-2.safetensors"), path("other_only.safetensors"));
  std::vector<float> restored(2);
  const std::vector<std::string> errors = testing::on_two_workers([&](int rank, auto& strategy) {
    Variable w = vector_var({0}, "w");
    Checkpoint ckpt({{"w", w}}, {.strategy = &strategy});
    CheckpointManager manager(ckpt, path(rank == 0 ? "chief" : "worker1"), {.max_to_keep = 2});
    EXPECT_EQ(manager.restore_or_initialize(), path("chief/ckpt-1"));
    restored[static_cast<size_t>(rank)] = w.value().to_vector<float>()[0];
    try {
      ckpt.restore(path("other_only"));
      ADD_FAILURE() << "no error on worker " << rank;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("has shape (2,)"), std::string::npos) << e.what();
    }
  });
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(restored, (std::vector<float>{5, 5}));
}

TEST_F(CheckpointTest, ManagerKeepsOneCheckpointEveryNHours) {
  Variable w = vector_var({0}, "w");
  for (const auto& [hours, kept] : {std::pair{1e-9, true}, {1000.0, false}}) {
    const std::string dir = path("hours_" + std::to_string(kept));
    Checkpoint ckpt({{"w", w}});
    CheckpointManager manager(ckpt, dir, {.max_to_keep = 1, .keep_checkpoint_every_n_hours = hours});
    for (int i = 0; i < 3; ++i) manager.save();
    EXPECT_EQ(manager.checkpoints(), std::vector<std::string>{dir + "/ckpt-3"});
    // Pruned from the manager's list either way; kept on disk only when that much time passed between them.
    EXPECT_EQ(fs::exists(dir + "/ckpt-1.safetensors"), kept);
    EXPECT_EQ(fs::exists(dir + "/ckpt-2.safetensors"), kept);
  }
}

TEST_F(CheckpointTest, ManagerSavesOnlyAfterTheInterval) {
  Variable w = vector_var({0}, "w");
  int64_t step = 0;
  Checkpoint ckpt({{"w", w}});
  CheckpointManager manager(ckpt, path("interval"),
                            {.step_counter = [&] { return step; }, .checkpoint_interval = 10});
  EXPECT_TRUE(manager.save().has_value());
  step = 5;
  EXPECT_FALSE(manager.save().has_value());
  step = 10;
  EXPECT_TRUE(manager.save().has_value());
  EXPECT_TRUE(manager.save(std::nullopt, /*check_interval=*/false).has_value());
  EXPECT_THROW(CheckpointManager(ckpt, path("x"), {.checkpoint_interval = 3}), ValueError);
}

TEST_F(CheckpointTest, AsyncSavesAreDurableAfterSyncAndReportFailures) {
  Variable w = vector_var(std::vector<float>(1000, 1.f), "w");
  Checkpoint ckpt({{"w", w}}, {.async = true});
  CheckpointManager manager(ckpt, path("async"), {.max_to_keep = 1});
  for (int i = 0; i < 5; ++i) manager.save();
  manager.sync();
  EXPECT_EQ(manager.checkpoints(), std::vector<std::string>{path("async/ckpt-5")});
  EXPECT_TRUE(fs::exists(path("async/ckpt-5.safetensors")));
  EXPECT_FALSE(fs::exists(path("async/ckpt-4.safetensors")));
  // A write that fails in the background (a file stands where its directory should be) surfaces at the next
  // sync, naming the path.
  std::ofstream(path("not_a_dir")) << "x";
  Checkpoint broken({{"w", w}}, {.async = true});
  broken.save(path("not_a_dir/ckpt"));
  try {
    broken.sync();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path("not_a_dir")), std::string::npos) << e.what();
  }
}

TEST_F(CheckpointTest, AsyncIsChosenSaveBySave) {
  Variable w = vector_var(std::vector<float>(1000, 1.f), "w");
  Checkpoint ckpt({{"w", w}});
  CheckpointManager manager(ckpt, path("switch"), {.max_to_keep = 2});
  ckpt.set_async(true);
  manager.save();
  w.assign(from_vector<float>(std::vector<float>(1000, 2.f), {1000}));  // after the snapshot: not in ckpt-1
  ckpt.set_async(false);
  manager.save();  // waits for the background write, then writes in the foreground
  EXPECT_TRUE(fs::exists(path("switch/ckpt-2.safetensors")));
  EXPECT_EQ(manager.checkpoints(), (std::vector<std::string>{path("switch/ckpt-1"), path("switch/ckpt-2")}));
  Variable back = vector_var(std::vector<float>(1000, 0.f), "w");
  Checkpoint({{"w", back}}).restore(path("switch/ckpt-1")).assert_consumed();
  EXPECT_EQ(back.value().to_vector<float>(), std::vector<float>(1000, 1.f));
}

TEST_F(CheckpointTest, PreemptionHandlerSavesOnSigtermAndTheLoopResumesItsCount) {
  Variable w = vector_var({0}, "w");
  Checkpoint ckpt({{"w", w}});
  bool exited = false;
  {
    PreemptionCheckpointHandler handler(ckpt, path("preempt"), {.exit_fn = [&] { exited = true; }});
    EXPECT_EQ(handler.total_run_calls(), 0);
    for (int64_t step = handler.total_run_calls(); step < 10 && !exited; ++step) {
      handler.run([&] { w.assign(from_vector<float>({static_cast<float>(step + 1)}, {1})); });
      if (step == 3) ::raise(SIGTERM);  // recorded, not fatal, while the handler lives
    }
  }
  EXPECT_TRUE(exited);  // at the step after the signal, once the checkpoint was durable
  Variable w2 = vector_var({0}, "w");
  Checkpoint again({{"w", w2}});
  PreemptionCheckpointHandler restarted(again, path("preempt"), {.exit_fn = [] { FAIL() << "no signal this time"; }});
  EXPECT_EQ(restarted.total_run_calls(), 5);
  EXPECT_EQ(w2.value().to_vector<float>(), std::vector<float>{5});
  restarted.run([] {});
  EXPECT_EQ(restarted.total_run_calls(), 6);
}

}  // namespace
}  // namespace lockstep::train
