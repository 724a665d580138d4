// The built-in models of `lockstep train`, as the TensorFlow tutorials define them, and their weights hash.
#include <openssl/evp.h>

#include <algorithm>

#include "cli.h"

namespace lockstep::cli {

namespace k = keras;
namespace kl = keras::layers;

namespace {
// MultiWorkerMirroredStrategy with Keras: build_and_compile_cnn_model.
keras::Sequential tutorial_cnn() {
  return k::Sequential({k::Input({28, 28}), kl::Reshape({28, 28, 1}), kl::Conv2D(32, 3, {.activation = "relu"}),
                        kl::Flatten(), kl::Dense(128, {.activation = "relu"}), kl::Dense(10)});
}

// Custom training with tf.distribute.Strategy, with the L2 of the multi-worker CTL.
keras::Sequential fashion_cnn() {
  auto l2 = k::regularizers::L2(1e-5);
  return k::Sequential({k::Input({28, 28}), kl::Reshape({28, 28, 1}),
                        kl::Conv2D(32, 3, {.activation = "relu", .kernel_regularizer = l2}), kl::MaxPooling2D(),
                        kl::Conv2D(64, 3, {.activation = "relu", .kernel_regularizer = l2}), kl::MaxPooling2D(),
                        kl::Flatten(), kl::Dense(64, {.activation = "relu", .kernel_regularizer = l2}),
                        kl::Dense(10, {.kernel_regularizer = l2})});
}

// Every built-in model, once: the commands' choices and messages read this list.
const std::pair<const char*, keras::Sequential (*)()> kBuiltinModels[] = {{"tutorial_cnn", tutorial_cnn},
                                                                          {"fashion_cnn", fashion_cnn}};
}  // namespace

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const auto& [name, build] : kBuiltinModels) names.emplace_back(name);
  return names;
}

bool is_builtin_model(const std::string& name) {
  const std::vector<std::string> names = builtin_model_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

keras::Sequential build_model(const std::string& name) {
  for (const auto& [builtin, build] : kBuiltinModels)
    if (name == builtin) return build();
  throw ValueError(make_message("unknown model '", name, "': use ", keras::join_names(builtin_model_names(), " or ")));
}

std::string weights_sha256(const keras::Model& model) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (const Variable& v : model.variables()) {
    Tensor t = v.value().cpu().contiguous();  // x86 is little-endian: the bytes are already in the promised order
    EVP_DigestUpdate(ctx, t.raw_data(), static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx, digest, &n);
  EVP_MD_CTX_free(ctx);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += {kHex[digest[i] >> 4], kHex[digest[i] & 15]};
  return hex;
}

}  // namespace lockstep::cli
