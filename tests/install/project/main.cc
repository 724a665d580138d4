// Built against an installed lockstep: checks that the version macros came with the package and that the
// linked libraries train. Fits y = 2x + 1 with one Dense unit for a few epochs; the loss must fall.
#include <lockstep/lockstep.h>

#include <cstdio>
#include <cstring>

namespace ls = lockstep;
namespace keras = ls::keras;

int main() try {
  std::printf("lockstep %s (headers %s, %d.%d.%d)\n", ls::version(), LOCKSTEP_VERSION, LOCKSTEP_VERSION_MAJOR,
              LOCKSTEP_VERSION_MINOR, LOCKSTEP_VERSION_PATCH);
  if (std::strcmp(ls::version(), LOCKSTEP_VERSION) != 0) {
    std::fprintf(stderr, "install_smoke: library %s but headers %s\n", ls::version(), LOCKSTEP_VERSION);
    return 1;
  }

  ls::Philox rng(42);
  ls::Tensor x = ls::random_uniform({256, 1}, rng, -1, 1);
  ls::Tensor y = x * 2.0 + 1.0;
  keras::Sequential model({keras::Input({1}), keras::layers::Dense(1)});
  model.compile({.optimizer = "sgd", .loss = "mse"});
  auto history = model.fit(x, y, {.epochs = 5, .batch_size = 32, .verbose = 0});
  const auto& loss = history.history.at("loss");
  for (size_t i = 0; i < loss.size(); ++i) std::printf("epoch %zu loss %.6f\n", i + 1, loss[i]);
  if (!(loss.back() < loss.front())) {
    std::fprintf(stderr, "install_smoke: the loss did not fall\n");
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "install_smoke: %s\n", e.what());
  return 1;
}
