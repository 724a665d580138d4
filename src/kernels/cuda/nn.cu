// Linear algebra and neural-network kernels on the GPU: matmul on cuBLAS; convolution and softmax on cuDNN; pooling,
// the fused sparse softmax cross-entropy and the row gathers behind embeddings as kernels of our own. Pooling is ours
// because cuDNN pools only with symmetric padding and TF's "SAME" pads asymmetrically; the rest needs CPU semantics
// (first maximum on ties, label and index checks) that no library call offers.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "lockstep/core/error.h"
#include "lockstep/kernels/cuda/kernels.h"
#include "lockstep/kernels/cuda/runtime.h"
#include "runtime-impl.h"

namespace lockstep::kernels::cuda {
namespace {

using detail::check_launch;
using detail::Scratch;

constexpr unsigned kThreads = 256;
constexpr int kWarp = 32;
constexpr unsigned kFullWarp = 0xffffffffu;

// First element and step of a grid-stride loop.
__device__ inline int64_t grid_start() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// cuBLAS and cuDNN take int dimensions.
int to_int(int64_t v, const char* what) {
  LS_CHECK(v <= std::numeric_limits<int>::max(), InvalidArgumentError, what, " of ", v, " exceeds ",
           std::numeric_limits<int>::max(), ", the largest that cuBLAS and cuDNN accept");
  return static_cast<int>(v);
}

template <typename T> void zero(T* p, int64_t n) {
  LS_CUDA(cudaMemsetAsync(p, 0, static_cast<size_t>(n) * sizeof(T), detail::stream()));
}

// Element `pos` of a device array, copied back (waits for the stream): the bad label or index an error names.
template <typename I> int64_t element_at(const I* p, int64_t pos) {
  I v{};
  copy(&v, p + pos, sizeof v, CopyKind::device_to_host, current_device());
  return static_cast<int64_t>(v);
}

// The first failing position that kernels report (the smallest, whatever order threads run in), kept on the device
// and read back once after them.
class FirstBadPosition {
 public:
  FirstBadPosition() : flag_(sizeof(unsigned long long)) {
    LS_CUDA(cudaMemsetAsync(flag_.get(), 0xff, sizeof(unsigned long long), detail::stream()));  // no failure yet
  }
  unsigned long long* device() const { return flag_.as<unsigned long long>(); }
  // The position, or -1 when none failed; waits for the stream.
  int64_t position() const {
    unsigned long long v = 0;
    copy(&v, flag_.get(), sizeof v, CopyKind::device_to_host, current_device());
    return v == std::numeric_limits<unsigned long long>::max() ? -1 : static_cast<int64_t>(v);
  }

 private:
  Scratch flag_;
};

__device__ inline void report_failure(unsigned long long* first, int64_t pos) {
  atomicMin(first, static_cast<unsigned long long>(pos));
}

// ---- matmul ----

void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* a, int lda, int64_t a_stride,
          const float* b, int ldb, int64_t b_stride, float* c, int ldc, int64_t c_stride, int batch) {
  const float one = 1, zero = 0;
  LS_CUDA(detail::cublas_api().sgemm_strided_batched(detail::cublas(), ta, tb, m, n, k, &one, a, lda, a_stride, b,
                                                     ldb, b_stride, &zero, c, ldc, c_stride, batch));
}

void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const double* a, int lda, int64_t a_stride,
          const double* b, int ldb, int64_t b_stride, double* c, int ldc, int64_t c_stride, int batch) {
  const double one = 1, zero = 0;
  LS_CUDA(detail::cublas_api().dgemm_strided_batched(detail::cublas(), ta, tb, m, n, k, &one, a, lda, a_stride, b,
                                                     ldb, b_stride, &zero, c, ldc, c_stride, batch));
}

}  // namespace

template <typename T> void matmul(const MatmulShape& s, const T* a, const T* b, T* c) {
  if (s.batch == 0 || s.m == 0 || s.n == 0) return;
  if (s.k == 0) return zero(c, s.batch * s.m * s.n);  // an empty sum; cuBLAS rejects lda = 0
  const int m = to_int(s.m, "matmul rows"), n = to_int(s.n, "matmul columns"), k = to_int(s.k, "matmul depth");
  // cuBLAS is column-major, where a packed row-major matrix reads as its transpose. So cuBLAS computes
  // c^T (n x m) = op(b)^T op(a)^T from the stored b and a: a stored matrix is transposed once more exactly when
  // our op transposes it, and each leading dimension is the stored row length.
  gemm(s.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, s.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, b,
       s.transpose_b ? k : n, s.b_batch_stride, a, s.transpose_a ? m : k, s.a_batch_stride, c, n, s.m * s.n,
       to_int(s.batch, "matmul batch"));
}

// ---- convolution ----

