// The bad-input corpus: every malformed flag, environment variable, data file, checkpoint, saved model and
// data set state that a user or a damaged disk can hand the `lockstep` binary ends the same way — exit code 2,
// one line "lockstep: error: ..." that names the problem, nothing trained, no crash, hang or stack trace.
// Each case is a row: the files it writes into its own directory, the command line, the environment and a
// word the error must contain. Real files for the checkpoint and saved-model rows come from short runs made
// once per suite, then damaged a copy at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace lockstep::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// The address space the gzip bomb case runs in; none under a sanitizer, which reserves terabytes of it.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define LOCKSTEP_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(LOCKSTEP_TEST_SANITIZED)
const std::string kOneGigabyte = "";
#else
const std::string kOneGigabyte = "ulimit -v 1000000;";
#endif

// ---- writing bad files ----

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}
std::string le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s += static_cast<char>(v >> (8 * i));
  return s;
}

// An IDX file: magic, dimensions, then `payload` bytes of value `fill`.
void write_idx(const fs::path& path, uint32_t magic, const std::vector<uint32_t>& dims, size_t payload, char fill = 0) {
  std::string s = be32(magic);
  for (uint32_t d : dims) s += be32(d);
  write_bytes(path, s + std::string(payload, fill));
}

// Truncates `path` to `fraction` of its size.
void cut(const fs::path& path, double fraction) {
  fs::resize_file(path, static_cast<uintmax_t>(static_cast<double>(fs::file_size(path)) * fraction));
}

// Flips one bit `from_end` bytes before the end of `path` (inside the last tensor of a safetensors file).
void flip_near_end(const fs::path& path, int from_end = 3) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-from_end, std::ios::end);
  char c;
  f.get(c);
  f.seekp(-from_end, std::ios::end);
  f.put(static_cast<char>(c ^ 0x10));
}

uint32_t crc32(const std::string& bytes) {  // zip's CRC-32 (IEEE), bit by bit: only tiny members are written
  uint32_t crc = 0xffffffffu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
  }
  return ~crc;
}

// A zip archive of stored (uncompressed) members, as np.savez writes it; `crc_of` may lie about a member.
std::string zip_archive(const std::vector<std::pair<std::string, std::string>>& members,
                        const std::function<uint32_t(const std::string&, const std::string&)>& crc_of = nullptr) {
  std::string local, central;
  for (const auto& [name, data] : members) {
    const uint32_t crc = crc_of ? crc_of(name, data) : crc32(data);
    const std::string common = le(20, 2) + le(0, 2) + le(0, 2) + le(0, 2) + le(0x21, 2) + le(crc, 4) +
                               le(data.size(), 4) + le(data.size(), 4) + le(name.size(), 2) + le(0, 2);
    central +=
        le(0x02014b50, 4) + le(20, 2) + common + le(0, 2) + le(0, 2) + le(0, 2) + le(0, 4) + le(local.size(), 4) + name;
    local += le(0x04034b50, 4) + common + name + data;
  }
  return local + central + le(0x06054b50, 4) + le(0, 2) + le(0, 2) + le(members.size(), 2) + le(members.size(), 2) +
         le(central.size(), 4) + le(local.size(), 4) + le(0, 2);
}

// A version 1.0 .npy array with the given header fields and data bytes.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data,
                const std::string& fortran = "False", const std::string& magic = "\x93NUMPY") {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  header.append(63 - header.size() % 64, ' ');
  header += '\n';
  return magic + std::string("\x01\x00", 2) + le(header.size(), 2) + header + data;
}

// mnist.npz with four uint8 members; `replace` swaps in another member body by name.
void write_npz(const fs::path& dir, const std::map<std::string, std::string>& replace = {},
               const std::function<uint32_t(const std::string&, const std::string&)>& crc_of = nullptr) {
  std::vector<std::pair<std::string, std::string>> members;
  for (const auto& [name, n, image] :
       {std::tuple{"x_train", 8, true}, {"y_train", 8, false}, {"x_test", 4, true}, {"y_test", 4, false}}) {
    // Appended, not "(" + std::to_string(n): GCC 12 warns falsely (-Wrestrict) about that operator+.
    std::string shape = "(";
    shape += std::to_string(n);
    shape += image ? ", 28, 28)" : ",)";
    std::string body = npy("|u1", shape, std::string(size_t(n) * (image ? 784 : 1), image ? '\1' : '\3'));
    if (auto it = replace.find(name); it != replace.end()) body = it->second;
    if (!body.empty()) members.emplace_back(std::string(name) + ".npy", body);
  }
  write_bytes(dir / "mnist.npz", zip_archive(members, crc_of));
}

// Rewrites a safetensors file's JSON header through `edit`, keeping its data section.
void edit_header(const fs::path& path, const std::function<void(Json&)>& edit) {
  const std::string bytes = read_all(path.string());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  Json header = Json::parse(bytes.substr(8, n));
  edit(header);
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  write_bytes(path, le(text.size(), 8) + text + bytes.substr(8 + n));
}

// The checkpoint files of a backup directory.
std::vector<fs::path> checkpoints_in(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") files.push_back(e.path());
  return files;
}

// Edits a JSON entry of __metadata__ of every checkpoint in `dir`: "objects" (the state all workers share) or
// "per_worker" (each object's list of every worker's own state).
void edit_metadata_json(const fs::path& dir, const char* key, const std::function<void(Json&)>& edit) {
  for (const fs::path& file : checkpoints_in(dir))
    edit_header(file, [&](Json& h) {
      Json objects = Json::parse(h["__metadata__"][key].get<std::string>());
      edit(objects);
      h["__metadata__"][key] = objects.dump();
    });
}
void edit_objects(const fs::path& dir, const std::function<void(Json&)>& edit) {
  edit_metadata_json(dir, "objects", edit);
}
void edit_per_worker(const fs::path& dir, const std::function<void(Json&)>& edit) {
  edit_metadata_json(dir, "per_worker", edit);
}

// The custom loop's saved input position (a DistributedDataset iterator over batch(repeat(shuffle(source)))),
// and the state of its shuffle stage.
Json& input_position(Json& per_worker) {
  return per_worker["iterator"][0]["position"];
}
Json& source_state(Json& objects) {
  return input_position(objects)["replicas"][0]["state"]["input"]["input"];
}

