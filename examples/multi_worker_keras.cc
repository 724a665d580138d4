// TensorFlow's "Multi-worker training with Keras" tutorial in lockstep: mnist_dataset,
// build_and_compile_cnn_model, MultiWorkerMirroredStrategy from TF_CONFIG, then fit for 3 epochs of 70 steps.
// The tutorial reads MNIST; this port reads Fashion-MNIST, which Debian ships (dataset-fashion-mnist).
// Run: lockstep launch -n 2 -- multi_worker_keras [steps_per_epoch]
#include <lockstep/lockstep.h>

#include <cstdlib>

namespace ls = lockstep;
namespace keras = ls::keras;

ls::data::Dataset mnist_dataset(int64_t batch_size) {
  auto [train, test] = ls::datasets::fashion_mnist::load_data();
  // The images are uint8 in [0, 255]: convert them to float32 in [0, 1].
  ls::Tensor x_train = ls::cast(train.images, ls::DType::float32) / 255.0;
  ls::Tensor y_train = ls::cast(train.labels, ls::DType::int64);
  return ls::data::Dataset::from_tensor_slices(x_train, y_train).shuffle(60000).repeat().batch(batch_size);
}

keras::Sequential build_and_compile_cnn_model() {
  keras::Sequential model({keras::Input({28, 28}), keras::layers::Reshape({28, 28, 1}),
                           keras::layers::Conv2D(32, 3, {.activation = "relu"}), keras::layers::Flatten(),
                           keras::layers::Dense(128, {.activation = "relu"}), keras::layers::Dense(10)});
  model.compile({.optimizer = keras::optimizers::SGD({.learning_rate = 0.001}),
                 .loss = keras::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  return model;
}

int main(int argc, char** argv) {
  const int64_t steps_per_epoch = argc > 1 ? std::atoll(argv[1]) : 70;
  const int64_t per_worker_batch_size = 64;
  ls::distribute::MultiWorkerMirroredStrategy strategy;  // reads TF_CONFIG; one local worker when it is unset
  const int64_t global_batch_size = per_worker_batch_size * strategy.num_replicas_in_sync();
  ls::data::Dataset multi_worker_dataset = mnist_dataset(global_batch_size);
  keras::Sequential multi_worker_model;
  {
    auto scope = strategy.scope();  // model building and compiling must be within the scope
    multi_worker_model = build_and_compile_cnn_model();
  }
  multi_worker_model.fit(multi_worker_dataset, {.epochs = 3, .steps_per_epoch = steps_per_epoch});
}