namespace {

// A packed 4-D array: its extents in the axis order (n, h, w, c), for filters (o, kh, kw, c), and the order of those
// axes in memory, outermost first.
struct Array4 {
  std::array<int64_t, 4> dims;
  std::array<int, 4> order;
  bool operator==(const Array4&) const = default;
  int64_t numel() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
  // Element stride of each axis, in (n, h, w, c) order.
  std::array<int64_t, 4> strides() const {
    std::array<int64_t, 4> s{};
    int64_t step = 1;
    for (int k = 3; k >= 0; --k) {
      s[order[k]] = step;
      step *= dims[order[k]];
    }
    return s;
  }
};
constexpr std::array<int, 4> kNhwc{0, 1, 2, 3};  // also cuDNN's KRSC filters: (o, kh, kw, c)
constexpr std::array<int, 4> kNchw{0, 3, 1, 2};  // also cuDNN's KCRS filters: (o, c, kh, kw)
constexpr std::array<int, 4> kHwio{1, 2, 3, 0};  // Keras' filters: (kh, kw, c, o)
using Shift = std::array<int64_t, 4>;

Shift negated(Shift s) {
  for (int64_t& v : s) v = -v;
  return s;
}

// A rearrange_kernel's geometry, along the destination's axes in its memory order (walked in that order, so writes
// coalesce).
struct Rearrangement {
  int64_t dims[4];         // destination extents, outermost first
  int64_t src_dims[4];     // source extents along the same axes
  int64_t src_strides[4];  // source strides along the same axes
  int64_t shift[4];        // destination position minus source position
};

template <typename T> __global__ void rearrange_kernel(Rearrangement r, int64_t n, const T* src, T* dst) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    int64_t rest = i, offset = 0;
    bool inside = true;
    for (int k = 3; k >= 0; --k) {
      const int64_t at = rest % r.dims[k] - r.shift[k];
      rest /= r.dims[k];
      inside = inside && at >= 0 && at < r.src_dims[k];
      offset += at * r.src_strides[k];
    }
    dst[i] = inside ? src[offset] : T(0);
  }
}

// dst (laid out as `to`) at (n, h, w, c) = src (laid out as `from`) at (n, h, w, c) - shift, and 0 where that lies
// outside src: a transpose, a zero padding (shift > 0) and a crop (shift < 0) in one pass.
template <typename T> void rearrange(const Array4& from, const T* src, const Array4& to, T* dst, const Shift& shift) {
  const int64_t n = to.numel();
  if (n == 0) return;
  const std::array<int64_t, 4> strides = from.strides();
  Rearrangement r{};
  for (int k = 0; k < 4; ++k) {
    const int axis = to.order[k];
    r.dims[k] = to.dims[axis];
    r.src_dims[k] = from.dims[axis];
    r.src_strides[k] = strides[axis];
    r.shift[k] = shift[axis];
  }
  rearrange_kernel<<<detail::blocks_for(n), kThreads, 0, detail::stream()>>>(r, n, src, dst);
  check_launch("rearrange_kernel");
}

// An input held as `user`, in cuDNN's layout `cudnn`: itself when the two agree, else a copy made in `buffer`.
template <typename T>
const T* to_cudnn(const T* data, const Array4& user, const Array4& cudnn, const Shift& shift,
                  std::optional<Scratch>& buffer) {
  if (user == cudnn) return data;
  buffer.emplace(static_cast<size_t>(cudnn.numel()) * sizeof(T));
  rearrange(user, data, cudnn, buffer->as<T>(), shift);
  return buffer->as<T>();
}

// Where cuDNN writes an output held as `user`: in place when the layouts agree, else in `buffer`, which from_cudnn
// then moves over.
template <typename T>
T* cudnn_output(T* data, const Array4& user, const Array4& cudnn, std::optional<Scratch>& buffer) {
  if (user == cudnn) return data;
  buffer.emplace(static_cast<size_t>(cudnn.numel()) * sizeof(T));
  return buffer->as<T>();
}

template <typename T>
void from_cudnn(const std::optional<Scratch>& buffer, const Array4& cudnn, T* data, const Array4& user,
                const Shift& shift) {
  if (buffer) rearrange(cudnn, buffer->as<T>(), user, data, negated(shift));
}