// ---- the rows ----

// Files made by real runs the first time a case asks for them (ctest runs each case in its own process,
// which then makes only what it damages), copied into a case's directory before it damages them.
struct Fixtures {
  fs::path root;
  fs::path data() const;            // 64 + 16 IDX images
  fs::path model() const;           // a saved tutorial_cnn
  fs::path backup_fit() const;      // BackupAndRestore of fit, killed at step 5
  fs::path backup_ctl() const;      // CheckpointManager of the custom loop
  fs::path backup_fashion() const;  // fit's backup of fashion_cnn
  fs::path backup(const std::string& name, const std::string& flags) const;
};

struct Case {
  std::string name;
  std::string args;      // after `lockstep`; @ is the case's directory, DATA the good data set
  std::string keyword;   // the error names the problem with this
  std::string env = "";  // VAR=value ... for the command
  std::function<void(const fs::path& dir, const Fixtures& f)> setup = nullptr;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

// Verbose, so that a step taken before the refusal would show as fit's "Epoch 1/1".
const std::string kTrain = "train --epochs 1 --batch-size 8 --threads 1 ";
const std::string kTrainHere = kTrain + "--dataset @ ";

fs::path Fixtures::data() const {
  const fs::path dir = root / "data";
  if (!fs::exists(dir)) {
    fs::create_directories(dir);
    write_idx_dataset(dir, 64, 16);
  }
  return dir;
}
fs::path Fixtures::model() const {
  const fs::path dir = root / "model";
  if (!fs::exists(dir)) {
    const Result r = run_lockstep(
        kTrain + "--verbose 0 --steps-per-epoch 2 --dataset " + data().string() + " --save-model " + dir.string(), "",
        120);
    EXPECT_EQ(r.code, 0) << r.err;
  }
  return dir;
}
// The backup of a run killed at step 5 (saves at steps 2 and 4), keeping only the durable checkpoint of step 2,
// so that every case damages the file a restore reads.
fs::path Fixtures::backup(const std::string& name, const std::string& flags) const {
  const fs::path dir = root / name;
  if (!fs::exists(dir)) {
    run_lockstep(kTrain + "--verbose 0 --epochs 3 --steps-per-epoch 3 --backup-freq 2 --dataset " + data().string() +
                     " --backup-dir " + dir.string() + flags,
                 "LOCKSTEP_FAULT_INJECT=kill:0:5", 120);
    EXPECT_TRUE(fs::exists(dir / "ckpt-1.safetensors")) << dir;
    for (const fs::path& file : checkpoints_in(dir))
      if (file.filename() != "ckpt-1.safetensors") fs::remove(file);
    // The index may list the step-4 checkpoint just removed, which a restore would warn about: it lists ckpt-1.
    write_bytes(dir / "checkpoint", "model_checkpoint_path: \"ckpt-1\"\nall_model_checkpoint_paths: \"ckpt-1\"\n");
  }
  return dir;
}
fs::path Fixtures::backup_fit() const {
  return backup("backup_fit", "");
}
fs::path Fixtures::backup_ctl() const {
  return backup("backup_ctl", " --loop ctl");
}
fs::path Fixtures::backup_fashion() const {
  return backup("backup_fashion", " --model fashion_cnn");
}

// Copies the good data set into the case directory, then applies `damage` to it.
std::function<void(const fs::path&, const Fixtures&)> data_with(std::function<void(const fs::path&)> damage) {
  return [damage](const fs::path& dir, const Fixtures& f) {
    fs::copy(f.data(), dir);
    damage(dir);
  };
}
// A copy of a fixture directory as @/<name>, then `damage` on the copy.
std::function<void(const fs::path&, const Fixtures&)> copy_of(fs::path (Fixtures::*which)() const,
                                                              const std::string& name,
                                                              std::function<void(const fs::path&)> damage) {
  return [which, name, damage](const fs::path& dir, const Fixtures& f) {
    fs::copy((f.*which)(), dir / name, fs::copy_options::recursive);
    damage(dir / name);
  };
}
auto backup_fit(std::function<void(const fs::path&)> d) {
  return copy_of(&Fixtures::backup_fit, "backup", std::move(d));
}
auto backup_ctl(std::function<void(const fs::path&)> d) {
  return copy_of(&Fixtures::backup_ctl, "backup", std::move(d));
}
auto saved_model(std::function<void(const fs::path&)> d) {
  return copy_of(&Fixtures::model, "model", std::move(d));
}
// Applies `damage` to every checkpoint file of a backup directory (so no earlier one is left to fall back to).
std::function<void(const fs::path&)> each_checkpoint(std::function<void(const fs::path&)> damage) {
  return [damage](const fs::path& dir) {
    for (const fs::path& f : checkpoints_in(dir)) damage(f);
  };
}
// Edits config.json of a saved model.
std::function<void(const fs::path&)> config(std::function<void(Json&)> edit) {
  return [edit](const fs::path& model) {
    Json c = Json::parse(read_all((model / "config.json").string()));
    edit(c);
    write_bytes(model / "config.json", c.dump());
  };
}
// The config of the saved model's layer `i` (0: InputLayer, 1: Reshape, 2: Conv2D, 4: Dense).
Json& layer(Json& c, size_t i) {
  return c["config"]["layers"][i]["config"];
}

const std::string kFitBackup = kTrain + "--dataset DATA --steps-per-epoch 3 --backup-dir @/backup ";
const std::string kCtlBackup = kFitBackup + "--loop ctl ";
// A TF_CONFIG and a command that must fail on it before reading any data (the data set does not exist).
const std::string kTrainNoData = kTrain + "--dataset /nonexistent/data";
std::string tf(const std::string& json) {
  return "TF_CONFIG='" + json + "'";
}
// SLURM variables of a 2-node, 4-task job; `over` replaces some of them.
std::string slurm(const std::map<std::string, std::string>& over) {
  std::map<std::string, std::string> v = {{"SLURM_PROCID", "0"},
                                          {"SLURM_NTASKS", "4"},
                                          {"SLURM_JOB_NODELIST", "node[1-2]"},
                                          {"SLURM_TASKS_PER_NODE", "2(x2)"}};
  for (const auto& [k, x] : over) v[k] = x;
  std::string env;
  for (const auto& [k, x] : v)
    if (x != "<unset>") env += k + "='" + x + "' ";
  return env;
}

// A user's own model and data (--model FILE --data SPEC), for the empty-data rows.
const std::string kGoldenTrain = std::string(LOCKSTEP_SOURCE_DIR) + "/tests/golden/cli_train/";
const std::string kUserTrain = kTrain + "--model " + kGoldenTrain + "classifier.keras --feature-key x ";
std::function<void(const fs::path&, const Fixtures&)> writes_file(const std::string& name, const std::string& bytes) {
  return [name, bytes](const fs::path& d, const Fixtures&) { write_bytes(d / name, bytes); };
}

const std::vector<Case> kCases = {
    // -- lockstep train's flags (train_flags_test has more numeric edges) --
    {"train_unknown_model", kTrainHere + "--model resnet50", "--model"},
    {"train_unknown_optimizer", kTrainHere + "--optimizer nadam", "--optimizer"},
    {"train_unknown_loop", kTrainHere + "--loop eager", "--loop"},
    {"train_unknown_compression", kTrainHere + "--gradient-compression float8", "--gradient-compression"},
    {"train_unknown_flag", kTrainHere + "--learning_rate 0.1", "--learning_rate"},
    {"train_extra_argument", kTrainHere + "mnist", "mnist"},
    {"train_zero_epochs", kTrainHere + "--epochs 0", "--epochs"},
    {"train_negative_epochs", kTrainHere + "--epochs -3", "--epochs"},
    {"train_zero_batch", kTrainHere + "--batch-size 0", "--batch-size"},
    {"train_text_batch", kTrainHere + "--batch-size eight", "--batch-size"},
    {"train_fractional_batch", kTrainHere + "--batch-size 8.5", "--batch-size"},
    {"train_minus_inf_learning_rate", kTrainHere + "--learning-rate -inf", "--learning-rate"},
    {"train_underflowing_learning_rate", kTrainHere + "--learning-rate 1e-400", "--learning-rate"},
    {"train_negative_threads", kTrainHere + "--threads -1", "--threads"},
    {"train_negative_workers", kTrainHere + "--workers -2", "--workers"},
    {"train_text_steps", kTrainHere + "--steps-per-epoch all", "--steps-per-epoch"},
    {"train_negative_verbose", kTrainHere + "--verbose -1", "--verbose"},
    {"train_negative_backup_freq", kTrainHere + "--backup-dir @/b --backup-freq -5", "--backup-freq"},
    {"train_missing_token_file", kTrainHere + "--cluster-token-file @/no-token", "--cluster-token-file"},
    {"train_missing_dataset", kTrain + "--dataset @/nowhere", "nowhere"},
    {"train_dataset_is_a_file", kTrain + "--dataset @/file", "file", "",
     [](const fs::path& d, const Fixtures&) { write_bytes(d / "file", "x"); }},
    // -- outputs refused before the first step --
    {"train_metrics_out_is_a_directory", kTrain + "--dataset DATA --metrics-out @", "--metrics-out"},
    {"train_save_model_is_a_file", kTrain + "--dataset DATA --save-model @/file", "not a directory", "",
     [](const fs::path& d, const Fixtures&) { write_bytes(d / "file", "x"); }},
    {"train_save_model_over_other_files", kTrain + "--dataset DATA --save-model @", "other files", "",
     [](const fs::path& d, const Fixtures&) { write_bytes(d / "notes.txt", "mine"); }},
    {"train_backup_dir_is_a_file", kTrain + "--dataset DATA --backup-dir @/file", "--backup-dir", "",
     [](const fs::path& d, const Fixtures&) { write_bytes(d / "file", "x"); }},
    {"train_backup_dir_unwritable", kTrain + "--dataset DATA --backup-dir /proc/lockstep-backup", "--backup-dir"},
    {"train_save_model_unwritable", kTrain + "--dataset DATA --save-model /proc/self/model", "/proc/self/model"},
    // -- lockstep evaluate, launch and bench --
    {"evaluate_nan_idle_timeout", "evaluate --watch @ --idle-timeout nan", "--idle-timeout"},
    {"evaluate_negative_idle_timeout", "evaluate --watch @ --idle-timeout -1", "--idle-timeout"},
    {"evaluate_text_threads", "evaluate --model @ --threads many", "--threads"},
    {"evaluate_negative_max_checkpoints", "evaluate --watch @ --max-checkpoints -1", "--max-checkpoints"},
    {"evaluate_huge_batch", "evaluate --model @ --batch-size 99999999999999999999999", "--batch-size"},
    {"evaluate_unwritable_metrics", "evaluate --model @/model --dataset DATA --metrics-out /nonexistent/m.json",
     "--metrics-out", "", saved_model([](const fs::path&) {})},
    {"evaluate_watch_unknown_model", "evaluate --watch @ --model resnet50 --dataset DATA", "resnet50"},
    {"evaluate_missing_dataset", "evaluate --model @/model --dataset @/nowhere", "nowhere", "",
     saved_model([](const fs::path&) {})},
    {"launch_text_workers", "launch -n two -- true", "-n"},
    {"launch_port_out_of_range", "launch -n 2 --start-port 70000 -- true", "--start-port"},
    {"launch_negative_restarts", "launch -n 2 --max-restarts -1 -- true", "--max-restarts"},
    {"launch_nan_grace_period", "launch -n 2 --grace-period nan -- true", "--grace-period"},
    {"launch_missing_token_file", "launch -n 2 --cluster-token-file @/no-token -- true", "--cluster-token-file"},
    {"launch_unwritable_log_dir", "launch -n 1 --log-dir /proc/lockstep-logs -- true", "--log-dir"},
    {"launch_absurd_worker_count", "launch -n 100000000 -- true", "-n"},
    {"bench_negative_threads", "bench step --threads -1", "--threads"},
    {"bench_too_many_replicas", "bench step --replicas 65", "--replicas"},
    {"bench_zero_backup_every", "bench step --backup-every 0", "--backup-every"},
    {"bench_batch_past_memory", "bench step --steps 1 --batch-size 9223372036854775807", "--batch-size"},
    {"bench_warmup_overflows", "bench step --steps 2 --warmup 9223372036854775807", "--warmup"},
    {"bench_nan_size", "bench allreduce --sizes-mib nan", "--sizes-mib"},
    {"bench_negative_size", "bench allreduce --sizes-mib -4", "--sizes-mib"},
    {"bench_absurd_size", "bench allreduce --sizes-mib 1e30", "--sizes-mib"},
    {"bench_text_iters", "bench allreduce --iters often", "--iters"},
    // -- TF_CONFIG (cluster_cli_test covers the common mistakes) --
    {"tf_config_fractional_index", "tf-config", "index",
     tf(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0.5}})")},
    {"tf_config_huge_index", "tf-config", "index",
     tf(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 100000000000000000000}})")},
    {"tf_config_numeric_type", "tf-config", "type",
     tf(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": 5, "index": 0}})")},
    {"tf_config_numeric_addresses", "tf-config", "worker",
     tf(R"({"cluster": {"worker": [1, 2]}, "task": {"type": "worker", "index": 0}})")},
    {"tf_config_null_cluster", "tf-config", "cluster",
     tf(R"({"cluster": null, "task": {"type": "worker", "index": 0}})")},
    {"tf_config_deeply_nested", "tf-config", "TF_CONFIG", tf(std::string(20000, '[') + std::string(20000, ']'))},
    {"tf_config_port_zero", "tf-config", "1..65535",
     tf(R"({"cluster": {"worker": ["a:0"]}, "task": {"type": "worker", "index": 0}})")},
    {"tf_config_space_in_host", "tf-config", "a b",
     tf(R"({"cluster": {"worker": ["a b:1"]}, "task": {"type": "worker", "index": 0}})")},
    {"tf_config_evaluator_out_of_range", "tf-config", "out of range",
     tf(R"({"cluster": {"worker": ["a:1"], "evaluator": ["a:2"]}, "task": {"type": "evaluator", "index": 1}})")},
    {"tf_config_numeric_rpc_layer", "tf-config", "rpc_layer",
     tf(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "rpc_layer": 7})")},
    {"tf_config_environment_not_text", "tf-config", "environment",
     tf(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "environment": [1]})")},
    {"tf_config_invalid_utf8", "tf-config", "TF_CONFIG",
     tf("{\"cluster\": {\"worker\": [\"\xff\xfe:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}")},
    {"tf_config_escape_sequence", "tf-config", "TF_CONFIG",
     tf(R"({"cluster": {"worker": ["\u001b[2J\u001b[31mred:1"]}, "task": {"type": "worker", "index": 0}})")},
    {"tf_config_refused_before_data", kTrainNoData, "TF_CONFIG",
     tf(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 9}})")},
    {"tf_config_token_file_missing", kTrain + "--dataset DATA", "token",
     "LOCKSTEP_CLUSTER_TOKEN_FILE=/nonexistent/token " +
         tf(R"({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}, "task": {"type": "worker", "index": 1}})")},
    // -- SLURM variables, read by tf-config and train alike --
    {"slurm_text_procid", "tf-config", "SLURM_PROCID", slurm({{"SLURM_PROCID", "first"}})},
    {"slurm_procid_out_of_range", "tf-config", "SLURM_PROCID", slurm({{"SLURM_PROCID", "4"}})},
    {"slurm_counts_disagree", "tf-config", "SLURM_NTASKS", slurm({{"SLURM_NTASKS", "5"}})},
    {"slurm_reversed_range", "tf-config", "node[2-1]", slurm({{"SLURM_JOB_NODELIST", "node[2-1]"}})},
    {"slurm_absurd_range", "tf-config", "hosts", slurm({{"SLURM_JOB_NODELIST", "node[1-999999999]"}})},
    {"slurm_unbalanced_bracket", "tf-config", "node[1-2", slurm({{"SLURM_JOB_NODELIST", "node[1-2"}})},
    {"slurm_malformed_tasks_per_node", "tf-config", "SLURM_TASKS_PER_NODE", slurm({{"SLURM_TASKS_PER_NODE", "2(x"}})},
    {"slurm_zero_tasks_per_node", "tf-config", "SLURM_TASKS_PER_NODE", slurm({{"SLURM_TASKS_PER_NODE", "0,4"}})},
    {"slurm_nodes_and_counts_disagree", "tf-config", "names 3", slurm({{"SLURM_JOB_NODELIST", "node[1-3]"}})},
    {"slurm_nodelist_missing", "tf-config", "SLURM_JOB_NODELIST", slurm({{"SLURM_JOB_NODELIST", "<unset>"}})},
    {"slurm_text_port", "tf-config", "LOCKSTEP_PORT", slurm({{"LOCKSTEP_PORT", "http"}})},
    {"slurm_ports_past_65535", "tf-config", "LOCKSTEP_PORT", slurm({{"LOCKSTEP_PORT", "65535"}})},
    {"slurm_refused_before_data", kTrainNoData, "SLURM", slurm({{"SLURM_PROCID", "-1"}})},
    // -- other LOCKSTEP_* variables --
    {"fault_inject_malformed", kTrainHere, "LOCKSTEP_FAULT_INJECT", "LOCKSTEP_FAULT_INJECT=kill:first",
     data_with([](auto) {})},
    {"collective_unknown", kTrainHere, "LOCKSTEP_COLLECTIVE", "LOCKSTEP_COLLECTIVE=carrier-pigeon",
     data_with([](auto) {})},
    {"gradient_compression_unknown", kTrainHere, "LOCKSTEP_GRADIENT_COMPRESSION", "LOCKSTEP_GRADIENT_COMPRESSION=zip",
     data_with([](auto) {})},
    // -- IDX data files --
    {"idx_missing_labels", kTrainHere, "train-labels-idx1-ubyte", "",
     data_with([](const fs::path& d) { fs::remove(d / "train-labels-idx1-ubyte"); })},
    {"idx_truncated_images", kTrainHere, "truncated", "",
     data_with([](const fs::path& d) { cut(d / "train-images-idx3-ubyte", 0.5); })},
    {"idx_trailing_bytes", kTrainHere, "trailing", "",
     data_with([](const fs::path& d) { std::ofstream(d / "t10k-labels-idx1-ubyte", std::ios::app) << "extra"; })},
    {"idx_wrong_magic", kTrainHere, "magic", "", data_with([](const fs::path& d) {
       write_idx(d / "train-images-idx3-ubyte", 0x00000803 ^ 0x1000, {64, 28, 28}, 64 * 784);
     })},
    {"idx_float_images", kTrainHere, "magic", "", data_with([](const fs::path& d) {
       write_idx(d / "train-images-idx3-ubyte", 0x00000d03, {64, 28, 28}, 64 * 784 * 4);
     })},
    {"idx_empty_file", kTrainHere, "t10k-images-idx3-ubyte", "",
     data_with([](const fs::path& d) { write_bytes(d / "t10k-images-idx3-ubyte", ""); })},
    {"idx_2_to_the_40_elements", kTrainHere, "train-images-idx3-ubyte", "", data_with([](const fs::path& d) {
       write_idx(d / "train-images-idx3-ubyte", 0x803, {1u << 16, 1u << 12, 1u << 12}, 4096);
     })},
    {"idx_max_dims", kTrainHere, "train-images-idx3-ubyte", "", data_with([](const fs::path& d) {
       write_idx(d / "train-images-idx3-ubyte", 0x803, {0xffffffffu, 0xffffffffu, 0xffffffffu}, 16);
     })},
    {"idx_image_size_32", kTrainHere, "28", "", data_with([](const fs::path& d) {
       write_idx(d / "train-images-idx3-ubyte", 0x803, {64, 32, 32}, 64 * 32 * 32);
     })},
    {"idx_zero_width", kTrainHere, "28", "", data_with([](const fs::path& d) {
       write_idx(d / "train-images-idx3-ubyte", 0x803, {64, 0, 28}, 0);
     })},
    {"idx_label_count_differs", kTrainHere, "labels", "",
     data_with([](const fs::path& d) { write_idx(d / "train-labels-idx1-ubyte", 0x801, {50}, 50, 1); })},
    {"idx_label_out_of_range", kTrainHere, "label 200", "",
     data_with([](const fs::path& d) { write_idx(d / "train-labels-idx1-ubyte", 0x801, {64}, 64, char(200)); })},
    {"idx_images_are_a_directory", kTrainHere, "train-images-idx3-ubyte", "", data_with([](const fs::path& d) {
       fs::remove(d / "train-images-idx3-ubyte");
       fs::create_directories(d / "train-images-idx3-ubyte");
     })},
    {"idx_gzip_garbage", kTrainHere, "gzip", "", data_with([](const fs::path& d) {
       fs::remove(d / "train-images-idx3-ubyte");
       write_bytes(d / "train-images-idx3-ubyte.gz", std::string("\x1f\x8b\x08\x00garbage garbage garbage", 27));
     })},
    {"idx_gzip_truncated", kTrainHere, "train-images-idx3-ubyte.gz", "", data_with([](const fs::path& d) {
       ASSERT_EQ(std::system(("gzip -1 " + (d / "train-images-idx3-ubyte").string()).c_str()), 0);
       cut(d / "train-images-idx3-ubyte.gz", 0.6);
     })},
    {"idx_gzip_absurd_promise", kTrainHere, "promises", "", data_with([](const fs::path& d) {
       const fs::path images = d / "train-images-idx3-ubyte";
       write_idx(images, 0x803, {60000, 4096, 4096}, 4096);
       ASSERT_EQ(std::system(("gzip -1 " + images.string()).c_str()), 0);
     })},
    // A 2 MB gzip file (its header member, then 150 members of 10 MB of zeros) that inflates to 1.5 GB behind
    // a header that promises 64 images: refused after the promised bytes, within a 1 GB address space.
    {"idx_gzip_bomb", kTrainHere, "trailing bytes", kOneGigabyte, data_with([](const fs::path& d) {
       const std::string images = (d / "train-images-idx3-ubyte").string();
       const std::string zeros = (d / "zeros.gz").string();
       ASSERT_EQ(std::system(("gzip -c " + images + " > " + images + ".gz && head -c 10000000 /dev/zero | gzip -9 > " +
                              zeros + " && for i in $(seq 150); do cat " + zeros + "; done >> " + images +
                              ".gz && rm " + images + " " + zeros)
                                 .c_str()),
                 0);
     })},
    {"idx_no_training_images", kTrainHere, "no training images", "",
     data_with([](const fs::path& d) { write_idx_dataset(d, 0, 16); })},
    // -- a user's data files that hold nothing: refused naming the flag, before any step (fit and the custom loop) --
    {"data_empty_tfrecord", kUserTrain + "--data tfrecord:@/empty.tfrecord", "--data tfrecord:", "",
     writes_file("empty.tfrecord", "")},
    {"data_empty_tfrecord_ctl", kUserTrain + "--loop ctl --data tfrecord:@/empty.tfrecord", "holds no records", "",
     writes_file("empty.tfrecord", "")},
    {"data_empty_validation",
     kUserTrain + "--data tfrecord:" + kGoldenTrain +
         "train-00000-of-00002.tfrecord --validation-data tfrecord:@/empty.tfrecord",
     "--validation-data", "", writes_file("empty.tfrecord", "")},
    {"data_csv_header_only", kTrain + "--model " + kGoldenTrain + "classifier.json --data csv:@/rows.csv",
     "holds no rows", "", writes_file("rows.csv", "a,b,c,d,e,f,g,h,label\n")},
    // -- .npz data files (mnist.npz in the data set directory) --
    {"npz_garbage", kTrainHere, "mnist.npz", "",
     [](const fs::path& d, const Fixtures&) { write_bytes(d / "mnist.npz", "PK\3\4 not really"); }},
    {"npz_truncated", kTrainHere, "mnist.npz", "",
     [](const fs::path& d, const Fixtures&) {
       write_npz(d);
       cut(d / "mnist.npz", 0.7);
     }},
    {"npz_missing_member", kTrainHere, "x_test", "",
     [](const fs::path& d, const Fixtures&) {
       write_npz(d, {{"x_test", ""}});
     }},
    {"npz_float_array", kTrainHere, "dtype", "",
     [](const fs::path& d, const Fixtures&) {
       write_npz(d, {{"y_train", npy("<f4", "(8,)", std::string(32, '\0'))}});
     }},
    {"npz_2_to_the_40_elements", kTrainHere, "x_train", "",
     [](const fs::path& d, const Fixtures&) {
       write_npz(d, {{"x_train", npy("|u1", "(1099511627776, 28, 28)", std::string(784, '\1'))}});
     }},
    {"npz_negative_dimension", kTrainHere, "shape", "",
     [](const fs::path& d, const Fixtures&) {
       write_npz(d, {{"y_test", npy("|u1", "(-4,)", "")}});
     }},
    {"npz_fortran_order", kTrainHere, "Fortran", "",
     [](const fs::path& d, const Fixtures&) {
       write_npz(d, {{"x_test", npy("|u1", "(4, 28, 28)", std::string(4 * 784, '\1'), "True")}});
     }},
    {"npz_bad_npy_magic", kTrainHere, "magic", "",
     [](const fs::path& d, const Fixtures&) {
       write_npz(d, {{"y_test", npy("|u1", "(4,)", "abcd", "False", "\x93PICKL")}});
     }},
    {"npz_npy_header_past_end", kTrainHere, "header", "",
     [](const fs::path& d, const Fixtures&) {
       write_npz(d, {{"y_test", std::string("\x93NUMPY\x01\x00\xff\xff{'descr'", 18)}});
     }},
    {"npz_crc_mismatch", kTrainHere, "CRC", "",
     [](const fs::path& d, const Fixtures&) {
       write_npz(d, {},
                 [](const std::string& name, const std::string& data) { return crc32(data) ^ (name == "x_test.npy"); });
     }},
    // -- backups (--backup-dir) whose every checkpoint is damaged --
    {"backup_truncated", kFitBackup, "truncated", "",
     backup_fit(each_checkpoint([](const fs::path& f) { cut(f, 0.9); }))},
    {"backup_empty_file", kFitBackup, "ckpt-", "",
     backup_fit(each_checkpoint([](const fs::path& f) { fs::resize_file(f, 0); }))},
    {"backup_crc_mismatch", kFitBackup, "CRC32C", "",
     backup_fit(each_checkpoint([](const fs::path& f) { flip_near_end(f); }))},
    {"backup_absurd_header_length", kFitBackup, "header length", "", backup_fit(each_checkpoint([](const fs::path& f) {
       std::fstream(f, std::ios::in | std::ios::out | std::ios::binary).write("\0\0\0\0\0\0\0\x10", 8);
     }))},
    {"backup_header_not_json", kFitBackup, "JSON", "", backup_fit(each_checkpoint([](const fs::path& f) {
       std::fstream(f, std::ios::in | std::ios::out | std::ios::binary).seekp(8).write("[[[", 3);
     }))},
    {"backup_unknown_dtype", kFitBackup, "F16", "", backup_fit(each_checkpoint([](const fs::path& f) {
       edit_header(f, [](Json& h) {
         for (auto& [k, v] : h.items())
           if (k != "__metadata__") v["dtype"] = "F16";
       });
     }))},
    {"backup_offsets_past_end", kFitBackup, "data_offsets", "", backup_fit(each_checkpoint([](const fs::path& f) {
       edit_header(f, [](Json& h) {
         for (auto& [k, v] : h.items())
           if (k != "__metadata__") v["data_offsets"][1] = v["data_offsets"][1].get<uint64_t>() + (uint64_t{1} << 40);
       });
     }))},
    {"backup_of_another_model", kFitBackup, "shape", "", copy_of(&Fixtures::backup_fashion, "backup", [](auto) {})},
    {"backup_newer_format", kFitBackup, "format version", "", backup_fit(each_checkpoint([](const fs::path& f) {
       edit_header(f, [](Json& h) { h["__metadata__"]["format_version"] = "99"; });
     }))},
    {"backup_objects_not_json", kFitBackup, "metadata", "", backup_fit(each_checkpoint([](const fs::path& f) {
       edit_header(f, [](Json& h) { h["__metadata__"]["objects"] = "{\"fit\": "; });
     }))},
    {"backup_save_counter_text", kFitBackup, "save_counter", "", backup_fit(each_checkpoint([](const fs::path& f) {
       edit_header(f, [](Json& h) { h["__metadata__"]["save_counter"] = "many"; });
     }))},
    {"backup_fit_position_missing", kFitBackup, "total_steps", "", backup_fit([](const fs::path& d) {
       edit_per_worker(d, [](Json& o) { o["fit"][0].erase("total_steps"); });
     })},
    {"backup_fit_negative_epoch", kFitBackup, "epoch -5", "",
     backup_fit([](const fs::path& d) { edit_per_worker(d, [](Json& o) { o["fit"][0]["epoch"] = -5; }); })},
    {"backup_ctl_loop_state_missing", kCtlBackup, "step_in_epoch", "", backup_ctl([](const fs::path& d) {
       edit_per_worker(d, [](Json& o) { o["loop"][0].erase("step_in_epoch"); });
     })},
    {"backup_ctl_loop_state_wrong_type", kCtlBackup, "loop", "", backup_ctl([](const fs::path& d) {
       edit_per_worker(d, [](Json& o) { o["loop"][0]["steps"] = "three"; });
     })},
    // -- data set iterator states inside a backup --
    {"backup_fit_metrics_not_a_list", kFitBackup, "malformed", "", backup_fit([](const fs::path& d) {
       edit_per_worker(d, [](Json& o) { o["fit"][0]["metrics"] = "x"; });
     })},
    {"backup_ctl_negative_epoch", kCtlBackup, "epoch -5", "",
     backup_ctl([](const fs::path& d) { edit_per_worker(d, [](Json& o) { o["loop"][0]["epoch"] = -5; }); })},
    {"backup_random_seed_text", kCtlBackup, "random", "",
     backup_ctl([](const fs::path& d) { edit_objects(d, [](Json& o) { o["random"]["seed"] = "x"; }); })},
    {"backup_unknown_variable", kCtlBackup, "'stranger'", "",
     backup_ctl([](const fs::path& d) { edit_objects(d, [](Json& o) { o["model"]["variables"][0] = "stranger"; }); })},
    // -- data set iterator states inside a backup --
    {"iterator_state_wrong_format", kCtlBackup, "Iterator state", "", backup_ctl([](const fs::path& d) {
       edit_per_worker(d, [](Json& o) { input_position(o)["replicas"][0]["format"] = "tf.data"; });
     })},
    {"iterator_state_not_an_object", kCtlBackup, "iterator", "",
     backup_ctl([](const fs::path& d) { edit_per_worker(d, [](Json& o) { o["iterator"] = 42; }); })},
    {"iterator_other_pipeline", kCtlBackup + "--batch-size 4", "pipeline", "", backup_ctl([](auto) {})},
    {"iterator_position_past_the_data", kCtlBackup, "position 1000", "", backup_ctl([](const fs::path& d) {
       edit_per_worker(d, [](Json& o) { source_state(o)["input_at_start"]["position"] = 1000; });
     })},
    {"iterator_iteration_text", kCtlBackup, "malformed", "", backup_ctl([](const fs::path& d) {
       edit_per_worker(d, [](Json& o) { input_position(o)["replicas"][0]["iteration"] = "x"; });
     })},
    // Replaying 2^62 shuffled elements would never end: the finite input says so first.
    {"iterator_absurd_replay", kCtlBackup, "4611686018427387904", "", backup_ctl([](const fs::path& d) {
       edit_per_worker(d, [](Json& o) { source_state(o)["produced"] = int64_t{1} << 62; });
     })},
    {"iterator_negative_skip", kCtlBackup, "skips -1", "",
     backup_ctl([](const fs::path& d) { edit_per_worker(d, [](Json& o) { input_position(o)["skip"] = -1; }); })},
    {"iterator_zero_replicas", kCtlBackup, "0 replicas", "",
     backup_ctl([](const fs::path& d) { edit_per_worker(d, [](Json& o) { input_position(o)["num_replicas"] = 0; }); })},
    {"iterator_no_replica_pipelines", kCtlBackup, "replica pipelines", "", backup_ctl([](const fs::path& d) {
       edit_per_worker(d, [](Json& o) { input_position(o)["replicas"] = Json::array(); });
     })},
    {"iterator_negative_repeat_epoch", kCtlBackup, "epoch -2", "", backup_ctl([](const fs::path& d) {
       edit_per_worker(d, [](Json& o) { input_position(o)["replicas"][0]["state"]["input"]["epoch"] = -2; });
     })},
    {"iterator_negative_batch_count", kCtlBackup, "count -3", "", backup_ctl([](const fs::path& d) {
       edit_per_worker(d, [](Json& o) { input_position(o)["replicas"][0]["state"]["count"] = -3; });
     })},
    // -- saved models (lockstep evaluate --model) --
    {"model_missing_directory", "evaluate --model @/model --dataset DATA", "@/model"},
    {"model_missing_config", "evaluate --model @/model --dataset DATA", "config.json", "",
     saved_model([](const fs::path& m) { fs::remove(m / "config.json"); })},
    {"model_missing_weights", "evaluate --model @/model --dataset DATA", "model.weights.safetensors", "",
     saved_model([](const fs::path& m) { fs::remove(m / "model.weights.safetensors"); })},
    {"model_config_is_a_list", "evaluate --model @/model --dataset DATA", "config.json", "",
     saved_model([](const fs::path& m) { write_bytes(m / "config.json", "[1, 2, 3]"); })},
    {"model_unknown_layer", "evaluate --model @/model --dataset DATA", "Transformer", "",
     saved_model(config([](Json& c) { c["config"]["layers"][2]["class_name"] = "Transformer"; }))},
    {"model_negative_units", "evaluate --model @/model --dataset DATA", "Dense", "",
     saved_model(config([](Json& c) { layer(c, 4)["units"] = -5; }))},
    {"model_text_units", "evaluate --model @/model --dataset DATA", "units", "",
     saved_model(config([](Json& c) { layer(c, 4)["units"] = "many"; }))},
    {"model_absurd_units", "evaluate --model @/model --dataset DATA", "weights", "",
     saved_model(config([](Json& c) { layer(c, 4)["units"] = int64_t{1} << 40; }))},
    {"model_absurd_filters", "evaluate --model @/model --dataset DATA", "weights", "",
     saved_model(config([](Json& c) { layer(c, 2)["filters"] = 100000000; }))},
    {"model_layers_missing", "evaluate --model @/model --dataset DATA", "layers", "",
     saved_model(config([](Json& c) { c["config"].erase("layers"); }))},
    {"model_unknown_optimizer", "evaluate --model @/model --dataset DATA", "compile_config", "",
     saved_model(config([](Json& c) { c["compile_config"]["optimizer"] = "adagrad-plus"; }))},
    {"model_unknown_optimizer_class", "evaluate --model @/model --dataset DATA", "Nadam", "",
     saved_model(config([](Json& c) { c["compile_config"]["optimizer"]["class_name"] = "Nadam"; }))},
    {"model_unknown_activation", "evaluate --model @/model --dataset DATA", "swishy", "",
     saved_model(config([](Json& c) { layer(c, 2)["activation"] = "swishy"; }))},
    {"model_weights_truncated", "evaluate --model @/model --dataset DATA", "truncated", "",
     saved_model([](const fs::path& m) { cut(m / "model.weights.safetensors", 0.5); })},
    {"model_weights_crc_mismatch", "evaluate --model @/model --dataset DATA", "CRC32C", "",
     saved_model([](const fs::path& m) { flip_near_end(m / "model.weights.safetensors"); })},
    {"model_weights_reshaped", "evaluate --model @/model --dataset DATA", "shape", "",
     saved_model([](const fs::path& m) {
       edit_header(m / "model.weights.safetensors", [](Json& h) {
         for (auto& [k, v] : h.items())
           if (v.contains("shape") && v["shape"].size() == 2) v["shape"] = {v["shape"][1], v["shape"][0]};
       });
     })},
    {"model_weights_one_tensor_short", "evaluate --model @/model --dataset DATA", "holds 5 tensors", "",
     saved_model([](const fs::path& m) {
       const fs::path weights = m / "model.weights.safetensors";
       edit_header(weights, [](Json& h) {  // the last tensor (the output bias, 10 floats) dropped
         h.erase("dense_1/bias");
         h["__metadata__"].erase("crc32c/dense_1/bias");
       });
       fs::resize_file(weights, fs::file_size(weights) - 40);
     })},
    {"model_optimizer_file_missing", "evaluate --model @/model --dataset DATA", "optimizer", "",
     saved_model([](const fs::path& m) { fs::remove(m / "optimizer.safetensors"); })},
    {"model_is_a_file", "evaluate --model @/file --dataset DATA", "file", "",
     [](const fs::path& d, const Fixtures&) { write_bytes(d / "file", "x"); }},
    {"model_negative_input_shape", "evaluate --model @/model --dataset DATA", "shape", "",
     saved_model(config([](Json& c) {
       layer(c, 0)["batch_input_shape"] = {nullptr, 28, -28};
     }))},
};

