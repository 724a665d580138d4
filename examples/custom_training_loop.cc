// TensorFlow's "Custom training with tf.distribute.Strategy" tutorial on one worker, in lockstep:
// Fashion-MNIST, the L2-regularised CNN, a GradientTape train_step whose per-example losses are averaged
// over the global batch with compute_average_loss, a test_step, and Keras metrics.
// Usage: custom_training_loop [epochs] [max_steps_per_epoch]
#include <lockstep/lockstep.h>

#include <cstdio>
#include <cstdlib>

namespace ls = lockstep;
namespace keras = ls::keras;

keras::Sequential create_model() {
  auto regularizer = keras::regularizers::L2(1e-5);
  return keras::Sequential({keras::layers::Conv2D(32, 3, {.activation = "relu", .kernel_regularizer = regularizer}),
                            keras::layers::MaxPooling2D(),
                            keras::layers::Conv2D(64, 3, {.activation = "relu", .kernel_regularizer = regularizer}),
                            keras::layers::MaxPooling2D(), keras::layers::Flatten(),
                            keras::layers::Dense(64, {.activation = "relu", .kernel_regularizer = regularizer}),
                            keras::layers::Dense(10, {.kernel_regularizer = regularizer})});
}

int main(int argc, char** argv) {
  const int64_t EPOCHS = argc > 1 ? std::atoll(argv[1]) : 10;
  const int64_t max_steps = argc > 2 ? std::atoll(argv[2]) : -1;

  auto [train, test] = ls::datasets::fashion_mnist::load_data();
  // Add a channels dimension and scale to [0, 1].
  ls::Tensor train_images = ls::reshape(ls::cast(train.images, ls::DType::float32) / 255.0, {-1, 28, 28, 1});
  ls::Tensor test_images = ls::reshape(ls::cast(test.images, ls::DType::float32) / 255.0, {-1, 28, 28, 1});
  ls::Tensor train_labels = ls::cast(train.labels, ls::DType::int64), test_labels = ls::cast(test.labels, ls::DType::int64);

  const int64_t BUFFER_SIZE = train_images.dim(0);
  const int64_t BATCH_SIZE_PER_REPLICA = 64;
  const int64_t num_replicas_in_sync = 1;  // one worker, one replica: the distributed tutorials change this
  const int64_t GLOBAL_BATCH_SIZE = BATCH_SIZE_PER_REPLICA * num_replicas_in_sync;
  auto train_dataset =
      ls::data::Dataset::from_tensor_slices(train_images, train_labels).shuffle(BUFFER_SIZE).batch(GLOBAL_BATCH_SIZE);
  auto test_dataset = ls::data::Dataset::from_tensor_slices(test_images, test_labels).batch(GLOBAL_BATCH_SIZE);

  // Per-example losses: the reduction happens in compute_loss, over the global batch.
  auto loss_object = keras::losses::SparseCategoricalCrossentropy(
      {.from_logits = true, .reduction = keras::losses::Reduction::NONE});
  auto compute_loss = [&](const ls::Tensor& labels, const ls::Tensor& predictions, const std::vector<ls::Tensor>& model_losses) {
    ls::Tensor per_example_loss = (*loss_object)(labels, predictions);
    ls::Tensor loss = ls::nn::compute_average_loss(per_example_loss, {.global_batch_size = GLOBAL_BATCH_SIZE});
    if (!model_losses.empty()) loss = loss + ls::nn::scale_regularization_loss(ls::add_n(model_losses));
    return loss;
  };

  auto test_loss = keras::metrics::Mean("test_loss");
  auto train_accuracy = keras::metrics::SparseCategoricalAccuracy("train_accuracy");
  auto test_accuracy = keras::metrics::SparseCategoricalAccuracy("test_accuracy");

  keras::Sequential model = create_model();
  auto optimizer = keras::optimizers::Adam({.learning_rate = 0.001});

  auto train_step = [&](const ls::data::Batch& inputs) {
    ls::GradientTape tape;
    ls::Tensor predictions = model(inputs.x, {.training = true});
    ls::Tensor loss = compute_loss(inputs.y, predictions, model.losses());
    auto gradients = tape.gradient(loss, model.trainable_variables());
    optimizer->apply_gradients(gradients, model.trainable_variables());
    train_accuracy->update_state(inputs.y, predictions);
    return loss.item<double>();
  };
  auto test_step = [&](const ls::data::Batch& inputs) {
    ls::Tensor predictions = model(inputs.x, {.training = false});
    ls::Tensor t_loss = (*keras::losses::SparseCategoricalCrossentropy({.from_logits = true}))(inputs.y, predictions);
    test_loss->update_state(t_loss);
    test_accuracy->update_state(inputs.y, predictions);
  };

  for (int64_t epoch = 0; epoch < EPOCHS; ++epoch) {
    // TRAIN LOOP
    double total_loss = 0.0;
    int64_t num_batches = 0;
    for (const ls::data::Batch& x : train_dataset) {
      total_loss += train_step(x);
      if (++num_batches == max_steps) break;
    }
    const double train_loss = total_loss / static_cast<double>(num_batches);
    // TEST LOOP
    int64_t test_batches = 0;
    for (const ls::data::Batch& x : test_dataset) {
      test_step(x);
      if (++test_batches == max_steps) break;
    }
    std::printf("Epoch %lld, Loss: %g, Accuracy: %g, Test Loss: %g, Test Accuracy: %g\n",
                static_cast<long long>(epoch + 1), train_loss, train_accuracy->result() * 100, test_loss->result(),
                test_accuracy->result() * 100);
    test_loss->reset_state();
    train_accuracy->reset_state();
    test_accuracy->reset_state();
  }
}