// Owns one cuDNN descriptor.
template <typename D, cudnnStatus_t (*create)(D*), cudnnStatus_t (*destroy)(D)> class Descriptor {
 public:
  Descriptor() { detail::check(create(&d_), "creating a cuDNN descriptor"); }
  ~Descriptor() { destroy(d_); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  D get() const { return d_; }

 private:
  D d_;
};
using TensorDescriptor = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

template <typename T>
constexpr cudnnDataType_t kCudnnType = std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;

cudnnTensorFormat_t cudnn_format(const Array4& a) { return a.order == kNhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW; }

// Element counts of a convolution's input, output and filters: an empty one never reaches cuDNN, which rejects empty
// tensors.
struct ConvSizes {
  explicit ConvSizes(const Conv2dShape& s)
      : x(s.n * s.h * s.w * s.c), y(s.n * s.out_h() * s.out_w() * s.o), w(s.kh * s.kw * s.c * s.o) {}
  int64_t x, y, w;
};

// Cap on an algorithm's workspace: fixed rather than taken from free memory, so the same shape picks the same
// algorithm every run.
constexpr size_t kMaxWorkspaceBytes = size_t{1} << 30;

// One convolution as cuDNN runs it. cuDNN pads only symmetrically, so other padding is applied by copying x into a
// zero-padded buffer and convolving that without padding. float32 runs NHWC with KRSC filters; float64 runs NCHW with
// KCRS filters, the layout cuDNN's float64 kernels support (PyTorch never asks cuDNN for float64 NHWC). Keras' HWIO
// filters are always transposed.
template <typename T> struct ConvPlan {
  explicit ConvPlan(const Conv2dShape& s) {
    const bool symmetric = s.pad_top == s.pad_bottom && s.pad_left == s.pad_right;
    const std::array<int, 4> order = std::is_same_v<T, float> ? kNhwc : kNchw;
    x = {{s.n, s.h, s.w, s.c}, kNhwc};
    y = {{s.n, s.out_h(), s.out_w(), s.o}, kNhwc};
    w = {{s.o, s.kh, s.kw, s.c}, kHwio};
    const int64_t in_h = symmetric ? s.h : s.h + s.pad_top + s.pad_bottom;  // x with any explicit padding
    const int64_t in_w = symmetric ? s.w : s.w + s.pad_left + s.pad_right;
    cudnn_x = {{s.n, in_h, in_w, s.c}, order};
    cudnn_y = {y.dims, order};
    cudnn_w = {w.dims, order};
    x_shift = symmetric ? Shift{} : Shift{0, s.pad_top, s.pad_left, 0};
    describe(x_desc.get(), cudnn_x);
    describe(y_desc.get(), cudnn_y);
    LS_CUDA(cudnnSetFilter4dDescriptor(w_desc.get(), kCudnnType<T>, cudnn_format(cudnn_w), to_int(s.o, "filters"),
                                       to_int(s.c, "channels"), to_int(s.kh, "filter height"),
                                       to_int(s.kw, "filter width")));
    LS_CUDA(cudnnSetConvolution2dDescriptor(
        conv_desc.get(), to_int(symmetric ? s.pad_top : 0, "padding"), to_int(symmetric ? s.pad_left : 0, "padding"),
        to_int(s.stride_h, "stride"), to_int(s.stride_w, "stride"), 1, 1, CUDNN_CROSS_CORRELATION, kCudnnType<T>));
    // float32 on plain FMA kernels, never TF32 tensor cores, so it rounds like the CPU's float32. float64 tensor
    // cores compute exact IEEE FMAs, so float64 may use them.
    LS_CUDA(
        cudnnSetConvolutionMathType(conv_desc.get(), std::is_same_v<T, float> ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH));
  }

  // The first of cuDNN's ranked algorithms that runs within kMaxWorkspaceBytes, a deterministic one where there is
  // one (so that a rerun gives the same bits); never one that converts to a narrower type, and for float32 never one
  // on tensor cores.
  template <typename Perf> Perf choose(const std::vector<Perf>& ranked, const char* direction) {
    auto usable = [](const Perf& p) {
      return p.status == CUDNN_STATUS_SUCCESS && p.memory <= kMaxWorkspaceBytes &&
             p.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
             (std::is_same_v<T, double> || p.mathType != CUDNN_TENSOR_OP_MATH);
    };
    auto chosen = std::find_if(ranked.begin(), ranked.end(),
                               [&](const Perf& p) { return usable(p) && p.determinism == CUDNN_DETERMINISTIC; });
    if (chosen == ranked.end()) chosen = std::find_if(ranked.begin(), ranked.end(), usable);
    LS_CHECK(chosen != ranked.end(), UnimplementedError, "cuDNN offers no ", direction, " convolution algorithm for ",
             std::is_same_v<T, float> ? "float32" : "float64", " input ", x.dims[0], "x", x.dims[1], "x", x.dims[2],
             "x", x.dims[3], " and ", w.dims[1], "x", w.dims[2], " filters to ", w.dims[0],
             " channels within a workspace of ", kMaxWorkspaceBytes >> 20, " MiB");
    return *chosen;
  }

  // Sets the math type `algo` was ranked under before it runs (float32 keeps FMA; float64's directions may differ).
  template <typename Perf> void use(const Perf& algo) {
    if constexpr (std::is_same_v<T, double>) LS_CUDA(cudnnSetConvolutionMathType(conv_desc.get(), algo.mathType));
  }

  Array4 x, y, w;                    // as the caller holds them
  Array4 cudnn_x, cudnn_y, cudnn_w;  // as cuDNN reads and writes them
  Shift x_shift;                     // where x lies in cudnn_x: the padding, when applied by copying
  TensorDescriptor x_desc, y_desc;
  FilterDescriptor w_desc;
  ConvolutionDescriptor conv_desc;

 private:
  static void describe(cudnnTensorDescriptor_t desc, const Array4& a) {
    LS_CUDA(cudnnSetTensor4dDescriptor(desc, cudnn_format(a), kCudnnType<T>, to_int(a.dims[0], "batch"),
                                       to_int(a.dims[3], "channels"), to_int(a.dims[1], "height"),
                                       to_int(a.dims[2], "width")));
  }
};

// A shape's plan and its algorithm for each direction, chosen once per thread and device (cuDNN's ranking costs
// about as much as a small convolution): the first call with a shape asks cuDNN, the others reuse its answer.
template <typename T> struct CachedConv {
  explicit CachedConv(const Conv2dShape& s) : plan(s) {}
  ConvPlan<T> plan;
  std::optional<cudnnConvolutionFwdAlgoPerf_t> forward;
  std::optional<cudnnConvolutionBwdDataAlgoPerf_t> backward_data;
  std::optional<cudnnConvolutionBwdFilterAlgoPerf_t> backward_filter;
};

// `slot`'s algorithm, ranked by cuDNN the first time: max_count(handle, &n) and rank(handle, n, &n, perfs) are one
// direction's pair of cuDNN calls. Sets the math type the algorithm was ranked under.
template <typename T, typename Perf, typename MaxCount, typename Rank>
Perf algorithm(ConvPlan<T>& plan, std::optional<Perf>& slot, const char* direction, MaxCount max_count, Rank rank) {
  if (!slot) {
    const cudnnHandle_t h = detail::cudnn();
    int count = 0;
    LS_CUDA(max_count(h, &count));
    std::vector<Perf> ranked(static_cast<size_t>(count));
    LS_CUDA(rank(h, count, &count, ranked.data()));
    ranked.resize(static_cast<size_t>(count));
    slot = plan.choose(ranked, direction);
  }
  plan.use(*slot);
  return *slot;
}

template <typename T> CachedConv<T>& cached_conv(const Conv2dShape& s) {
  using Key = std::array<int64_t, 14>;
  thread_local std::map<Key, std::unique_ptr<CachedConv<T>>> cache;
  const Key key{current_device(), s.n, s.h, s.w, s.c, s.kh, s.kw, s.o, s.stride_h, s.stride_w,
                s.pad_top, s.pad_left, s.pad_bottom, s.pad_right};
  auto& entry = cache[key];
  if (!entry) entry = std::make_unique<CachedConv<T>>(s);
  return *entry;
}

template <typename T> __global__ void add_bias_kernel(int64_t n, int64_t channels, const T* bias, T* y) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) y[i] += bias[i % channels];
}

