// Writes the seed corpora of the fuzz targets that read what lockstep itself writes (safetensors files,
// checkpoints, saved models, iterator states, coordination requests) plus the TF_CONFIG and SLURM seeds:
// `make_fuzz_corpus fuzz/corpus` after a format changes. The IDX and npz seeds come from make_corpus.py.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "distribute/coordination/coordination.pb.h"
#include "lockstep/keras/layers.h"
#include "lockstep/keras/losses.h"
#include "lockstep/keras/model.h"
#include "lockstep/keras/optimizers.h"
#include "lockstep/tensor/ops.h"
#include "lockstep/train/checkpoint.h"

namespace fs = std::filesystem;
using namespace lockstep;

namespace {

fs::path root;

void put(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(root / target);
  std::ofstream(root / target / name, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void tf_config() {
  put("tf_config", "two_workers.json",
      R"({"cluster": {"worker": ["host1:12345", "host2:12345"]}, "task": {"type": "worker", "index": 1}})");
  put("tf_config", "chief_evaluator.json",
      R"({"cluster": {"chief": ["c:2222"], "worker": ["w0:2222", "w1:2222"], "evaluator": ["e:2222"]},)"
      R"( "task": {"type": "evaluator", "index": 0}, "rpc_layer": "grpc", "environment": "cloud"})");
  put("tf_config", "environment_object.json",
      R"({"cluster": {"worker": ["localhost: 12345"]}, "task": {"type": "worker", "index": 0},)"
      R"( "environment": {"name": "local", "cluster_token_file": "/run/secrets/token", "tls_ca_file": "ca.pem"}})");
  put("tf_config", "empty_object.json", "{}");
  put("tf_config", "bad_index.json", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "0"}})");
  put("tf_config", "sparse_job.json",
      R"({"cluster": {"worker": {"0": "a:1"}}, "task": {"type": "worker", "index": 0}})");
  put("tf_config", "truncated.json", R"({"cluster": {"worker": ["a:1", )");
}

void slurm() {
  put("slurm", "two_nodes.txt", "1\n4\nnode[01-02]\n2(x2)\nnode01\n1");
  put("slurm", "mixed_list.txt", "0\n5\nrack[1-2]-n[1-2],gpu7\n1(x4),1");
  put("slurm", "one_task.txt", "0\n1\nlocalhost\n1");
  put("slurm", "bad_range.txt", "0\n3\nnode[3-1]\n3");
  put("slurm", "nested.txt", "0\n2\nnode[1-[2]]\n2");
}

Variable float_var(std::vector<float> v, const std::string& name) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Variable(from_vector<float>(std::move(v), {n}), {.name = name});
}

void safetensors() {
  const Tensor matrix = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor counts = from_vector<int64_t>({7, 8}, {2});
  const std::string two =
      train::serialize_safetensors({{"dense/kernel", matrix}, {"counts", counts}}, {{"format", "pt"}});
  put("safetensors", "two_tensors.safetensors", two);
  put("safetensors", "scalar_and_empty.safetensors",
      train::serialize_safetensors(
          {{"s", scalar(3.5, DType::float32)}, {"e", Tensor::empty(Shape({0, 4}), DType::float32)}}));
  // As the Python package writes them: no checksums, another padding.
  std::string plain = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const uint64_t length = plain.size();
  put("safetensors", "python_style.safetensors",
      std::string(reinterpret_cast<const char*>(&length), 8) + plain + std::string("\0\0\x80\x3f\0\0\0\x40", 8));
  put("safetensors", "truncated.safetensors", two.substr(0, two.size() - 5));
  std::string flipped = two;
  flipped[flipped.size() - 1] ^= 1;
  put("safetensors", "bad_crc.safetensors", flipped);
}

void checkpoints() {
  const fs::path dir = fs::temp_directory_path() / ("lockstep_make_corpus_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const data::Dataset ds = data::Dataset::range(0, 100).shuffle(100, 3).batch(4);  // as fuzz_checkpoint.cc
  for (int steps : {0, 7}) {
    Variable epoch(scalar(2, DType::int64), {.name = "epoch", .trainable = false});
    Variable w = float_var({1, 2, 3}, "w");
    data::Iterator it = ds.make_iterator(0);
    for (int i = 0; i < steps; ++i) it.next();
    train::Checkpoint ckpt({{"epoch", epoch}, {"w", w}, {"iterator", it}});
    const std::string prefix = ckpt.save((dir / "ckpt").string());
    put("checkpoint", "after_" + std::to_string(steps) + "_steps.safetensors", slurp(prefix + ".safetensors"));
  }
  put("checkpoint", "index.txt", slurp(dir / "checkpoint"));
  // A weights file, not a checkpoint: no format in its metadata.
  put("checkpoint", "weights_only.safetensors",
      train::serialize_safetensors({{"w", from_vector<float>({1, 2, 3}, {3})}}));
  fs::remove_all(dir);
}

void model_configs() {
  const fs::path dir = fs::temp_directory_path() / ("lockstep_make_corpus_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto save = [&](keras::Sequential model, const std::string& name) {
    model.save((dir / name).string());
    put("model_config", name + ".json", slurp(dir / name / "config.json"));
  };
  using namespace keras::layers;
  keras::Sequential mlp(
      {keras::Input({28, 28}), Flatten(), Dense(16, {.activation = "relu"}), Dropout(0.2), Dense(10)});
  mlp.compile({.optimizer = keras::optimizers::SGD({.learning_rate = 0.01}),
               .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true}),
               .metrics = {"accuracy"}});
  save(mlp, "mlp_compiled");
  save(keras::Sequential({keras::Input({8, 8}), Reshape({8, 8, 1}), Conv2D(2, 3, {.activation = "relu"}),
                          MaxPooling2D(), BatchNormalization(), Flatten(), Activation("softmax")}),
       "cnn");
  save(keras::Sequential({keras::Input({4}), Flatten()}), "no_weights");
  fs::remove_all(dir);
  put("model_config", "not_an_object.json", "[1, 2, 3]");
}

