// One worker of cli/metrics_workers_test.cc: the custom loop of TF's distributed-training tutorials with
// sync-on-read metrics, on MultiWorkerMirroredStrategy (TF_CONFIG from `lockstep launch`). A few training steps
// update train_accuracy on every replica, a test pass updates test_loss and test_accuracy; every worker prints
// each result() (over all workers) at full precision, and the test metrics computed again by this process alone
// over the whole test set with the same weights. Usage: metrics_worker [train_steps]
#include <lockstep/lockstep.h>

#include <cstdio>
#include <cstdlib>

namespace ls = lockstep;
namespace keras = ls::keras;

// The same examples in every process: 4 classes of points in 8 dimensions.
ls::data::Dataset make_dataset(int64_t n, uint64_t seed) {
  ls::Philox rng(seed);
  ls::Tensor x = ls::random_uniform({n, 8}, rng);
  ls::Tensor y = ls::cast(ls::random_uniform({n}, rng, 0, 4, ls::DType::float64), ls::DType::int64);
  return ls::data::Dataset::from_tensor_slices(x, y);
}

int main(int argc, char** argv) try {
  const int64_t train_steps = argc > 1 ? std::atoll(argv[1]) : 5;
  ls::distribute::MultiWorkerMirroredStrategy strategy;
  const int64_t GLOBAL_BATCH_SIZE = 16 * strategy.num_replicas_in_sync();
  // 100 test examples: the last global batch is a partial one, spread over the replicas.
  auto train_dist_dataset =
      strategy.experimental_distribute_dataset(make_dataset(512, 1).repeat().batch(GLOBAL_BATCH_SIZE));
  auto test_dataset = make_dataset(100, 2).batch(GLOBAL_BATCH_SIZE);
  auto test_dist_dataset = strategy.experimental_distribute_dataset(test_dataset);

  auto loss_object =
      keras::losses::SparseCategoricalCrossentropy({.from_logits = true, .reduction = keras::losses::Reduction::NONE});
  keras::utils::set_random_seed(3);
  keras::Sequential model;
  std::shared_ptr<keras::optimizers::Optimizer> optimizer;
  std::shared_ptr<keras::metrics::MeanMetric> test_loss;
  std::shared_ptr<keras::metrics::Metric> train_accuracy, test_accuracy;
  {
    auto scope = strategy.scope();
    model = keras::Sequential(
        {keras::Input({8}), keras::layers::Dense(16, {.activation = "relu"}), keras::layers::Dense(4)});
    optimizer = keras::optimizers::SGD({.learning_rate = 0.1});
    test_loss = keras::metrics::Mean("test_loss");
    train_accuracy = keras::metrics::SparseCategoricalAccuracy("train_accuracy");
    test_accuracy = keras::metrics::SparseCategoricalAccuracy("test_accuracy");
  }

  auto train_step = [&](const ls::data::Batch& inputs) {
    ls::GradientTape tape;
    ls::Tensor predictions = model(inputs.x(), {.training = true});
    ls::Tensor loss =
        ls::nn::compute_average_loss((*loss_object)(inputs.y(), predictions), {.global_batch_size = GLOBAL_BATCH_SIZE});
    auto gradients = tape.gradient(loss, model.trainable_variables());
    optimizer->apply_gradients(gradients, model.trainable_variables());
    train_accuracy->update_state(inputs.y(), predictions);
    return loss;
  };
  auto test_step = [&](const ls::data::Batch& inputs) {
    ls::Tensor predictions = model(inputs.x(), {.training = false});
    test_loss->update_state((*loss_object)(inputs.y(), predictions));
    test_accuracy->update_state(inputs.y(), predictions);
  };

  auto it = train_dist_dataset.begin();
  for (int64_t step = 0; step < train_steps; ++step) strategy.run(train_step, *it.next());
  for (const auto& x : test_dist_dataset) strategy.run(test_step, x);

  // This process alone, over the whole test set, with metrics created outside any scope.
  auto whole_loss = keras::metrics::Mean();
  auto whole_accuracy = keras::metrics::SparseCategoricalAccuracy();
  for (const ls::data::Element& batch : test_dataset) {
    ls::Tensor predictions = model(batch.x(), {.training = false});
    (*whole_loss)((*loss_object)(batch.y(), predictions));
    (*whole_accuracy)(batch.y(), predictions);
  }

  // result() is a collective: every worker calls it, in the same order.
  std::printf("workers %d\n", strategy.num_workers());
  std::printf("train_accuracy %.17g\n", train_accuracy->result());
  std::printf("test_accuracy %.17g whole %.17g\n", test_accuracy->result(), whole_accuracy->result());
  std::printf("test_loss %.17g whole %.17g\n", test_loss->result(), whole_loss->result());
  // state() is this worker's share: the examples it saw itself.
  std::printf("examples %.17g whole %.17g\n", test_accuracy->state()[1], whole_accuracy->state()[1]);
  test_accuracy->reset_states();
  std::printf("after_reset %.17g\n", test_accuracy->result());
} catch (const std::exception& e) {
  std::fprintf(stderr, "metrics_worker: %s\n", e.what());
  return 1;
}