template <typename T> void add_bias(int64_t n, int64_t channels, const T* bias, T* y) {
  add_bias_kernel<<<detail::blocks_for(n), kThreads, 0, detail::stream()>>>(n, channels, bias, y);
  check_launch("add_bias_kernel");
}

}  // namespace

template <typename T> void conv2d_forward(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y) {
  const ConvSizes size(s);
  if (size.y == 0) return;
  if (size.x == 0 || size.w == 0) {  // an empty sum
    zero(y, size.y);
  } else {
    CachedConv<T>& cached = cached_conv<T>(s);
    ConvPlan<T>& plan = cached.plan;
    std::optional<Scratch> x_buffer, w_buffer, y_buffer;
    const T* xc = to_cudnn(x, plan.x, plan.cudnn_x, plan.x_shift, x_buffer);
    const T* wc = to_cudnn(w, plan.w, plan.cudnn_w, Shift{}, w_buffer);
    T* yc = cudnn_output(y, plan.y, plan.cudnn_y, y_buffer);
    const auto algo = algorithm(plan, cached.forward, "forward", cudnnGetConvolutionForwardAlgorithmMaxCount,
                                [&](cudnnHandle_t h, int n, int* found, cudnnConvolutionFwdAlgoPerf_t* perfs) {
                                  return cudnnGetConvolutionForwardAlgorithm_v7(h, plan.x_desc.get(), plan.w_desc.get(),
                                                                                plan.conv_desc.get(), plan.y_desc.get(),
                                                                                n, found, perfs);
                                });
    const cudnnHandle_t h = detail::cudnn();
    Scratch workspace(algo.memory);
    const T one = 1, nothing = 0;
    LS_CUDA(cudnnConvolutionForward(h, &one, plan.x_desc.get(), xc, plan.w_desc.get(), wc, plan.conv_desc.get(),
                                    algo.algo, workspace.get(), algo.memory, &nothing, plan.y_desc.get(), yc));
    from_cudnn(y_buffer, plan.cudnn_y, y, plan.y, Shift{});
  }
  if (bias) add_bias(size.y, s.o, bias, y);
}

template <typename T> void conv2d_backward_data(const Conv2dShape& s, const T* dy, const T* w, T* dx) {
  const ConvSizes size(s);
  if (size.x == 0) return;
  if (size.y == 0 || size.w == 0) return zero(dx, size.x);
  CachedConv<T>& cached = cached_conv<T>(s);
  ConvPlan<T>& plan = cached.plan;
  std::optional<Scratch> dy_buffer, w_buffer, dx_buffer;
  const T* dyc = to_cudnn(dy, plan.y, plan.cudnn_y, Shift{}, dy_buffer);
  const T* wc = to_cudnn(w, plan.w, plan.cudnn_w, Shift{}, w_buffer);
  // With padding applied by copying, cuDNN's dx is that of the padded input, cropped below.
  T* dxc = cudnn_output(dx, plan.x, plan.cudnn_x, dx_buffer);
  const auto algo = algorithm(plan, cached.backward_data, "backward data",
                              cudnnGetConvolutionBackwardDataAlgorithmMaxCount,
                              [&](cudnnHandle_t h, int n, int* found, cudnnConvolutionBwdDataAlgoPerf_t* perfs) {
                                return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, plan.w_desc.get(),
                                                                                   plan.y_desc.get(), plan.conv_desc.get(),
                                                                                   plan.x_desc.get(), n, found, perfs);
                              });
  const cudnnHandle_t h = detail::cudnn();
  Scratch workspace(algo.memory);
  const T one = 1, nothing = 0;
  LS_CUDA(cudnnConvolutionBackwardData(h, &one, plan.w_desc.get(), wc, plan.y_desc.get(), dyc, plan.conv_desc.get(),
                                       algo.algo, workspace.get(), algo.memory, &nothing, plan.x_desc.get(), dxc));
  from_cudnn(dx_buffer, plan.cudnn_x, dx, plan.x, plan.x_shift);
}