void dataset_states() {
  // As fuzz_dataset_state.cc's pipelines.
  const Tensor x = from_vector<float>(std::vector<float>(60, 1.0f), {20, 3});
  const Tensor y = from_vector<int64_t>(std::vector<int64_t>(20, 1), {20});
  const std::vector<data::Dataset> pipelines = {
      data::Dataset::from_tensor_slices(x, y).shuffle(8, 7).batch(4).repeat(),
      data::Dataset::range(0, 50).repeat(3).shuffle(10, 2).skip(2).take(30).shard(2, 1).cache().prefetch(2),
      data::Dataset::range(0, 30)
          .map([](const data::Element& e) { return e; })
          .filter([](const data::Element& e) { return e.x().item<int64_t>() % 3 != 0; })
          .batch(3, true)
          .repeat(2)};
  for (size_t p = 0; p < pipelines.size(); ++p) {
    for (int steps : {0, 3, 11}) {
      data::Iterator it = pipelines[p].make_iterator(1);
      for (int i = 0; i < steps; ++i) it.next();
      put("dataset_state", "pipeline" + std::to_string(p) + "_after_" + std::to_string(steps) + ".json",
          it.save_state().dump());
    }
  }
}

// One call in fuzz_coordination.cc's input format.
std::string call(int method, const google::protobuf::Message& request, int token = 0) {
  const std::string bytes = request.SerializeAsString();
  return std::string{char(method), char(token), char(bytes.size())} + bytes;
}

void coordination_calls() {
  namespace pb = ::lockstep::coordination;
  auto task = [](int rank) {
    pb::Task t;
    t.set_rank(rank);
    t.set_incarnation(1000 + rank);
    return t;
  };
  auto reg = [&](int rank, const std::string& fingerprint) {
    pb::RegisterRequest r;
    *r.mutable_task() = task(rank);
    r.set_world_size(2);
    r.set_fingerprint(fingerprint);
    r.set_timeout_ms(150);
    return r;
  };
  pb::SetRequest set;
  *set.mutable_task() = task(0);
  set.set_key("gloo/rank0");
  set.set_value("address-blob");
  pb::GetRequest get;
  *get.mutable_task() = task(1);
  get.set_key("gloo/rank0");
  get.set_wait(true);
  get.set_timeout_ms(100);
  pb::BarrierRequest barrier;
  *barrier.mutable_task() = task(0);
  barrier.set_name("init");
  barrier.set_timeout_ms(100);
  pb::BarrierRequest barrier1 = barrier;
  *barrier1.mutable_task() = task(1);
  pb::ReportErrorRequest error;
  *error.mutable_task() = task(1);
  error.set_message("out of memory");
  const std::string fp =
      R"({"lockstep_version":"0.1.0","global_batch_size":64,"variables":[{"name":"w","shape":[3],"dtype":"float32"}]})";
  const std::string job = std::string(1, '\x01') + call(0, reg(0, fp)) + call(0, reg(1, fp));
  put("coordination", "register_set_get_barrier.bin",
      job + call(3, set) + call(4, get) + call(5, barrier) + call(5, barrier1) + call(1, task(0)) + call(6, barrier) +
          call(6, barrier1));
  put("coordination", "watch_and_fail.bin", job + call(2, task(1)) + call(7, error) + call(4, get));
  put("coordination", "fingerprint_mismatch.bin",
      std::string(1, '\x01') + call(0, reg(0, fp)) +
          call(0, reg(1, R"({"lockstep_version":"0.1.0","global_batch_size":32})")));
  put("coordination", "no_token.bin", job + call(3, set, 2) + call(4, get, 1));
  pb::Task outside = task(7);
  put("coordination", "rank_outside.bin", std::string(1, '\x00') + call(1, outside) + call(0, reg(-1, "")));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_fuzz_corpus <corpus dir, e.g. fuzz/corpus>\n";
    return 2;
  }
  root = argv[1];
  tf_config();
  slurm();
  safetensors();
  checkpoints();
  model_configs();
  dataset_states();
  coordination_calls();
  return 0;
}
