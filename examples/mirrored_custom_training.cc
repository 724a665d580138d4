// TensorFlow's "Custom training with tf.distribute.Strategy" tutorial in lockstep: MirroredStrategy over
// two logical CPU devices, Fashion-MNIST split across them, the L2-regularised CNN, a GradientTape
// train_step whose per-example losses are averaged over the global batch, strategy.run/reduce, metrics, a
// checkpoint saved every other epoch, and the latest one restored into a model created without a strategy.
// Usage: mirrored_custom_training [epochs] [max_steps_per_epoch] [checkpoint_dir]
//   checkpoint_dir: default a fresh directory removed at the end.
#include <lockstep/lockstep.h>
#include <lockstep/train/checkpoint.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

namespace ls = lockstep;
namespace keras = ls::keras;
namespace fs = std::filesystem;

keras::Sequential create_model() {
  auto regularizer = keras::regularizers::L2(1e-5);
  return keras::Sequential({keras::layers::Conv2D(32, 3, {.activation = "relu", .kernel_regularizer = regularizer}),
                            keras::layers::MaxPooling2D(),
                            keras::layers::Conv2D(64, 3, {.activation = "relu", .kernel_regularizer = regularizer}),
                            keras::layers::MaxPooling2D(), keras::layers::Flatten(),
                            keras::layers::Dense(64, {.activation = "relu", .kernel_regularizer = regularizer}),
                            keras::layers::Dense(10, {.kernel_regularizer = regularizer})});
}