template <typename T> void conv2d_backward_weights(const Conv2dShape& s, const T* x, const T* dy, T* dw, T* dbias) {
  const ConvSizes size(s);
  if (dbias && s.o > 0) {
    const int64_t positions = size.y / s.o;
    if (positions == 0) {
      zero(dbias, s.o);
    } else {
      // dbias[o] = the sum of dy over every (n, oh, ow). Qualified: argument-dependent lookup also finds cpu::reduce.
      cuda::reduce(Reduce::sum, dtype_of<T>(), Iteration{{positions, s.o}, {{s.o, 1}}}, {0, 1}, dy, dbias, s.o);
    }
  }
  if (size.w == 0) return;
  if (size.x == 0 || size.y == 0) return zero(dw, size.w);
  CachedConv<T>& cached = cached_conv<T>(s);
  ConvPlan<T>& plan = cached.plan;
  std::optional<Scratch> x_buffer, dy_buffer, dw_buffer;
  const T* xc = to_cudnn(x, plan.x, plan.cudnn_x, plan.x_shift, x_buffer);
  const T* dyc = to_cudnn(dy, plan.y, plan.cudnn_y, Shift{}, dy_buffer);
  T* dwc = cudnn_output(dw, plan.w, plan.cudnn_w, dw_buffer);
  const auto algo = algorithm(plan, cached.backward_filter, "backward filter",
                              cudnnGetConvolutionBackwardFilterAlgorithmMaxCount,
                              [&](cudnnHandle_t h, int n, int* found, cudnnConvolutionBwdFilterAlgoPerf_t* perfs) {
                                return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                                    h, plan.x_desc.get(), plan.y_desc.get(), plan.conv_desc.get(), plan.w_desc.get(), n,
                                    found, perfs);
                              });
  const cudnnHandle_t h = detail::cudnn();
  Scratch workspace(algo.memory);
  const T one = 1, nothing = 0;
  LS_CUDA(cudnnConvolutionBackwardFilter(h, &one, plan.x_desc.get(), xc, plan.y_desc.get(), dyc, plan.conv_desc.get(),
                                         algo.algo, workspace.get(), algo.memory, &nothing, plan.w_desc.get(), dwc));
  from_cudnn(dw_buffer, plan.cudnn_w, dw, plan.w, Shift{});
}

// ---- pooling ----

namespace {

// The part [begin, end) of the window [start, start + size) that lies inside [0, extent).
struct Span {
  int64_t begin, end;
};
__device__ inline Span clip(int64_t start, int64_t size, int64_t extent) {
  return {start > 0 ? start : 0, start + size < extent ? start + size : extent};
}
__device__ inline int64_t length(Span s) { return s.end > s.begin ? s.end - s.begin : 0; }

// One thread per output; taps in the window's row-major order, so the first maximum wins ties as in TF.
template <typename T>
__global__ void pool2d_forward_kernel(Pool2dShape s, int64_t out_h, int64_t out_w, const T* x, T* y, int32_t* argmax) {
  const int64_t n_out = s.n * out_h * out_w * s.c;
  for (int64_t i = grid_start(); i < n_out; i += grid_step()) {
    const int64_t c = i % s.c, ow = i / s.c % out_w, oh = i / (s.c * out_w) % out_h, n = i / (s.c * out_w * out_h);
    const T* image = x + n * s.h * s.w * s.c + c;  // (ih, iw) at image[(ih * s.w + iw) * s.c]
    const Span rows = clip(oh * s.stride_h - s.pad_top, s.kh, s.h);
    const Span cols = clip(ow * s.stride_w - s.pad_left, s.kw, s.w);
    if (s.kind == cpu::PoolKind::max) {
      int64_t best = -1;  // stays -1 (matching no input) only for a window wholly in the padding
      T best_value = 0;
      for (int64_t ih = rows.begin; ih < rows.end; ++ih)
        for (int64_t iw = cols.begin; iw < cols.end; ++iw) {
          const T v = image[(ih * s.w + iw) * s.c];
          if (best < 0 || v > best_value) {
            best = ih * s.w + iw;
            best_value = v;
          }
        }
      y[i] = best_value;
      argmax[i] = static_cast<int32_t>(best);
    } else {
      T sum = 0;
      for (int64_t ih = rows.begin; ih < rows.end; ++ih)
        for (int64_t iw = cols.begin; iw < cols.end; ++iw) sum += image[(ih * s.w + iw) * s.c];
      y[i] = sum / T(length(rows) * length(cols));
    }
  }
}

// The first window of `size`, stepping by `stride`, that reaches position p of the padded input.
__device__ inline int64_t first_window(int64_t p, int64_t size, int64_t stride) {
  return p >= size ? (p - size) / stride + 1 : 0;
}

// One thread per input element, summing the outputs whose window holds it (and, for max, chose it) in output order:
// deterministic, with no atomics.
template <typename T>
__global__ void pool2d_backward_kernel(Pool2dShape s, int64_t out_h, int64_t out_w, const T* dy, const int32_t* argmax,
                                       T* dx) {
  const int64_t n_in = s.n * s.h * s.w * s.c;
  for (int64_t i = grid_start(); i < n_in; i += grid_step()) {
    const int64_t c = i % s.c, iw = i / s.c % s.w, ih = i / (s.c * s.w) % s.h, n = i / (s.c * s.w * s.h);
    const int64_t ph = ih + s.pad_top, pw = iw + s.pad_left;  // position in the padded input
    const int64_t oh_end = ph / s.stride_h + 1 < out_h ? ph / s.stride_h + 1 : out_h;
    const int64_t ow_end = pw / s.stride_w + 1 < out_w ? pw / s.stride_w + 1 : out_w;
    const int64_t base = n * out_h * out_w * s.c + c;  // output (oh, ow) at base + (oh * out_w + ow) * s.c
    T sum = 0;
    for (int64_t oh = first_window(ph, s.kh, s.stride_h); oh < oh_end; ++oh)
      for (int64_t ow = first_window(pw, s.kw, s.stride_w); ow < ow_end; ++ow) {
        const int64_t o = base + (oh * out_w + ow) * s.c;
        if (s.kind == cpu::PoolKind::max) {
          if (argmax[o] == ih * s.w + iw) sum += dy[o];
        } else {
          const int64_t count = length(clip(oh * s.stride_h - s.pad_top, s.kh, s.h)) *
                                length(clip(ow * s.stride_w - s.pad_left, s.kw, s.w));
          sum += dy[o] / T(count);
        }
      }
    dx[i] = sum;
  }
}

}  // namespace

