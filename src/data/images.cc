// PNG through libpng and JPEG through libjpeg-turbo, set up as TensorFlow's decoders set them up (so pixels
// match tf.io.decode_*), and tf.image.resize's bilinear and nearest kernels with half-pixel centers.
// Both libraries report errors by longjmp: each decode keeps every C++ object it needs across the jump in a
// context declared before setjmp, so the jump skips no destructor, and throws only after returning from it.
#include "lockstep/data/images.h"

// clang-format off
#include <cstddef>  // jpeglib.h needs size_t and FILE declared before it
#include <cstdio>
#include <jpeglib.h>
#include <png.h>
// clang-format on

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstring>

#include "lockstep/data/readers.h"

namespace lockstep::data {

namespace {

// Larger decoded images are refused before allocation: a corrupt header must not ask for terabytes.
constexpr uint64_t kMaxDecodedBytes = uint64_t{1} << 31;

[[noreturn]] void corrupt(const std::string& name, const std::string& format, const std::string& what,
                          uint64_t offset) {
  throw DataLossError(make_message(name, ": corrupt or truncated ", format, " (", what, ", at byte ", offset,
                                   "); replace or remove the file"));
}

void check_channels(int channels, const std::string& name, const char* format, int max_channels) {
  LS_CHECK(channels == 0 || channels == 1 || channels == 3 || (channels == 4 && max_channels == 4),
           InvalidArgumentError, name, ": ", format, " does not support ", channels, " channels; use ",
           max_channels == 4 ? "0 (as stored), 1, 3 or 4" : "0 (as stored), 1 or 3");
}

Tensor new_image(uint64_t height, uint64_t width, uint64_t channels, const std::string& name) {
  LS_CHECK(height * width * channels <= kMaxDecodedBytes, InvalidArgumentError, name, ": a ", height, "x", width, "x",
           channels, " image exceeds lockstep's limit of ", kMaxDecodedBytes, " decoded bytes");
  return Tensor::empty(
      Shape({static_cast<int64_t>(height), static_cast<int64_t>(width), static_cast<int64_t>(channels)}), DType::uint8);
}

// ---- PNG ----

// Everything that lives across setjmp, reached by libpng through a pointer, so a longjmp finds it in memory.
struct PngContext {
  std::span<const uint8_t> bytes;
  size_t offset = 0;
  std::string error;  // what libpng (or our reader) said, set before the longjmp
  Tensor out;
  std::vector<png_bytep> rows;
};

void png_read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* ctx = static_cast<PngContext*>(png_get_io_ptr(png));
  if (n > ctx->bytes.size() - ctx->offset) {
    ctx->offset = ctx->bytes.size();
    png_error(png, "the data ends before the image does");
  }
  std::memcpy(out, ctx->bytes.data() + ctx->offset, n);
  ctx->offset += n;
}

void png_on_error(png_structp png, png_const_charp message) {
  auto* ctx = static_cast<PngContext*>(png_get_error_ptr(png));
  if (ctx->error.empty()) ctx->error = message;
  png_longjmp(png, 1);
}
void png_on_warning(png_structp, png_const_charp) {}  // TF decodes through warnings too

}  // namespace

Tensor decode_png(std::span<const uint8_t> bytes, int channels, const std::string& name) {
  check_channels(channels, name, "PNG", 4);
  PngContext ctx;
  ctx.bytes = bytes;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, png_on_error, png_on_warning);
  LS_CHECK(png != nullptr, RuntimeError, "libpng could not create a reader (out of memory?)");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw RuntimeError("libpng could not create a reader (out of memory?)");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    corrupt(name, "PNG", ctx.error, ctx.offset);
  }
  png_set_read_fn(png, &ctx, png_read_bytes);
  png_read_info(png, info);
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0;
  png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, nullptr, nullptr, nullptr);

  // The transformations of TF's png_io.cc, in its order.
  const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  int want = channels;
  if (want == 0) want = color_type == PNG_COLOR_TYPE_PALETTE ? (has_trns ? 4 : 3) : png_get_channels(png, info);
  const bool has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0;
  if (want % 2 == 0) {
    if (!has_alpha) {
      if (has_trns)
        png_set_tRNS_to_alpha(png);
      else
        png_set_add_alpha(png, (1u << bit_depth) - 1, PNG_FILLER_AFTER);  // TF's filler value
    }
  } else if (has_alpha || has_trns) {
    png_set_strip_alpha(png);
  }
  if (bit_depth > 8) png_set_strip_16(png);
  png_set_packing(png);
  png_set_interlace_handling(png);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  const bool is_gray = (color_type & PNG_COLOR_MASK_COLOR) == 0;
  if (is_gray && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (want < 3 && !is_gray) png_set_rgb_to_gray(png, 1, 0.299, 0.587);  // Rec. 601, as JPEG
  if (want >= 3 && is_gray) png_set_gray_to_rgb(png);
  png_read_update_info(png, info);

  const uint64_t got_channels = png_get_channels(png, info);
  if (got_channels != static_cast<uint64_t>(want) || png_get_bit_depth(png, info) != 8) {
    ctx.error = make_message("libpng produced ", got_channels, " channels of ", int(png_get_bit_depth(png, info)),
                             " bits where ", want, " of 8 were asked for");
    png_longjmp(png, 1);
  }
  if (uint64_t{height} * width * got_channels > kMaxDecodedBytes) {
    ctx.error = make_message("a ", height, "x", width, "x", got_channels, " image is beyond lockstep's limit of ",
                             kMaxDecodedBytes, " decoded bytes");
    png_longjmp(png, 1);
  }
  ctx.out = new_image(height, width, got_channels, name);
  ctx.rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) ctx.rows[y] = ctx.out.data<uint8_t>() + uint64_t{y} * width * got_channels;
  png_read_image(png, ctx.rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return std::move(ctx.out);
}

