// The built-in models of `lockstep train`, as the TensorFlow tutorials define them, and their weights hash.
#include <openssl/evp.h>

#include "cli.h"

namespace lockstep::cli {

namespace k = keras;
namespace kl = keras::layers;

keras::Sequential build_model(const std::string& name) {
  if (name == "tutorial_cnn") {  // MultiWorkerMirroredStrategy with Keras: build_and_compile_cnn_model
    return k::Sequential({k::Input({28, 28}), kl::Reshape({28, 28, 1}), kl::Conv2D(32, 3, {.activation = "relu"}),
                          kl::Flatten(), kl::Dense(128, {.activation = "relu"}), kl::Dense(10)});
  }
  if (name == "fashion_cnn") {  // custom training with tf.distribute.Strategy, with the L2 of the multi-worker CTL
    auto l2 = k::regularizers::L2(1e-5);
    return k::Sequential({k::Input({28, 28}), kl::Reshape({28, 28, 1}),
                          kl::Conv2D(32, 3, {.activation = "relu", .kernel_regularizer = l2}), kl::MaxPooling2D(),
                          kl::Conv2D(64, 3, {.activation = "relu", .kernel_regularizer = l2}), kl::MaxPooling2D(),
                          kl::Flatten(), kl::Dense(64, {.activation = "relu", .kernel_regularizer = l2}),
                          kl::Dense(10, {.kernel_regularizer = l2})});
  }
  throw ValueError(make_message("unknown model '", name, "': use tutorial_cnn or fashion_cnn"));
}

std::string weights_sha256(const keras::Model& model) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (const Variable& v : model.variables()) {
    Tensor t = v.value().contiguous();  // x86 is little-endian: the bytes are already in the promised order
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