size_t pool2d_workspace_bytes(const Pool2dShape& s) {
  return s.kind == cpu::PoolKind::max ? static_cast<size_t>(s.n * s.out_h() * s.out_w() * s.c) * sizeof(int32_t) : 0;
}

template <typename T> void pool2d_forward(const Pool2dShape& s, const T* x, T* y, void* workspace) {
  const int64_t n_out = s.n * s.out_h() * s.out_w() * s.c;
  if (n_out == 0) return;
  pool2d_forward_kernel<<<detail::blocks_for(n_out), kThreads, 0, detail::stream()>>>(s, s.out_h(), s.out_w(), x, y,
                                                                                      static_cast<int32_t*>(workspace));
  check_launch("pool2d_forward_kernel");
}

template <typename T> void pool2d_backward(const Pool2dShape& s, const T* dy, const void* workspace, T* dx) {
  const int64_t n_in = s.n * s.h * s.w * s.c;
  if (n_in == 0) return;
  pool2d_backward_kernel<<<detail::blocks_for(n_in), kThreads, 0, detail::stream()>>>(
      s, s.out_h(), s.out_w(), dy, static_cast<const int32_t*>(workspace), dx);
  check_launch("pool2d_backward_kernel");
}

// ---- softmax ----

namespace {

// rows x cols as cuDNN's N x C x 1 x 1, whose per-instance softmax is then the softmax of each row.
template <typename T> void describe_rows(const TensorDescriptor& desc, int64_t rows, int64_t cols) {
  LS_CUDA(cudnnSetTensor4dDescriptor(desc.get(), CUDNN_TENSOR_NCHW, kCudnnType<T>, to_int(rows, "softmax rows"),
                                     to_int(cols, "softmax columns"), 1, 1));
}

cudnnSoftmaxAlgorithm_t softmax_algorithm(bool log) { return log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE; }

}  // namespace

template <typename T> void softmax_forward(int64_t rows, int64_t cols, const T* x, T* y, bool log) {
  if (rows == 0 || cols == 0) return;
  TensorDescriptor desc;
  describe_rows<T>(desc, rows, cols);
  const T one = 1, nothing = 0;
  LS_CUDA(cudnnSoftmaxForward(detail::cudnn(), softmax_algorithm(log), CUDNN_SOFTMAX_MODE_INSTANCE, &one, desc.get(), x,
                              &nothing, desc.get(), y));
}

template <typename T> void softmax_backward(int64_t rows, int64_t cols, const T* y, const T* dy, T* dx, bool log) {
  if (rows == 0 || cols == 0) return;
  TensorDescriptor desc;
  describe_rows<T>(desc, rows, cols);
  const T one = 1, nothing = 0;
  LS_CUDA(cudnnSoftmaxBackward(detail::cudnn(), softmax_algorithm(log), CUDNN_SOFTMAX_MODE_INSTANCE, &one, desc.get(),
                               y, desc.get(), dy, &nothing, desc.get(), dx));
}

// ---- sparse softmax cross-entropy ----

namespace {

__device__ inline float exp_of(float v) { return expf(v); }
__device__ inline double exp_of(double v) { return exp(v); }

// A product rounded before anything is added to it, as the CPU rounds it: nvcc would otherwise fuse a * b - c into
// one FMA.
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// Reductions over a warp in a fixed order, broadcast from lane 0 so every lane holds the same bits.
template <typename T> __device__ T warp_max(T v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const T other = __shfl_down_sync(kFullWarp, v, offset);
    v = v < other ? other : v;
  }
  return __shfl_sync(kFullWarp, v, 0);
}

__device__ double warp_sum(double v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_down_sync(kFullWarp, v, offset);
  return __shfl_sync(kFullWarp, v, 0);
}

// One warp per row, with the CPU's formulas: exponentials in T, their total in double.
template <typename T, typename L>
__global__ void xent_forward_kernel(int64_t n, int64_t c, const T* logits, const L* labels, T* loss, T* probs,
                                    unsigned long long* first_bad) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  for (int64_t row = grid_start() / kWarp; row < n; row += grid_step() / kWarp) {
    const L label = labels[row];
    if (label < 0 || label >= c) {
      if (lane == 0) report_failure(first_bad, row);
      continue;
    }
    const T* z = logits + row * c;
    T* p = probs + row * c;
    T m = z[0];
    for (int64_t j = lane; j < c; j += kWarp) m = m < z[j] ? z[j] : m;
    m = warp_max(m);
    double total = 0;
    for (int64_t j = lane; j < c; j += kWarp) {
      const T e = exp_of(z[j] - m);
      p[j] = e;
      total += e;
    }
    total = warp_sum(total);
    const T inv = T(1.0 / total);
    for (int64_t j = lane; j < c; j += kWarp) p[j] *= inv;
    if (lane == 0) loss[row] = T(log(total) - static_cast<double>(z[label] - m));
  }
}