// ---- running them ----

class BadInput : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() { f_.root = temp_dir("bad_input_fixtures"); }
  static void TearDownTestSuite() { fs::remove_all(f_.root); }
  static Fixtures f_;
};
Fixtures BadInput::f_;

std::string substitute(std::string text, const fs::path& dir, const Fixtures& f) {
  for (auto [from, to] : {std::pair{std::string("DATA"), f.data().string()}, {std::string("@"), dir.string()}})
    for (size_t at; (at = text.find(from)) != std::string::npos;) text.replace(at, from.size(), to);
  return text;
}

TEST_P(BadInput, ExitCode2AndOneLineNamingTheProblem) {
  const Case& c = GetParam();
  const fs::path dir = temp_dir("bad_input_case");
  struct Cleanup {
    fs::path dir;
    ~Cleanup() { fs::remove_all(dir); }
  } cleanup{dir};
  if (c.setup) {
    ASSERT_NO_FATAL_FAILURE(c.setup(dir, f_));
  }
  // A shell prefix (ulimit ...;) stays in front; the variables go to `env`, which first clears the cluster's.
  std::string shell, vars = c.env;
  if (size_t semicolon = vars.rfind(';'); semicolon != std::string::npos) {
    shell = vars.substr(0, semicolon + 1);
    vars = vars.substr(semicolon + 1);
  }
  const std::string env = shell + " env -u TF_CONFIG -u SLURM_PROCID -u LOCKSTEP_PORT " + vars;
  const Result r = run_lockstep(substitute(c.args, dir, f_), env, 60);
  const std::string keyword = substitute(c.keyword, dir, f_);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("lockstep: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(keyword), std::string::npos) << "no '" << keyword << "' in: " << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  EXPECT_TRUE(std::none_of(r.err.begin(), r.err.end() - !r.err.empty(), [](char ch) { return ch >= 0 && ch < 0x20; }))
      << "control characters on the terminal: " << r.err;
  // Nothing trained or evaluated before the refusal.
  for (const char* sign : {"Epoch ", "Test loss", "Checkpoint "})
    EXPECT_EQ(r.out.find(sign), std::string::npos) << "output before the refusal: " << r.out;
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadInput, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

// The fixtures the corpus damages are sound: untouched, each one works.
TEST_F(BadInput, UndamagedFixturesWork) {
  Result r = run_lockstep("evaluate --model " + f_.model().string() + " --dataset " + f_.data().string(), "", 60);
  EXPECT_EQ(r.code, 0) << r.err;
  const fs::path dir = temp_dir("bad_input_control");
  fs::copy(f_.backup_ctl(), dir / "backup");
  r = run_lockstep(substitute(kCtlBackup, dir, f_), "", 60);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("continuing at step"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// A backup whose index is mangled (a 2 MB line, which once overflowed the stack of the regex reading it) and
// which holds a file numbered past 2^63: both are passed over, and training resumes from the checkpoint there.
TEST_F(BadInput, AMangledBackupIndexIsPassedOver) {
  const fs::path dir = temp_dir("bad_input_index");
  fs::copy(f_.backup_ctl(), dir / "backup");
  write_bytes(dir / "backup/checkpoint", "model_checkpoint_path: \"" + std::string(2000000, 'a') + "\"\n");
  write_bytes(dir / "backup/ckpt-99999999999999999999999.safetensors", "x");
  const Result r = run_lockstep(substitute(kCtlBackup, dir, f_) + " --verbose 0", "", 60);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("continuing at step 2"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// --save-model writes into a temporary sibling directory and renames it into place: a save that fails
// half-way (here the file size limit stops the weights) leaves no partial directory, and an existing saved
// model stays exactly as it was.
TEST_F(BadInput, FailedSaveLeavesNoPartialModelAndTheOldOneIntact) {
  const fs::path dir = temp_dir("bad_input_save");
  fs::copy(f_.model(), dir / "existing");
  auto snapshot = [&] {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::directory_iterator(dir / "existing")) files[e.path().filename()] = read_all(e.path());
    return files;
  };
  const auto before = snapshot();
  for (const std::string target : {"new", "existing"}) {
    const Result r = run_lockstep(kTrain + "--verbose 0 --steps-per-epoch 2 --dataset " + f_.data().string() +
                                      " --save-model " + (dir / target).string(),
                                  "trap '' XFSZ; ulimit -f 1000;", 120);
    EXPECT_EQ(r.code, 2) << target << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
    std::vector<std::string> entries;
    for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path().filename());
    EXPECT_EQ(entries, std::vector<std::string>{"existing"}) << "a partial or temporary directory was left";
  }
  EXPECT_EQ(snapshot(), before) << "the saved model that was there changed";
  fs::remove_all(dir);
}

// An epoch whose last global batch has fewer examples than there are replicas leaves some of them without
// data in that step: said once, before training, on the chief.
TEST_F(BadInput, LastBatchSmallerThanTheReplicasIsOneWarning) {
  const fs::path dir = temp_dir("bad_input_warning");
  write_idx_dataset(dir, 33, 8);  // 33 = 2 * 16 + 1: the last batch holds 1 image for 2 replicas
  const Result r = run_lockstep("train --dataset " + dir.string() +
                                    " --epochs 1 --batch-size 16 --threads 1 "
                                    "--verbose 0 --workers 2",
                                "", 120);
  EXPECT_EQ(r.code, 0) << r.err;
  const auto warnings = lines_after(r.err, "[worker 0] ");
  const auto said = std::count_if(warnings.begin(), warnings.end(),
                                  [](const std::string& l) { return l.find("last batch") != std::string::npos; });
  EXPECT_EQ(said, 1) << r.err;
  const auto others = lines_after(r.err, "[worker 1] ");
  EXPECT_TRUE(std::none_of(others.begin(), others.end(), [](const std::string& l) {
    return l.find("last batch") != std::string::npos;
  })) << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::testing
