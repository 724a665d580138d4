// decode_png / decode_jpeg / decode_image and resize_image against TensorFlow 2.21's outputs for the committed
// images (tests/golden/image_golden.json, made by make_image_golden.py), and the errors for corrupt, truncated
// and unsupported images.
#include "lockstep/data/images.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../golden/image_golden.h"
#include "lockstep/data/readers.h"

namespace lockstep::data {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// TF decodes JPEG with the same libjpeg-turbo settings (fast integer IDCT, fancy upsampling), and the committed
// JPEGs decode to identical bytes; a different libjpeg-turbo build may round an IDCT output differently.
constexpr int kJpegTolerance = 0;

using image_golden::error_of;
using image_golden::golden;
using image_golden::image_root;

bool is_jpeg(const std::string& file) {
  const std::string ext = fs::path(file).extension().string();
  return ext == ".jpg" || ext == ".JPEG" || ext == ".jpeg";
}

// A file under a fresh temporary folder, removed with it.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("lockstep_images_test_" + std::to_string(getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) const {
    const std::string file = (path / name).string();
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    return file;
  }
};

std::vector<uint8_t> golden_file(const std::string& rel) {
  return read_file(image_root() + "/" + rel);
}

TEST(DecodeImage, MatchesTensorFlowForEveryFileAndChannelCount) {
  int compared = 0;
  for (const auto& [file, by_channels] : golden().at("decode").items()) {
    const std::string path = image_root() + "/" + file;
    for (const auto& [ch, expected] : by_channels.items()) {
      SCOPED_TRACE(file + " channels=" + ch);
      const int channels = std::stoi(ch);
      if (expected.contains("error")) {
        EXPECT_NE(
            error_of<InvalidArgumentError>([&] { read_image(path, channels); }).find("does not support 4 channels"),
            std::string::npos);
        continue;
      }
      const Tensor image = read_image(path, channels);
      ASSERT_EQ(image.dtype(), DType::uint8);
      ASSERT_EQ(image.shape(), Shape(expected.at("shape").get<std::vector<int64_t>>()));
      const auto want = expected.at("values").get<std::vector<int>>();
      const auto got = image.to_vector<int>();
      int worst = 0;
      for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
      EXPECT_LE(worst, is_jpeg(file) ? kJpegTolerance : 0) << "largest difference from tf.io.decode_image";
      ++compared;
    }
  }
  EXPECT_GE(compared, 50);
}

TEST(DecodeImage, FormatSpecificDecodersAgreeWithDecodeImage) {
  const auto png = golden_file("bees/b1.png"), jpeg = golden_file("ants/a1.jpg");
  EXPECT_EQ(decode_png(png, 4).to_vector<int>(), decode_image(png, 4).to_vector<int>());
  EXPECT_EQ(decode_jpeg(jpeg, 3).to_vector<int>(), decode_image(jpeg, 0).to_vector<int>());
  // The signature decides, not the name: a PNG handed to the JPEG decoder is corrupt JPEG data.
  EXPECT_NE(error_of<DataLossError>([&] { decode_jpeg(png, 3, "x.jpg"); }).find("x.jpg: corrupt or truncated JPEG"),
            std::string::npos);
}

TEST(ResizeImage, MatchesTensorFlowBilinearAndNearest) {
  for (const json& r : golden().at("resize")) {
    const std::string file = r.at("file"), method = r.at("method");
    SCOPED_TRACE(file + " " + method + " " + r.at("size").dump());
    const auto size = r.at("size").get<std::vector<int64_t>>();
    const Tensor out = resize_image(read_image(image_root() + "/" + file), {size[0], size[1]}, method);
    EXPECT_EQ(dtype_name(out.dtype()), r.at("dtype").get<std::string>());
    ASSERT_EQ(out.shape(), Shape(r.at("shape").get<std::vector<int64_t>>()));
    const auto want = r.at("values").get<std::vector<float>>();
    const auto got = out.to_vector<float>();
    float worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    EXPECT_EQ(worst, 0.0f)
        << "largest difference from tf.image.resize (bit-identical: both round in float32 after every step)";
  }
}

TEST(ResizeImage, BatchedSameSizeAndErrors) {
  const Tensor image = read_image(image_root() + "/ants/a0.png");
  // Resizing to the same size is the identity, as float32.
  EXPECT_EQ(resize_image(image, {9, 12}).to_vector<float>(), image.to_vector<float>());
  // A batch resizes image by image.
  const Tensor batch =
      resize_image(Tensor(image.storage(), Shape({1, 9, 12, 3}), {324, 36, 3, 1}, 0, DType::uint8), {4, 5});
  EXPECT_EQ(batch.shape(), Shape({1, 4, 5, 3}));
  EXPECT_EQ(batch.to_vector<float>(), resize_image(image, {4, 5}).to_vector<float>());
  EXPECT_NE(error_of<ValueError>([&] {
              resize_image(image, {4, 4}, "bicubic");
            }).find("\"bilinear\" or \"nearest\""),
            std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { resize_image(image, {0, 4}); }).find("positive"), std::string::npos);
}

