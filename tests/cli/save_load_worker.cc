// One worker of cli/save_load_workers_test.cc: the "Model saving and loading" part of TF's multi-worker Keras
// tutorial, repeated. Every worker saves (the chief to the real path, the others to a temporary directory they
// then remove) and at once loads the chief's files itself, outside the strategy's scope, as the tutorial does;
// each round changes the weights first, so a load that found the previous round's files fails too. A
// ModelCheckpoint and a TensorBoard callback in fit() are checked the same way when fit() returns.
// Prints "round N ok" per round and "events BYTES" (the chief's TensorBoard file, as this worker sees it).
// Usage: save_load_worker DIR ROUNDS
#include <lockstep/lockstep.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace ls = lockstep;
namespace keras = ls::keras;
namespace fs = std::filesystem;

bool is_chief(const std::optional<std::string>& task_type, int task_id) {
  return !task_type || task_type == "chief" || (task_type == "worker" && task_id == 0);
}

// The tutorial's write_filepath: the chief's own path, or one in workertemp_<id> beside it.
std::string write_filepath(const std::string& filepath, const std::optional<std::string>& task_type, int task_id) {
  if (is_chief(task_type, task_id)) return filepath;
  const std::string temp_dir =
      ls::io::gfile::join(fs::path(filepath).parent_path().string(), "workertemp_" + std::to_string(task_id));
  ls::io::gfile::makedirs(temp_dir);
  return ls::io::gfile::join(temp_dir, fs::path(filepath).filename().string());
}

// Every variable of `a` equals that of `b`, bit for bit.
bool same_weights(const keras::Model& a, const keras::Model& b) {
  const std::vector<ls::Variable> va = a.variables(), vb = b.variables();
  if (va.size() != vb.size()) return false;
  for (size_t i = 0; i < va.size(); ++i) {
    const std::vector<float> x = va[i].value().to_vector<float>(), y = vb[i].value().to_vector<float>();
    if (x != y) return false;
  }
  return true;
}

int main(int argc, char** argv) try {
  if (argc != 3) throw ls::ValueError("usage: save_load_worker DIR ROUNDS");
  const std::string dir = argv[1];
  const int rounds = std::atoi(argv[2]);
  ls::distribute::MultiWorkerMirroredStrategy strategy;
  const std::optional<std::string> task_type = strategy.cluster_resolver().task_type();
  const int task_id = strategy.cluster_resolver().task_id();

  ls::Philox rng(7);
  auto dataset = ls::data::Dataset::from_tensor_slices(ls::random_uniform({64, 8}, rng),
                                                       ls::cast(ls::random_uniform({64}, rng, 0, 4, ls::DType::float64),
                                                                ls::DType::int64))
                     .repeat()
                     .batch(8 * strategy.num_replicas_in_sync());
  keras::utils::set_random_seed(1);
  keras::Sequential model;
  {
    auto scope = strategy.scope();
    model = keras::Sequential({keras::Input({8}), keras::layers::Dense(16, {.activation = "relu"}), keras::layers::Dense(4)});
    model.compile({.optimizer = "adam",
                   .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                   .metrics = {"accuracy"}});
  }
  const std::string checkpoint_path = dir + "/checkpoints/epoch-{epoch:02d}.weights.safetensors";
  model.fit(dataset, {.epochs = 2, .steps_per_epoch = 3,
                      .callbacks = {keras::callbacks::ModelCheckpoint(checkpoint_path, {.save_weights_only = true}),
                                    keras::callbacks::TensorBoard({.log_dir = dir + "/logs"})},
                      .verbose = 0});
  // fit() has returned: the chief's last checkpoint and its TensorBoard files are complete.
  keras::Sequential from_checkpoint = keras::Sequential::from_config(model.get_config());
  from_checkpoint.build(ls::Shape({8}));
  from_checkpoint.load_weights(dir + "/checkpoints/epoch-02.weights.safetensors");
  if (!same_weights(model, from_checkpoint)) throw ls::RuntimeError("ModelCheckpoint's last file is not the model's weights");
  uintmax_t events = 0;
  for (const auto& entry : fs::directory_iterator(dir + "/logs/train")) events += entry.file_size();
  std::printf("events %ju\n", events);

  for (int round = 0; round < rounds; ++round) {
    std::vector<ls::Variable> vars = model.variables();
    vars[0].assign(vars[0].value() + 1.0f);  // the same change on every worker: the weights stay mirrored
    // The saved-model directory, then Keras' archive, then the weights alone, in turn.
    const char* kinds[] = {"keras-model", "model.keras", "model.weights.safetensors"};
    const std::string model_path = dir + "/" + kinds[round % 3];
    const std::string write_model_path = write_filepath(model_path, task_type, task_id);
    if (round % 3 == 2) model.save_weights(write_model_path);
    else model.save(write_model_path);
    if (!is_chief(task_type, task_id)) ls::io::gfile::rmtree(fs::path(write_model_path).parent_path().string());

    keras::Model loaded = keras::Sequential::from_config(model.get_config());
    if (round % 3 == 2) {
      loaded.build(ls::Shape({8}));
      loaded.load_weights(model_path);
    } else {
      loaded = keras::models::load_model(model_path);
    }
    if (!same_weights(model, loaded)) throw ls::RuntimeError("round " + std::to_string(round) + ": " + model_path +
                                                             " holds another round's weights");
    std::printf("round %d ok\n", round);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "save_load_worker: %s\n", e.what());
  return 1;
}