// A fresh directory of this process, removed when the program ends.
struct TempDir {
  std::string path = (fs::temp_directory_path() / "mirrored_custom_training-XXXXXX").string();
  TempDir() {
    if (!mkdtemp(path.data())) throw std::runtime_error("cannot create a directory under " + path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

int main(int argc, char** argv) try {
  const int64_t EPOCHS = argc > 1 ? std::atoll(argv[1]) : 10;
  const int64_t max_steps = argc > 2 ? std::atoll(argv[2]) : -1;
  std::optional<TempDir> temp_dir;
  // The directory that stores the checkpoints.
  const std::string checkpoint_dir = argc > 3 ? argv[3] : temp_dir.emplace().path;
  const std::string checkpoint_prefix = (fs::path(checkpoint_dir) / "ckpt").string();

  auto [train, test] = ls::datasets::fashion_mnist::load_data();
  // Add a channels dimension and scale to [0, 1].
  ls::Tensor train_images = ls::reshape(ls::cast(train.images, ls::DType::float32) / 255.0, {-1, 28, 28, 1});
  ls::Tensor test_images = ls::reshape(ls::cast(test.images, ls::DType::float32) / 255.0, {-1, 28, 28, 1});
  ls::Tensor train_labels = ls::cast(train.labels, ls::DType::int64), test_labels = ls::cast(test.labels, ls::DType::int64);

  ls::distribute::MirroredStrategy strategy({"/cpu:0", "/cpu:1"});
  std::printf("Number of devices: %d\n", strategy.num_replicas_in_sync());

  const int64_t BUFFER_SIZE = train_images.dim(0);
  const int64_t BATCH_SIZE_PER_REPLICA = 64;
  const int64_t GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync();
  auto train_dataset =
      ls::data::Dataset::from_tensor_slices(train_images, train_labels).shuffle(BUFFER_SIZE).batch(GLOBAL_BATCH_SIZE);
  auto test_dataset = ls::data::Dataset::from_tensor_slices(test_images, test_labels).batch(GLOBAL_BATCH_SIZE);
  auto train_dist_dataset = strategy.experimental_distribute_dataset(train_dataset);
  auto test_dist_dataset = strategy.experimental_distribute_dataset(test_dataset);

  // Per-example losses: the reduction happens in compute_loss, over the global batch.
  auto loss_object = keras::losses::SparseCategoricalCrossentropy(
      {.from_logits = true, .reduction = keras::losses::Reduction::NONE});
  auto compute_loss = [&](const ls::Tensor& labels, const ls::Tensor& predictions, const std::vector<ls::Tensor>& model_losses) {
    ls::Tensor per_example_loss = (*loss_object)(labels, predictions);
    ls::Tensor loss = ls::nn::compute_average_loss(per_example_loss, {.global_batch_size = GLOBAL_BATCH_SIZE});
    if (!model_losses.empty()) loss = loss + ls::nn::scale_regularization_loss(ls::add_n(model_losses));
    return loss;
  };

  // Metrics to track loss and accuracy. Created under strategy.scope(), they are sync-on-read: every replica
  // updates its own, and result() sums them over all replicas.
  std::shared_ptr<keras::metrics::MeanMetric> test_loss;
  std::shared_ptr<keras::metrics::Metric> train_accuracy, test_accuracy;
  {
    auto scope = strategy.scope();
    test_loss = keras::metrics::Mean("test_loss");
    train_accuracy = keras::metrics::SparseCategoricalAccuracy("train_accuracy");
    test_accuracy = keras::metrics::SparseCategoricalAccuracy("test_accuracy");
  }

  // A model and an optimizer must be created under strategy.scope(); the checkpoint finds the strategy
  // through them.
  keras::Sequential model;
  std::shared_ptr<keras::optimizers::Optimizer> optimizer;
  {
    auto scope = strategy.scope();
    model = create_model();
    optimizer = keras::optimizers::Adam({.learning_rate = 0.001});
  }
  ls::train::Checkpoint checkpoint({{"optimizer", optimizer}, {"model", model}});

  auto train_step = [&](const ls::data::Batch& inputs) {
    ls::GradientTape tape;
    ls::Tensor predictions = model(inputs.x(), {.training = true});
    ls::Tensor loss = compute_loss(inputs.y(), predictions, model.losses());
    auto gradients = tape.gradient(loss, model.trainable_variables());
    optimizer->apply_gradients(gradients, model.trainable_variables());
    train_accuracy->update_state(inputs.y(), predictions);
    return loss;
  };
  auto test_step = [&](const ls::data::Batch& inputs) {
    ls::Tensor predictions = model(inputs.x(), {.training = false});
    ls::Tensor t_loss = (*loss_object)(inputs.y(), predictions);
    test_loss->update_state(t_loss);
    test_accuracy->update_state(inputs.y(), predictions);
  };
  // strategy.run replicates the computation and runs it with the distributed input.
  auto distributed_train_step = [&](const ls::distribute::PerReplica<ls::data::Batch>& dataset_inputs) {
    auto per_replica_losses = strategy.run(train_step, dataset_inputs);
    return strategy.reduce(ls::distribute::ReduceOp::SUM, per_replica_losses).item<double>();
  };
  auto distributed_test_step = [&](const ls::distribute::PerReplica<ls::data::Batch>& dataset_inputs) {
    strategy.run(test_step, dataset_inputs);
  };

  for (int64_t epoch = 0; epoch < EPOCHS; ++epoch) {
    // TRAIN LOOP
    double total_loss = 0.0;
    int64_t num_batches = 0;
    for (const auto& x : train_dist_dataset) {
      total_loss += distributed_train_step(x);
      if (++num_batches == max_steps) break;
    }
    const double train_loss = total_loss / static_cast<double>(num_batches);
    // TEST LOOP
    int64_t test_batches = 0;
    for (const auto& x : test_dist_dataset) {
      distributed_test_step(x);
      if (++test_batches == max_steps) break;
    }
    if (epoch % 2 == 0) checkpoint.save(checkpoint_prefix);
    std::printf("Epoch %lld, Loss: %g, Accuracy: %g, Test Loss: %g, Test Accuracy: %g\n",
                static_cast<long long>(epoch + 1), train_loss, train_accuracy->result() * 100, test_loss->result(),
                test_accuracy->result() * 100);
    test_loss->reset_states();
    train_accuracy->reset_states();
    test_accuracy->reset_states();
  }

  // Restore the latest checkpoint and test: a model checkpointed under a strategy restores without one.
  auto eval_accuracy = keras::metrics::SparseCategoricalAccuracy("eval_accuracy");
  keras::Sequential new_model = create_model();
  auto new_optimizer = keras::optimizers::Adam();
  auto eval_step = [&](const ls::Tensor& images, const ls::Tensor& labels) {
    ls::Tensor predictions = new_model(images, {.training = false});
    (*eval_accuracy)(labels, predictions);
  };
  ls::train::Checkpoint new_checkpoint({{"optimizer", new_optimizer}, {"model", new_model}});
  // assert_consumed(): every saved value found its object, and nothing was left unrestored.
  new_checkpoint.restore(ls::train::latest_checkpoint(checkpoint_dir).value_or("")).assert_consumed();
  int64_t eval_batches = 0;
  for (const ls::data::Element& batch : test_dataset) {
    eval_step(batch.x(), batch.y());
    if (++eval_batches == max_steps) break;
  }
  std::printf("Accuracy after restoring the saved model without strategy: %g\n", eval_accuracy->result() * 100);
} catch (const std::exception& e) {
  std::fprintf(stderr, "mirrored_custom_training: %s\n", e.what());
  return 1;
}