// ---- JPEG ----

namespace {

// Everything that lives across setjmp, reached by libjpeg's callbacks through cinfo->client_data.
struct JpegContext {
  jpeg_error_mgr err;
  std::jmp_buf jump;
  jpeg_source_mgr source;
  std::span<const uint8_t> bytes;
  std::string error;
  Tensor out;
};

void jpeg_on_error(j_common_ptr cinfo) {
  auto* ctx = static_cast<JpegContext*>(cinfo->client_data);
  char message[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, message);
  if (ctx->error.empty()) ctx->error = message;
  std::longjmp(ctx->jump, 1);
}
void jpeg_on_message(j_common_ptr, int) {}  // warnings (e.g. extraneous bytes) do not stop TF either

// The whole file is in the buffer from the start, so asking for more means it is truncated. (libjpeg's own
// memory source would insert a fake end marker and decode gray rows instead, as TF does not by default.)
void jpeg_source_noop(j_decompress_ptr) {}
boolean jpeg_source_fill(j_decompress_ptr cinfo) {
  auto* ctx = static_cast<JpegContext*>(cinfo->client_data);
  ctx->error = "the data ends before the image does";
  std::longjmp(ctx->jump, 1);
}
void jpeg_source_skip(j_decompress_ptr cinfo, long n) {
  if (n <= 0) return;
  if (static_cast<size_t>(n) > cinfo->src->bytes_in_buffer) jpeg_source_fill(cinfo);
  cinfo->src->next_input_byte += n;
  cinfo->src->bytes_in_buffer -= static_cast<size_t>(n);
}

}  // namespace

Tensor decode_jpeg(std::span<const uint8_t> bytes, int channels, const std::string& name) {
  check_channels(channels, name, "JPEG", 3);
  JpegContext ctx{};
  ctx.bytes = bytes;
  jpeg_decompress_struct cinfo{};
  cinfo.err = jpeg_std_error(&ctx.err);
  cinfo.client_data = &ctx;
  ctx.err.error_exit = jpeg_on_error;
  ctx.err.output_message = [](j_common_ptr) {};
  ctx.err.emit_message = jpeg_on_message;
  if (setjmp(ctx.jump)) {
    const uint64_t offset = cinfo.src ? bytes.size() - cinfo.src->bytes_in_buffer : 0;
    jpeg_destroy_decompress(&cinfo);
    corrupt(name, "JPEG", ctx.error, offset);
  }
  jpeg_create_decompress(&cinfo);
  ctx.source.next_input_byte = bytes.data();
  ctx.source.bytes_in_buffer = bytes.size();
  ctx.source.init_source = jpeg_source_noop;
  ctx.source.fill_input_buffer = jpeg_source_fill;
  ctx.source.skip_input_data = jpeg_source_skip;
  ctx.source.resync_to_restart = jpeg_resync_to_restart;
  ctx.source.term_source = jpeg_source_noop;
  cinfo.src = &ctx.source;
  jpeg_read_header(&cinfo, TRUE);

  const int stored = cinfo.num_components;
  if (stored != 1 && stored != 3) {
    ctx.error = make_message(stored, "-component (CMYK/YCCK) JPEGs are not supported; convert the image to RGB");
    std::longjmp(ctx.jump, 1);
  }
  const int want = channels == 0 ? stored : channels;
  cinfo.out_color_space = want == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo.dct_method = JDCT_IFAST;  // TF's default (dct_method="")
  cinfo.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_components != want) {
    ctx.error = make_message("libjpeg produced ", cinfo.output_components, " channels where ", want, " were asked for");
    std::longjmp(ctx.jump, 1);
  }
  if (uint64_t{cinfo.output_height} * cinfo.output_width * want > kMaxDecodedBytes) {
    ctx.error = make_message("a ", cinfo.output_height, "x", cinfo.output_width, "x", want,
                             " image is beyond lockstep's limit of ", kMaxDecodedBytes, " decoded bytes");
    std::longjmp(ctx.jump, 1);
  }
  ctx.out = new_image(cinfo.output_height, cinfo.output_width, static_cast<uint64_t>(want), name);
  const uint64_t stride = uint64_t{cinfo.output_width} * static_cast<uint64_t>(want);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = ctx.out.data<uint8_t>() + cinfo.output_scanline * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return std::move(ctx.out);
}

