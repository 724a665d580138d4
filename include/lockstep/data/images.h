// Image decoding and resizing with TensorFlow's semantics: tf.io.decode_png / decode_jpeg / decode_image (through
// libpng and libjpeg-turbo) and tf.image.resize ("bilinear" without antialiasing, "nearest"; half-pixel centers).
// A corrupt or truncated image is a DataLossError naming it, the byte offset and what the decoder said.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "lockstep/tensor/tensor.h"

namespace lockstep::data {

// Every decoder returns uint8 [height, width, channels]. channels: 0 keeps the stored channels, 1 gives
// grayscale, 3 RGB, 4 RGBA (PNG only), converting as TF does: gray is Y = 0.299 R + 0.587 G + 0.114 B, a missing
// alpha is 255, a removed alpha is dropped (not composited), 16-bit samples keep their high byte.
// `name` (usually the file's path) is what errors call the bytes.
Tensor decode_png(std::span<const uint8_t> bytes, int channels = 0, const std::string& name = "PNG data");
// With TF's default decoder settings: the fast integer IDCT (JDCT_IFAST) and fancy upsampling.
Tensor decode_jpeg(std::span<const uint8_t> bytes, int channels = 0, const std::string& name = "JPEG data");
// PNG or JPEG, told apart by their signature as tf.io.decode_image does (file names do not matter). Another
// format (GIF, BMP, WebP...) is an InvalidArgumentError naming it and the supported formats.
Tensor decode_image(std::span<const uint8_t> bytes, int channels = 0, const std::string& name = "image data");

// decode_image(read_file(path), channels, path) (readers.h' read_file: NotFoundError naming a missing file).
Tensor read_image(const std::string& path, int channels = 0);

// tf.image.resize(images, size, method, antialias=False) for [h, w, c] or [n, h, w, c] images of any real dtype:
// "bilinear" returns float32; "nearest" keeps the input's dtype (as TF: a uint8 image stays uint8).
Tensor resize_image(const Tensor& images, std::array<int64_t, 2> size, const std::string& method = "bilinear");

}  // namespace lockstep::data