template <typename T, typename L>
__global__ void xent_backward_kernel(int64_t n, int64_t c, const T* probs, const L* labels, const T* dloss,
                                     T* dlogits) {
  for (int64_t i = grid_start(); i < n * c; i += grid_step()) {
    const int64_t row = i / c;
    const T d = dloss[row];
    T g = mul_rn(probs[i], d);
    if (i % c == labels[row]) g -= d;
    dlogits[i] = g;
  }
}

}  // namespace

template <typename T, typename L>
void sparse_softmax_xent_forward(int64_t n, int64_t c, const T* logits, const L* labels, T* loss, T* probs) {
  if (n == 0) return;
  FirstBadPosition bad_row;
  xent_forward_kernel<<<detail::blocks_for(n * kWarp), kThreads, 0, detail::stream()>>>(n, c, logits, labels, loss,
                                                                                        probs, bad_row.device());
  check_launch("xent_forward_kernel");
  const int64_t i = bad_row.position();
  if (i >= 0)
    throw InvalidArgumentError(make_message("label ", element_at(labels, i), " of example ", i,
                                            " is outside the valid range [0, ", c, ") for ", c, " classes"));
}

template <typename T, typename L>
void sparse_softmax_xent_backward(int64_t n, int64_t c, const T* probs, const L* labels, const T* dloss, T* dlogits) {
  if (n * c == 0) return;
  xent_backward_kernel<<<detail::blocks_for(n * c), kThreads, 0, detail::stream()>>>(n, c, probs, labels, dloss,
                                                                                     dlogits);
  check_launch("xent_backward_kernel");
}

// ---- gathers ----

namespace {

// Calls f(I{}) with I the C++ type of integer indices, int32 or int64, the ones gather and scatter take.
template <typename F> void with_index_type(DType dtype, F&& f) {
  if (dtype == DType::int32) return f(int32_t{});
  if (dtype == DType::int64) return f(int64_t{});
  throw InvalidArgumentError(make_message("indices must be int32 or int64, got ", dtype_name(dtype)));
}

template <typename I>
__global__ void check_indices_kernel(int64_t count, const I* indices, int64_t rows, unsigned long long* first_bad) {
  for (int64_t i = grid_start(); i < count; i += grid_step())
    if (indices[i] < 0 || indices[i] >= rows) report_failure(first_bad, i);
}

// Throws InvalidArgumentError naming the first index outside [0, rows), as the CPU's gather does; waits for the
// stream.
template <typename I> void check_indices(const I* indices, int64_t count, int64_t rows) {
  if (count == 0) return;
  FirstBadPosition bad;
  check_indices_kernel<<<detail::blocks_for(count), kThreads, 0, detail::stream()>>>(count, indices, rows,
                                                                                     bad.device());
  check_launch("check_indices_kernel");
  const int64_t i = bad.position();
  if (i >= 0)
    throw InvalidArgumentError(
        make_message("index ", element_at(indices, i), " at position ", i, " is out of range [0, ", rows, ")"));
}

// Calls f(U{}) with U the widest word (16, 8, 4, 2 or 1 bytes) that divides a row and aligns both base addresses.
template <typename F> void with_word(size_t row_bytes, const void* a, const void* b, F&& f) {
  const uintptr_t bits = row_bytes | reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b);
  if (bits % 16 == 0) return f(uint4{});
  if (bits % 8 == 0) return f(uint64_t{});
  if (bits % 4 == 0) return f(uint32_t{});
  if (bits % 2 == 0) return f(uint16_t{});
  f(uint8_t{});
}

// Rows of `words` words each.
template <typename U, typename I>
__global__ void gather_rows_kernel(int64_t count, const I* indices, int64_t words, const U* params, U* out) {
  for (int64_t e = grid_start(); e < count * words; e += grid_step())
    out[e] = params[indices[e / words] * words + e % words];
}

// Each output element sums its row's occurrences in index order, the CPU's order, so results match it bit for bit.
template <typename T, typename I>
__global__ void scatter_add_rows_kernel(int64_t count, const I* indices, const T* dy, int64_t rows, int64_t row,
                                        T* out) {
  for (int64_t e = grid_start(); e < rows * row; e += grid_step()) {
    const int64_t r = e / row, j = e % row;
    T sum = 0;
    for (int64_t i = 0; i < count; ++i)
      if (indices[i] == r) sum += dy[i * row + j];
    out[e] = sum;
  }
}

template <typename V, typename I>
__global__ void one_hot_kernel(int64_t count, const I* indices, int64_t depth, V on, V off, V* out) {
  for (int64_t e = grid_start(); e < count * depth; e += grid_step())
    out[e] = indices[e / depth] == e % depth ? on : off;
}

// `value` converted to dtype as full() converts it, as the bits of one element (in the low bytes).
uint64_t element_bits(DType dtype, double value) {
  uint64_t bits = 0;
  visit_dtype(dtype, [&](auto zero_value) {
    using T = decltype(zero_value);
    T v;
    if constexpr (std::is_same_v<T, bfloat16>) {
      v = bfloat16(static_cast<float>(value));
    } else {
      v = static_cast<T>(value);
    }
    std::memcpy(&bits, &v, sizeof v);
  });
  return bits;
}

