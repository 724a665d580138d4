// InputFile: stdio reads plain files, zlib's gzFile gzipped ones; a plain file that looks gzipped, or a "GZIP" one
// that is not, is a clear error rather than garbage.
#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "input_file-impl.h"

namespace lockstep::data::detail {

namespace {
gzFile gz(void* f) {
  return static_cast<gzFile>(f);
}
constexpr unsigned kBufferBytes = 256 * 1024;  // zlib's input and output buffers: memory per open file
}  // namespace

void check_compression_type(const std::string& compression_type, const char* reader) {
  LS_CHECK(compression_type.empty() || compression_type == "GZIP", InvalidArgumentError, reader,
           ": compression_type \"", compression_type, "\" is not supported; use \"\" (plain) or \"GZIP\"");
}

std::string describe_files(const std::vector<std::string>& files) {
  std::string out = "[";
  for (size_t i = 0; i < files.size(); ++i) {
    if (i > 0) out += ", ";
    if (files.size() > 4 && i == 2) {
      out += "... (" + std::to_string(files.size()) + " files), ";
      i = files.size() - 1;
    }
    out += files[i];
  }
  return out + "]";
}

InputFile::InputFile(std::string path, const std::string& compression_type, const char* reader)
    : path_(std::move(path)), reader_(reader), gzip_(compression_type == "GZIP") {
  check_compression_type(compression_type, reader);
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) throw NotFoundError(make_message(reader, ": file not found: ", path_));
    throw Error(make_message(reader, ": cannot open ", path_, ": ", std::strerror(err)));
  }
  LS_CHECK(!S_ISDIR(st.st_mode), InvalidArgumentError, reader, ": ", path_, " is a directory; pass the files in it ",
           "(list_files(\"", path_, "/*\"))");
  // Plain files through stdio: zlib's reader would take a plain file that happens to start with gzip's magic bytes
  // (a TFRecord whose first length is 0x8b1f + k * 65536) for a gzip stream.
  if (!gzip_) {
    plain_ = std::fopen(path_.c_str(), "rb");
    if (!plain_) throw Error(make_message(reader, ": cannot open ", path_, ": ", std::strerror(errno)));
    std::setvbuf(plain_, nullptr, _IOFBF, kBufferBytes);
    const int a = std::getc(plain_), b = a < 0 ? -1 : std::getc(plain_);
    starts_like_gzip_ = a == 0x1f && b == 0x8b;
    std::rewind(plain_);
    return;
  }
  file_ = gzopen(path_.c_str(), "rb");
  if (!file_) throw Error(make_message(reader, ": cannot open ", path_, ": ", std::strerror(errno)));
  gzbuffer(gz(file_), kBufferBytes);
  // gzdirect looks at the first bytes: 1 means they are not a gzip header. An empty file is empty either way.
  if (st.st_size > 0 && gzdirect(gz(file_)) == 1) {
    gzclose(gz(file_));
    file_ = nullptr;
    throw DataLossError(make_message(reader, ": ", path_, " is not gzip-compressed but compression_type is \"GZIP\"; ",
                                     "pass compression_type \"\""));
  }
}

InputFile::~InputFile() {
  if (file_) gzclose(gz(file_));
  if (plain_) std::fclose(plain_);
}

void InputFile::fail_stream() {
  if (!gzip_)
    throw Error(
        make_message(reader_, ": cannot read ", path_, " at byte offset ", offset_, ": ", std::strerror(errno)));
  int err = 0;
  const char* what = gzerror(gz(file_), &err);
  throw DataLossError(make_message(reader_, ": ", path_, " is damaged: zlib says \"", what,
                                   "\" at uncompressed byte offset ", offset_,
                                   "; the gzip stream is corrupt or truncated: write the file again"));
}

size_t InputFile::read(void* dst, size_t n) {
  if (!gzip_) {
    const size_t got = std::fread(dst, 1, n, plain_);
    if (got < n && std::ferror(plain_)) fail_stream();
    offset_ += got;
    return got;
  }
  size_t done = 0;
  auto* out = static_cast<char*>(dst);
  while (done < n) {
    const unsigned want = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    const int got = gzread(gz(file_), out + done, want);
    if (got < 0) fail_stream();
    done += static_cast<size_t>(got);
    offset_ += static_cast<uint64_t>(got);
    if (static_cast<unsigned>(got) < want) {
      // A short read is the end of the data, or a gzip stream that stops early (Z_BUF_ERROR).
      int err = 0;
      gzerror(gz(file_), &err);
      if (err != Z_OK) fail_stream();
      break;
    }
  }
  return done;
}

int InputFile::get() {
  const int c = gzip_ ? gzgetc(gz(file_)) : std::getc(plain_);
  if (c < 0) {
    int err = 0;
    if (gzip_) gzerror(gz(file_), &err);
    if (err != Z_OK || (!gzip_ && std::ferror(plain_))) fail_stream();
    return -1;
  }
  ++offset_;
  return c;
}

void InputFile::seek(uint64_t offset) {
  // Seeking past the end of a file stops there (gzseek) or succeeds (fseeko) without complaint: land one byte short
  // and read it.
  const uint64_t before = offset > 0 ? offset - 1 : 0;
  if (gzip_ ? gzseek(gz(file_), static_cast<z_off_t>(before), SEEK_SET) < 0
            : ::fseeko(plain_, static_cast<off_t>(before), SEEK_SET) != 0)
    fail_stream();
  offset_ = before;
  char probe;
  LS_CHECK(offset == 0 || read(&probe, 1) == 1, DataLossError, reader_, ": cannot resume ", path_, " at byte offset ",
           offset, ": the file is shorter now; restore the state into a pipeline over the same, unchanged files");
}

}  // namespace lockstep::data::detail
