// TensorFlow's "Custom training loop with Keras and MultiWorkerMirroredStrategy" tutorial in lockstep:
// dataset_fn sharded per input pipeline, distribute_datasets_from_function, an RMSprop GradientTape step
// under strategy.run whose losses are summed with strategy.reduce, 3 epochs of 70 steps. Fashion-MNIST stands
// in for MNIST. Checkpointing (the tutorial's CheckpointManager) arrives with the fault-tolerance work.
// Run: lockstep launch -n 2 -- multi_worker_ctl [steps_per_epoch]
#include <lockstep/lockstep.h>

#include <cstdio>
#include <cstdlib>

namespace ls = lockstep;
namespace keras = ls::keras;

ls::data::Dataset mnist_dataset() {
  auto [train, test] = ls::datasets::fashion_mnist::load_data();
  ls::Tensor x_train = ls::cast(train.images, ls::DType::float32) / 255.0;
  ls::Tensor y_train = ls::cast(train.labels, ls::DType::int64);
  return ls::data::Dataset::from_tensor_slices(x_train, y_train).shuffle(60000).repeat();
}

ls::data::Dataset dataset_fn(int64_t global_batch_size, const ls::distribute::InputContext& input_context) {
  const int64_t batch_size = input_context.get_per_replica_batch_size(global_batch_size);
  return mnist_dataset().shard(input_context.num_input_pipelines, input_context.input_pipeline_id).batch(batch_size);
}

keras::Sequential build_cnn_model() {
  auto regularizer = keras::regularizers::L2(1e-5);
  return keras::Sequential({keras::Input({28, 28}), keras::layers::Reshape({28, 28, 1}),
                            keras::layers::Conv2D(32, 3, {.activation = "relu", .kernel_regularizer = regularizer}),
                            keras::layers::Flatten(),
                            keras::layers::Dense(128, {.activation = "relu", .kernel_regularizer = regularizer}),
                            keras::layers::Dense(10, {.kernel_regularizer = regularizer})});
}

int main(int argc, char** argv) {
  const int64_t per_worker_batch_size = 64;
  const int64_t num_epochs = 3;
  const int64_t num_steps_per_epoch = argc > 1 ? std::atoll(argv[1]) : 70;

  ls::distribute::MultiWorkerMirroredStrategy strategy;
  const int64_t global_batch_size = per_worker_batch_size * strategy.num_workers();

  // Model building/compiling need to be within strategy.scope().
  keras::Sequential multi_worker_model;
  std::shared_ptr<keras::optimizers::Optimizer> optimizer;
  std::shared_ptr<keras::metrics::Metric> train_accuracy;
  {
    auto scope = strategy.scope();
    multi_worker_model = build_cnn_model();
    optimizer = keras::optimizers::RMSprop({.learning_rate = 0.001});
    train_accuracy = keras::metrics::SparseCategoricalAccuracy("train_accuracy");
  }
  auto multi_worker_dataset = strategy.distribute_datasets_from_function(
      [&](const ls::distribute::InputContext& input_context) { return dataset_fn(global_batch_size, input_context); });

  // Per-replica step function.
  auto step_fn = [&](const ls::data::Batch& inputs) {
    ls::GradientTape tape;
    ls::Tensor predictions = multi_worker_model(inputs.x, {.training = true});
    ls::Tensor per_example_loss = (*keras::losses::SparseCategoricalCrossentropy(
        {.from_logits = true, .reduction = keras::losses::Reduction::NONE}))(inputs.y, predictions);
    ls::Tensor loss = ls::nn::compute_average_loss(per_example_loss);
    std::vector<ls::Tensor> model_losses = multi_worker_model.losses();
    if (!model_losses.empty()) loss = loss + ls::nn::scale_regularization_loss(ls::add_n(model_losses));
    auto grads = tape.gradient(loss, multi_worker_model.trainable_variables());
    optimizer->apply_gradients(grads, multi_worker_model.trainable_variables());
    train_accuracy->update_state(inputs.y, predictions);
    return loss;
  };
  auto train_step = [&](ls::distribute::DistributedDataset::Iterator& iterator) {
    auto per_replica_losses = strategy.run(step_fn, *iterator.next());
    return strategy.reduce(ls::distribute::ReduceOp::SUM, per_replica_losses).item<double>();
  };

  for (int64_t epoch = 0; epoch < num_epochs; ++epoch) {
    auto iterator = multi_worker_dataset.begin();
    double total_loss = 0.0;
    int64_t num_batches = 0;
    for (int64_t step_in_epoch = 0; step_in_epoch < num_steps_per_epoch; ++step_in_epoch) {
      total_loss += train_step(iterator);
      ++num_batches;
    }
    const double train_loss = total_loss / static_cast<double>(num_batches);
    std::vector<double> accuracy = train_accuracy->state();
    strategy.all_reduce_sum(accuracy);  // the accuracy over all workers
    train_accuracy->set_state(accuracy);
    if (strategy.is_chief())
      std::printf("Epoch: %lld, accuracy: %f, train_loss: %f.\n", static_cast<long long>(epoch), train_accuracy->result(),
                  train_loss);
    train_accuracy->reset_state();
  }
}