TEST(DecodeImage, TruncatedAndCorruptFilesAreDataLossNamingFileAndOffset) {
  ScratchDir dir;
  for (const std::string rel : {"ants/a0.png", "ants/a1.jpg", "bees/b2.jpg", "wasps/w1.png"}) {
    SCOPED_TRACE(rel);
    std::vector<uint8_t> bytes = golden_file(rel);
    const std::string kind = is_jpeg(rel) ? "JPEG" : "PNG";
    // Cut in the middle of the compressed data.
    std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(bytes.size() * 2 / 3));
    const std::string cut = dir.write("cut_" + fs::path(rel).filename().string(), truncated);
    std::string message = error_of<DataLossError>([&] { read_image(cut, 3); });
    EXPECT_NE(message.find(cut + ": corrupt or truncated " + kind), std::string::npos) << message;
    EXPECT_NE(message.find("at byte "), std::string::npos) << message;
    // Only the signature left.
    truncated.resize(kind == "PNG" ? 8 : 3);
    message = error_of<DataLossError>([&] { decode_image(truncated, 0, "short"); });
    EXPECT_NE(message.find("short: corrupt or truncated " + kind), std::string::npos) << message;
  }
  // A flipped byte in PNG's header chunk fails its CRC; libpng's words are in the message.
  std::vector<uint8_t> png = golden_file("ants/a0.png");
  png[20] ^= 0x40;
  std::string message = error_of<DataLossError>([&] { decode_png(png, 0, "flipped.png"); });
  EXPECT_NE(message.find("flipped.png: corrupt or truncated PNG (IHDR: CRC error, at byte 33)"), std::string::npos)
      << message;
  // A JPEG whose frame header claims 0 lines.
  std::vector<uint8_t> jpeg = golden_file("ants/a1.jpg");
  for (size_t i = 0; i + 6 < jpeg.size(); ++i)
    if (jpeg[i] == 0xff && jpeg[i + 1] == 0xc0)
      jpeg[i + 5] = jpeg[i + 6] = 0;  // SOF0: length(2) precision(1) height(2)
  message = error_of<DataLossError>([&] { decode_jpeg(jpeg, 0, "zero.jpg"); });
  EXPECT_NE(message.find("zero.jpg: corrupt or truncated JPEG (Empty JPEG image"), std::string::npos) << message;
}

// Any damage to a file is either decoded (JPEG, like TF, decodes through damaged entropy data) or a DataLossError:
// never a crash, a hang, another error type or a read outside the buffer (the sanitizer builds check that).
TEST(DecodeImage, DamagedBytesDecodeOrFailCleanly) {
  uint32_t state = 12345;
  auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  int failures = 0, decoded = 0;
  for (const auto& [file, unused] : golden().at("decode").items()) {
    const std::vector<uint8_t> original = golden_file(file);
    for (int trial = 0; trial < 60; ++trial) {
      std::vector<uint8_t> bytes = original;
      if (trial % 3 == 0) bytes.resize(8 + next() % (bytes.size() - 8));  // cut after the signature
      for (int k = 0; k < 1 + trial % 4; ++k)
        bytes[8 + next() % (bytes.size() - 8)] = static_cast<uint8_t>(next() >> 24);
      try {
        const Tensor image = decode_image(bytes, trial % 2 ? 3 : 0, file);
        EXPECT_EQ(image.rank(), 3);
        ++decoded;
      } catch (const DataLossError& e) {
        EXPECT_EQ(std::string(e.what()).rfind(file + ": corrupt or truncated ", 0), 0u) << e.what();
        ++failures;
      }
    }
  }
  EXPECT_GT(failures, 100);
  EXPECT_GT(decoded, 10);
}

TEST(DecodeImage, UnsupportedFormatsAndArgumentsAreClearErrors) {
  const std::vector<uint8_t> gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0, 0, 0};
  std::string message = error_of<InvalidArgumentError>([&] { decode_image(gif, 0, "anim.png"); });
  EXPECT_EQ(message, "anim.png: a GIF image; lockstep decodes PNG and JPEG only: convert it or remove it");
  const std::vector<uint8_t> bmp = {'B', 'M', 0, 0, 0, 0};
  EXPECT_NE(error_of<InvalidArgumentError>([&] { decode_image(bmp, 0, "x.bmp"); }).find("x.bmp: a BMP image"),
            std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] { decode_image({}, 0, "empty"); }).find("empty: not a PNG or JPEG"),
            std::string::npos);
  EXPECT_NE(error_of<InvalidArgumentError>([&] {
              decode_png(golden_file("ants/a0.png"), 2, "a0");
            }).find("a0: PNG does not support 2 channels; use 0 (as stored), 1, 3 or 4"),
            std::string::npos);
  EXPECT_NE(error_of<NotFoundError>([&] { read_image("/nonexistent/x.png"); }).find("/nonexistent/x.png: cannot open"),
            std::string::npos);
}

}  // namespace
}  // namespace lockstep::data