// ---- any format ----

namespace {

bool starts_with(std::span<const uint8_t> bytes, std::string_view magic) {
  return bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
}

// The format other decoders would recognise, for the error message; empty when unknown.
std::string other_format(std::span<const uint8_t> bytes) {
  if (starts_with(bytes, "GIF8")) return "GIF";
  if (starts_with(bytes, "BM")) return "BMP";
  if (starts_with(bytes, "RIFF") && bytes.size() >= 12 && std::memcmp(bytes.data() + 8, "WEBP", 4) == 0) return "WebP";
  return "";
}

}  // namespace

Tensor decode_image(std::span<const uint8_t> bytes, int channels, const std::string& name) {
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n")) return decode_png(bytes, channels, name);
  if (starts_with(bytes, "\xff\xd8\xff")) return decode_jpeg(bytes, channels, name);
  const std::string format = other_format(bytes);
  throw InvalidArgumentError(make_message(
      name, ": ", format.empty() ? "not a PNG or JPEG image (unknown signature)" : "a " + format + " image",
      "; lockstep decodes PNG and JPEG only: convert it or remove it"));
}

Tensor read_image(const std::string& path, int channels) {
  return decode_image(read_file(path), channels, path);
}

// ---- resize ----

namespace {

// TF's resize kernels compute the source coordinate in float32 (image_resizer_state.h); the same arithmetic
// gives the same pixels.
struct Lerp {
  int64_t lower, upper;
  float weight;
};

std::vector<Lerp> bilinear_weights(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<Lerp> w(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float x = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const float x_floor = std::floor(x);
    w[static_cast<size_t>(i)] = {std::max(static_cast<int64_t>(x_floor), int64_t{0}),
                                 std::min(static_cast<int64_t>(std::ceil(x)), in - 1), x - x_floor};
  }
  return w;
}

std::vector<int64_t> nearest_indices(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<int64_t> idx(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const int64_t x = static_cast<int64_t>(std::floor((static_cast<float>(i) + 0.5f) * scale));
    idx[static_cast<size_t>(i)] = std::max(std::min(x, in - 1), int64_t{0});
  }
  return idx;
}

}  // namespace

Tensor resize_image(const Tensor& images, std::array<int64_t, 2> size, const std::string& method) {
  LS_CHECK(images.rank() == 3 || images.rank() == 4, InvalidArgumentError,
           "resize_image: images must be [height, width, channels] or [batch, height, width, channels], got shape ",
           images.shape().str());
  LS_CHECK(size[0] > 0 && size[1] > 0, InvalidArgumentError, "resize_image: size must be positive, got [", size[0],
           ", ", size[1], "]");
  LS_CHECK(method == "bilinear" || method == "nearest", ValueError, "resize_image: method \"", method,
           "\" is not supported; use \"bilinear\" or \"nearest\"");
  const bool batched = images.rank() == 4;
  const Tensor in = images.contiguous();
  const int64_t n = batched ? in.dim(0) : 1, h = in.dim(batched ? 1 : 0), w = in.dim(batched ? 2 : 1),
                c = in.dim(batched ? 3 : 2);
  LS_CHECK(h > 0 && w > 0, InvalidArgumentError, "resize_image: cannot resize an empty image of shape ",
           images.shape().str());
  const int64_t oh = size[0], ow = size[1];
  Shape out_shape = batched ? Shape({n, oh, ow, c}) : Shape({oh, ow, c});

  if (method == "nearest") {
    Tensor out = Tensor::empty(out_shape, in.dtype());
    const size_t bytes = dtype_size(in.dtype()) * static_cast<size_t>(c);
    const auto ys = nearest_indices(h, oh), xs = nearest_indices(w, ow);
    const auto* src = static_cast<const uint8_t*>(in.raw_data());
    auto* dst = static_cast<uint8_t*>(out.raw_data());
    for (int64_t b = 0; b < n; ++b)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x, dst += bytes)
          std::memcpy(dst, src + ((b * h + ys[size_t(y)]) * w + xs[size_t(x)]) * static_cast<int64_t>(bytes), bytes);
    return out;
  }

  const std::vector<float> src = in.to_vector<float>();
  Tensor out = Tensor::empty(out_shape, DType::float32);
  float* dst = out.data<float>();
  const auto ys = bilinear_weights(h, oh), xs = bilinear_weights(w, ow);
  for (int64_t b = 0; b < n; ++b) {
    const float* image = src.data() + b * h * w * c;
    for (const Lerp& y : ys) {
      const float* top = image + y.lower * w * c;
      const float* bottom = image + y.upper * w * c;
      for (const Lerp& x : xs) {
        for (int64_t k = 0; k < c; ++k) {
          const float tl = top[x.lower * c + k], tr = top[x.upper * c + k];
          const float bl = bottom[x.lower * c + k], br = bottom[x.upper * c + k];
          const float t = tl + (tr - tl) * x.weight;
          const float u = bl + (br - bl) * x.weight;
          *dst++ = t + (u - t) * y.weight;
        }
      }
    }
  }
  return out;
}

}  // namespace lockstep::data
