// Keras' built-in data sets (tf.keras.datasets.mnist / fashion_mnist): load_data() returns (train, test)
// as Keras does, read from local files only (lockstep never downloads).
//
// Where the files are looked for, in order:
//   1. $LOCKSTEP_DATASETS/<name>/ then $LOCKSTEP_DATASETS itself (name: fashion-mnist or mnist)
//   2. Keras' cache: ~/.keras/datasets/fashion-mnist/*.gz, ~/.keras/datasets/mnist.npz
//   3. Debian's packages: /usr/share/datasets/fashion-mnist (dataset-fashion-mnist), /usr/share/datasets/mnist
// A directory holds the four IDX files (train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each raw or .gz) or, for MNIST, Keras' mnist.npz.
// Nothing found: NotFoundError listing every path tried. A damaged file: DataLossError naming it.
#pragma once
#include <string>
#include <utility>

#include "lockstep/tensor/tensor.h"

namespace lockstep::datasets {

// images uint8 [N, 28, 28] (0..255), labels uint8 [N] (0..9): what Keras returns. Scale and cast
// yourself, e.g. cast(images, float32) / 255.0, and labels to int32/int64 for the sparse losses.
struct Split {
  Tensor images;
  Tensor labels;
};

namespace fashion_mnist {
std::pair<Split, Split> load_data();  // (train: 60000, test: 10000)
}
namespace mnist {
std::pair<Split, Split> load_data();  // (train: 60000, test: 10000)
}

// (train, test) from one directory holding the four IDX files (raw or gzipped) or mnist.npz: what the
// CLI's --dataset DIR reads.
std::pair<Split, Split> load_idx_directory(const std::string& dir);

}  // namespace lockstep::datasets