// Calls f(V{}) with V the unsigned integer of `bytes` bytes (1, 2, 4 or 8).
template <typename F> void with_unsigned_of_size(size_t bytes, F&& f) {
  if (bytes == 1) return f(uint8_t{});
  if (bytes == 2) return f(uint16_t{});
  if (bytes == 4) return f(uint32_t{});
  f(uint64_t{});
}

}  // namespace

void gather_rows(DType index_dtype, const void* indices, int64_t count, const void* params, int64_t rows,
                 size_t row_bytes, void* out) {
  with_index_type(index_dtype, [&](auto index_type) {
    using I = decltype(index_type);
    const I* idx = static_cast<const I*>(indices);
    check_indices(idx, count, rows);
    if (count == 0 || row_bytes == 0) return;
    with_word(row_bytes, params, out, [&](auto word) {
      using U = decltype(word);
      const int64_t words = static_cast<int64_t>(row_bytes / sizeof(U));
      gather_rows_kernel<<<detail::blocks_for(count * words), kThreads, 0, detail::stream()>>>(
          count, idx, words, static_cast<const U*>(params), static_cast<U*>(out));
      check_launch("gather_rows_kernel");
    });
  });
}

void scatter_add_rows(DType dtype, DType index_dtype, const void* indices, int64_t count, const void* dy, int64_t rows,
                      int64_t row, void* out) {
  auto scatter = [&](auto value_type) {
    using T = decltype(value_type);
    with_index_type(index_dtype, [&](auto index_type) {
      using I = decltype(index_type);
      const I* idx = static_cast<const I*>(indices);
      check_indices(idx, count, rows);
      if (rows * row == 0) return;
      scatter_add_rows_kernel<<<detail::blocks_for(rows * row), kThreads, 0, detail::stream()>>>(
          count, idx, static_cast<const T*>(dy), rows, row, static_cast<T*>(out));
      check_launch("scatter_add_rows_kernel");
    });
  };
  switch (dtype) {
    case DType::float32:
      return scatter(float{});
    case DType::float64:
      return scatter(double{});
    case DType::int32:
      return scatter(int32_t{});
    case DType::int64:
      return scatter(int64_t{});
    default:
      throw InvalidArgumentError(make_message("scatter_add_rows does not support ", dtype_name(dtype)));
  }
}

void one_hot(DType index_dtype, const void* indices, int64_t count, int64_t depth, DType dtype, double on_value,
             double off_value, void* out) {
  auto fill_rows = [&](auto index_type) {
    using I = decltype(index_type);
    if (count * depth == 0) return;
    with_unsigned_of_size(dtype_size(dtype), [&](auto word) {
      using V = decltype(word);
      one_hot_kernel<<<detail::blocks_for(count * depth), kThreads, 0, detail::stream()>>>(
          count, static_cast<const I*>(indices), depth, static_cast<V>(element_bits(dtype, on_value)),
          static_cast<V>(element_bits(dtype, off_value)), static_cast<V*>(out));
      check_launch("one_hot_kernel");
    });
  };
  switch (index_dtype) {
    case DType::int32:
      return fill_rows(int32_t{});
    case DType::int64:
      return fill_rows(int64_t{});
    case DType::uint8:
      return fill_rows(uint8_t{});
    default:
      throw InvalidArgumentError(make_message("one_hot indices must be integers, got ", dtype_name(index_dtype)));
  }
}

// ---- instantiations ----

#define LOCKSTEP_INSTANTIATE_NN(T)                                                          \
  template void matmul<T>(const MatmulShape&, const T*, const T*, T*);                      \
  template void conv2d_forward<T>(const Conv2dShape&, const T*, const T*, const T*, T*);    \
  template void conv2d_backward_data<T>(const Conv2dShape&, const T*, const T*, T*);        \
  template void conv2d_backward_weights<T>(const Conv2dShape&, const T*, const T*, T*, T*); \
  template void pool2d_forward<T>(const Pool2dShape&, const T*, T*, void*);                 \
  template void pool2d_backward<T>(const Pool2dShape&, const T*, const void*, T*);          \
  template void softmax_forward<T>(int64_t, int64_t, const T*, T*, bool);                   \
  template void softmax_backward<T>(int64_t, int64_t, const T*, const T*, T*, bool);
LOCKSTEP_INSTANTIATE_NN(float)
LOCKSTEP_INSTANTIATE_NN(double)
#undef LOCKSTEP_INSTANTIATE_NN

#define LOCKSTEP_INSTANTIATE_XENT(T, L)                                                          \
  template void sparse_softmax_xent_forward<T, L>(int64_t, int64_t, const T*, const L*, T*, T*); \
  template void sparse_softmax_xent_backward<T, L>(int64_t, int64_t, const T*, const L*, const T*, T*);
LOCKSTEP_INSTANTIATE_XENT(float, int32_t)
LOCKSTEP_INSTANTIATE_XENT(float, int64_t)
LOCKSTEP_INSTANTIATE_XENT(double, int32_t)
LOCKSTEP_INSTANTIATE_XENT(double, int64_t)
#undef LOCKSTEP_INSTANTIATE_XENT

}  // namespace lockstep::kernels::cuda
