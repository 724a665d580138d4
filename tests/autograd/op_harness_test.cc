// The op harness: one table row per op and shape. Every row's forward is checked against a naive
// reference (float32 and float64), and every differentiable row's gradient by central finite differences
// in float64; float32 gradients (oneDNN's backward kernels) are checked against the float64 ones
// (the reference kernels). On a machine with a GPU every row also runs on /gpu:0 (the CUDA kernels), forward
// against the same reference and gradients against the CPU's; without one those cases skip. A second table runs the
// ops on NaN and the infinities and compares outputs and gradients with TensorFlow's (nan_golden.json). Adding an op
// means adding rows.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <numeric>
#include <set>

#include "../golden/nan_golden.h"
#include "lockstep/autograd/ops.h"
#include "lockstep/kernels/cpu/reference.h"

namespace lockstep {
namespace {

namespace ref = kernels::ref;
using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;

// How a row's input is drawn.
enum class Kind { any, positive, small_int, boolean, labels };
struct In {
  Shape shape;
  Kind kind = Kind::any;
  int64_t classes = 0;  // for labels: values in [0, classes)
  DType label_dtype = DType::int64;
};

struct Row {
  std::string name;
  std::vector<In> inputs;
  Fn op;
  Fn reference;  // float64 inputs -> float64 (or bool/int) result, by the obvious loops
  bool differentiable = true;
  double f32_tolerance = 2e-5;
  double f64_tolerance = 1e-12;
};
void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

// ---- naive references on float64 values, with explicit index arithmetic ----

std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(static_cast<size_t>(s.rank()));
  for (int64_t d = s.rank() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = i % s.dims()[static_cast<size_t>(d)];
    i /= s.dims()[static_cast<size_t>(d)];
  }
  return idx;
}
// Flat index into shape `s` of the broadcast index `idx` (of a higher or equal rank).
int64_t ravel_broadcast(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t flat = 0, lead = static_cast<int64_t>(idx.size()) - s.rank();
  for (int64_t d = 0; d < s.rank(); ++d) {
    int64_t n = s.dims()[static_cast<size_t>(d)];
    flat = flat * n + (n == 1 ? 0 : idx[static_cast<size_t>(d + lead)]);
  }
  return flat;
}

Tensor ref_binary(const Tensor& a, const Tensor& b, std::function<double(double, double)> f, DType out = DType::float64) {
  Shape s = broadcast_shapes(a.shape(), b.shape());
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  std::vector<double> y(static_cast<size_t>(s.numel()));
  for (int64_t i = 0; i < s.numel(); ++i) {
    auto idx = unravel(i, s);
    y[static_cast<size_t>(i)] = f(va[static_cast<size_t>(ravel_broadcast(idx, a.shape()))],
                                  vb[static_cast<size_t>(ravel_broadcast(idx, b.shape()))]);
  }
  return raw_ops::cast(from_vector(y, s), out);
}

Tensor ref_unary(const Tensor& x, std::function<double(double)> f) {
  auto v = x.to_vector<double>();
  for (double& e : v) e = f(e);
  return from_vector(v, x.shape());
}

// Reduction over `axes` with keepdims, then squeezed unless keepdims.
Tensor ref_reduce(const Tensor& x, std::vector<int64_t> axes, bool keepdims, const std::string& op) {
  axes = raw_ops::normalize_axes(x.shape(), axes);
  std::vector<int64_t> kept = x.shape().dims(), squeezed;
  for (int64_t a : axes) kept[static_cast<size_t>(a)] = 1;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) squeezed.push_back(x.dim(d));
  Shape ks(kept);
  std::vector<double> acc(static_cast<size_t>(ks.numel()), op == "max" ? -INFINITY : 0.0);
  std::vector<double> count(acc.size(), 0);
  auto v = x.to_vector<double>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    auto o = static_cast<size_t>(ravel_broadcast(unravel(i, x.shape()), ks));
    double e = v[static_cast<size_t>(i)];
    acc[o] = op == "max" ? std::max(acc[o], e) : acc[o] + e;
    count[o] += 1;
  }
  if (op == "mean")
    for (size_t i = 0; i < acc.size(); ++i) acc[i] /= count[i];
  return from_vector(acc, keepdims ? ks : Shape(squeezed));
}

Tensor ref_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  // Broadcast the batch dimensions explicitly, then multiply each matrix pair with three loops.
  std::vector<int64_t> ab(a.shape().dims().begin(), a.shape().dims().end() - 2);
  std::vector<int64_t> bb(b.shape().dims().begin(), b.shape().dims().end() - 2);
  Shape batch = broadcast_shapes(Shape(ab), Shape(bb));
  int64_t m = ta ? a.dim(-1) : a.dim(-2), k = ta ? a.dim(-2) : a.dim(-1), n = tb ? b.dim(-2) : b.dim(-1);
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  std::vector<int64_t> out = batch.dims();
  out.push_back(m);
  out.push_back(n);
  std::vector<double> y(static_cast<size_t>(Shape(out).numel()));
  for (int64_t bi = 0; bi < batch.numel(); ++bi) {
    auto idx = unravel(bi, batch);
    int64_t ao = ravel_broadcast(idx, Shape(ab)) * a.dim(-1) * a.dim(-2);
    int64_t bo = ravel_broadcast(idx, Shape(bb)) * b.dim(-1) * b.dim(-2);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          double x = ta ? va[static_cast<size_t>(ao + p * m + i)] : va[static_cast<size_t>(ao + i * k + p)];
          double w = tb ? vb[static_cast<size_t>(bo + j * k + p)] : vb[static_cast<size_t>(bo + p * n + j)];
          s += x * w;
        }
        y[static_cast<size_t>((bi * m + i) * n + j)] = s;
      }
  }
  return from_vector(y, Shape(out));
}

// Padding as TF computes it for "SAME".
std::pair<int64_t, int64_t> same_pad(int64_t in, int64_t k, int64_t s) {
  int64_t out = (in + s - 1) / s, total = std::max<int64_t>((out - 1) * s + k - in, 0);
  return {total / 2, total - total / 2};
}

Tensor ref_conv(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, bool same) {
  auto [pt, pb] = same ? same_pad(x.dim(1), w.dim(0), stride) : std::pair<int64_t, int64_t>{0, 0};
  auto [pl, pr] = same ? same_pad(x.dim(2), w.dim(1), stride) : std::pair<int64_t, int64_t>{0, 0};
  kernels::cpu::Conv2dShape s{x.dim(0), x.dim(1), x.dim(2), x.dim(3), w.dim(0), w.dim(1), w.dim(3),
                              stride, stride, pt, pl, pb, pr};
  auto vx = x.to_vector<double>(), vw = w.to_vector<double>();
  std::vector<double> vb = b.defined() ? b.to_vector<double>() : std::vector<double>();
  std::vector<double> y(static_cast<size_t>(s.n * s.out_h() * s.out_w() * s.o));
  ref::conv2d_forward(s, vx.data(), vw.data(), b.defined() ? vb.data() : nullptr, y.data());
  return from_vector(y, Shape{s.n, s.out_h(), s.out_w(), s.o});
}

Tensor ref_pool(const Tensor& x, int64_t k, int64_t stride, bool same, bool max) {
  auto [pt, pb] = same ? same_pad(x.dim(1), k, stride) : std::pair<int64_t, int64_t>{0, 0};
  auto [pl, pr] = same ? same_pad(x.dim(2), k, stride) : std::pair<int64_t, int64_t>{0, 0};
  kernels::cpu::Pool2dShape s{x.dim(0), x.dim(1), x.dim(2), x.dim(3), k, k, stride, stride, pt, pl, pb, pr,
                              max ? kernels::cpu::PoolKind::max : kernels::cpu::PoolKind::avg};
  auto vx = x.to_vector<double>();
  std::vector<double> y(static_cast<size_t>(s.n * s.out_h() * s.out_w() * s.c));
  ref::pool2d_forward(s, vx.data(), y.data());
  return from_vector(y, Shape{s.n, s.out_h(), s.out_w(), s.c});
}

// Softmax along `axis` by exp / sum, in the plainest form.
Tensor ref_softmax(const Tensor& x, int64_t axis, bool log) {
  axis = x.shape().normalize_axis(axis);
  auto v = x.to_vector<double>();
  std::vector<double> y(v.size());
  int64_t n = x.dim(axis), inner = 1;
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  for (int64_t o = 0; o < x.numel() / (n * inner); ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return static_cast<size_t>((o * n + i) * inner + j); };
      double m = -INFINITY, s = 0;
      for (int64_t i = 0; i < n; ++i) m = std::max(m, v[at(i)]);
      for (int64_t i = 0; i < n; ++i) s += std::exp(v[at(i)] - m);
      for (int64_t i = 0; i < n; ++i) y[at(i)] = log ? v[at(i)] - m - std::log(s) : std::exp(v[at(i)] - m) / s;
    }
  return from_vector(y, x.shape());
}

// tf.image.resize by whole factors, pixel by pixel: the source coordinate in float32 as TF's kernel computes it.
Tensor ref_resize_images(const Tensor& x, int64_t fh, int64_t fw, bool bilinear) {
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3), oh = h * fh, ow = w * fw;
  auto v = x.to_vector<double>();
  auto at = [&](int64_t b, int64_t i, int64_t j, int64_t k) {
    return v[static_cast<size_t>(((b * h + i) * w + j) * c + k)];
  };
  auto source = [](int64_t o, int64_t in, int64_t out) {
    return (static_cast<float>(o) + 0.5f) * (static_cast<float>(in) / static_cast<float>(out)) - 0.5f;
  };
  std::vector<double> y;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t k = 0; k < c; ++k) {
          if (!bilinear) {
            y.push_back(at(b, i / fh, j / fw, k));
            continue;
          }
          const float sy = source(i, h, oh), sx = source(j, w, ow);
          const int64_t y0 = std::max<int64_t>(static_cast<int64_t>(std::floor(sy)), 0);
          const int64_t y1 = std::min<int64_t>(static_cast<int64_t>(std::ceil(sy)), h - 1);
          const int64_t x0 = std::max<int64_t>(static_cast<int64_t>(std::floor(sx)), 0);
          const int64_t x1 = std::min<int64_t>(static_cast<int64_t>(std::ceil(sx)), w - 1);
          const double dy = sy - std::floor(sy), dx = sx - std::floor(sx);
          const double top = at(b, y0, x0, k) + (at(b, y0, x1, k) - at(b, y0, x0, k)) * dx;
          const double bottom = at(b, y1, x0, k) + (at(b, y1, x1, k) - at(b, y1, x0, k)) * dx;
          y.push_back(top + (bottom - top) * dy);
        }
  return from_vector(y, Shape{n, oh, ow, c});
}

// ---- the table ----

std::vector<Row> rows() {
  std::vector<Row> r;
  const Shape s35{3, 5};
  // Binary ops on same shapes, broadcasting, a scalar, and batch 1.
  const std::vector<std::pair<Shape, Shape>> pairs = {{s35, s35}, {{4, 1, 3}, {5, 1}}, {{}, {2, 3}}, {{1, 7}, {7}}};
  auto binary = [&](const std::string& name, auto op, std::function<double(double, double)> f, Kind ka, Kind kb) {
    for (size_t i = 0; i < pairs.size(); ++i)
      r.push_back({name + "_" + std::to_string(i), {{pairs[i].first, ka}, {pairs[i].second, kb}},
                   [op](const Inputs& x) { return op(x[0], x[1]); },
                   [f](const Inputs& x) { return ref_binary(x[0], x[1], f); }});
  };
  binary("add", [](auto& a, auto& b) { return add(a, b); }, std::plus<double>(), Kind::any, Kind::any);
  binary("subtract", [](auto& a, auto& b) { return a - b; }, std::minus<double>(), Kind::any, Kind::any);
  binary("multiply", [](auto& a, auto& b) { return a * b; }, std::multiplies<double>(), Kind::any, Kind::any);
  binary("divide", [](auto& a, auto& b) { return a / b; }, std::divides<double>(), Kind::any, Kind::positive);
  binary("pow", [](auto& a, auto& b) { return pow(a, b); }, [](double a, double b) { return std::pow(a, b); },
         Kind::positive, Kind::any);
  binary("maximum", [](auto& a, auto& b) { return maximum(a, b); }, [](double a, double b) { return std::max(a, b); },
         Kind::any, Kind::any);
  binary("minimum", [](auto& a, auto& b) { return minimum(a, b); }, [](double a, double b) { return std::min(a, b); },
         Kind::any, Kind::any);

  // Comparisons on small integers, so that ties occur; bool results have no gradient.
  auto compare = [&](const std::string& name, auto op, std::function<double(double, double)> f) {
    r.push_back({name, {{{4, 1, 3}, Kind::small_int}, {{5, 1}, Kind::small_int}},
                 [op](const Inputs& x) { return op(x[0], x[1]); },
                 [f](const Inputs& x) { return ref_binary(x[0], x[1], f, DType::bool_); }, false});
  };
  compare("equal", [](auto& a, auto& b) { return equal(a, b); }, [](double a, double b) { return a == b; });
  compare("not_equal", [](auto& a, auto& b) { return not_equal(a, b); }, [](double a, double b) { return a != b; });
  compare("less", [](auto& a, auto& b) { return less(a, b); }, [](double a, double b) { return a < b; });
  compare("less_equal", [](auto& a, auto& b) { return less_equal(a, b); }, [](double a, double b) { return a <= b; });
  compare("greater", [](auto& a, auto& b) { return greater(a, b); }, [](double a, double b) { return a > b; });
  compare("greater_equal", [](auto& a, auto& b) { return greater_equal(a, b); },
          [](double a, double b) { return a >= b; });

  // Unary ops on a vector, a rank-3 tensor with a unit axis, a scalar, and a long array (vectorised and
  // oneDNN paths, split across threads).
  const std::vector<Shape> unary_shapes = {{17}, {3, 1, 5}, {}, {70001}};
  auto unary = [&](const std::string& name, auto op, std::function<double(double)> f, Kind k) {
    for (size_t i = 0; i < unary_shapes.size(); ++i)
      r.push_back({name + "_" + std::to_string(i), {{unary_shapes[i], k}}, [op](const Inputs& x) { return op(x[0]); },
                   [f](const Inputs& x) { return ref_unary(x[0], f); }});
  };
  unary("negative", [](auto& x) { return -x; }, [](double x) { return -x; }, Kind::any);
  unary("exp", [](auto& x) { return exp(x); }, [](double x) { return std::exp(x); }, Kind::any);
  unary("log", [](auto& x) { return log(x); }, [](double x) { return std::log(x); }, Kind::positive);
  unary("sqrt", [](auto& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, Kind::positive);
  unary("rsqrt", [](auto& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, Kind::positive);
  unary("square", [](auto& x) { return square(x); }, [](double x) { return x * x; }, Kind::any);
  unary("abs", [](auto& x) { return abs(x); }, [](double x) { return std::abs(x); }, Kind::any);
  unary("relu", [](auto& x) { return nn::relu(x); }, [](double x) { return x > 0 ? x : 0; }, Kind::any);
  unary("sigmoid", [](auto& x) { return sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); }, Kind::any);
  unary("tanh", [](auto& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, Kind::any);

  r.push_back({"where", {{{4, 1}, Kind::boolean}, {{4, 3}}, {{3}}},
               [](const Inputs& x) { return where(x[0], x[1], x[2]); },
               [](const Inputs& x) {
                 Tensor c = raw_ops::cast(x[0], DType::float64);
                 Tensor a = ref_binary(c, x[1], [](double c, double a) { return c != 0 ? a : NAN; });
                 return ref_binary(a, x[2], [](double a, double b) { return std::isnan(a) ? b : a; });
               }});
  r.push_back({"cast_roundtrip", {{{3, 4}}}, [](const Inputs& x) { return cast(cast(x[0], DType::float64), x[0].dtype()); },
               [](const Inputs& x) { return x[0]; }});
  r.push_back({"cast_to_int32", {{{3, 4}, Kind::small_int}},
               [](const Inputs& x) { return cast(cast(x[0], DType::int32), DType::float64); },
               [](const Inputs& x) { return x[0]; }, false});
  r.push_back({"cast_bfloat16", {{{9}}}, [](const Inputs& x) { return cast(cast(x[0], DType::bfloat16), x[0].dtype()); },
               [](const Inputs& x) { return x[0]; }, false, 1e-2, 1e-2});
  r.push_back({"add_n", {{s35}, {s35}, {s35}}, [](const Inputs& x) { return add_n(x); },
               [](const Inputs& x) { return ref_binary(ref_binary(x[0], x[1], std::plus<double>()), x[2], std::plus<double>()); }});

  // Reductions over all axes, one axis, a negative axis and two axes, with and without keepdims.
  const std::vector<std::vector<int64_t>> axes_list = {{}, {0}, {-1}, {0, 2}};
  for (const std::string op : {"sum", "mean", "max"})
    for (size_t i = 0; i < axes_list.size(); ++i)
      for (bool keep : {false, true}) {
        auto axes = axes_list[i];
        r.push_back({"reduce_" + op + "_" + std::to_string(i) + (keep ? "_keep" : ""), {{{2, 3, 5}}},
                     [op, axes, keep](const Inputs& x) {
                       return op == "sum" ? reduce_sum(x[0], axes, keep)
                              : op == "mean" ? reduce_mean(x[0], axes, keep)
                                             : reduce_max(x[0], axes, keep);
                     },
                     [op, axes, keep](const Inputs& x) { return ref_reduce(x[0], axes, keep, op); }});
      }
  r.push_back({"reduce_sum_long", {{{300, 257}}}, [](const Inputs& x) { return reduce_sum(x[0], {0}); },
               [](const Inputs& x) { return ref_reduce(x[0], {0}, false, "sum"); }});
  // Long rows summed along their contiguous axis (the partial sums' path, with a tail of 1001 % 8 elements).
  r.push_back({"reduce_sum_long_rows", {{{3, 1001}}}, [](const Inputs& x) { return reduce_sum(x[0], {-1}); },
               [](const Inputs& x) { return ref_reduce(x[0], {-1}, false, "sum"); }});
  r.push_back({"l2_loss", {{{7, 13}}}, [](const Inputs& x) { return nn::l2_loss(x[0]); },
               [](const Inputs& x) {
                 double total = 0;
                 for (double v : x[0].to_vector<double>()) total += v * v / 2;
                 return from_vector(std::vector<double>{total}, Shape{});
               }});
  r.push_back({"argmax", {{{4, 6, 3}}}, [](const Inputs& x) { return cast(argmax(x[0], 1), DType::float64); },
               [](const Inputs& x) {
                 auto v = x[0].to_vector<double>();
                 std::vector<double> y(12);
                 for (int64_t o = 0; o < 4; ++o)
                   for (int64_t j = 0; j < 3; ++j) {
                     int64_t best = 0;
                     for (int64_t i = 1; i < 6; ++i)
                       if (v[static_cast<size_t>((o * 6 + i) * 3 + j)] > v[static_cast<size_t>((o * 6 + best) * 3 + j)]) best = i;
                     y[static_cast<size_t>(o * 3 + j)] = static_cast<double>(best);
                   }
                 return from_vector(y, Shape{4, 3});
               }, false});

  // Shapes: views and copies, including ops on non-contiguous inputs.
  r.push_back({"reshape", {{{2, 6}}}, [](const Inputs& x) { return reshape(x[0], {3, -1}); },
               [](const Inputs& x) { return from_vector(x[0].to_vector<double>(), Shape{3, 4}); }});
  auto ref_transpose = [](const Tensor& x, std::vector<int64_t> perm) {
    std::vector<int64_t> dims;
    for (int64_t p : perm) dims.push_back(x.dim(p));
    Shape out(dims);
    auto v = x.to_vector<double>();
    std::vector<double> y(v.size());
    for (int64_t i = 0; i < out.numel(); ++i) {
      auto idx = unravel(i, out);
      std::vector<int64_t> src(idx.size());
      for (size_t d = 0; d < perm.size(); ++d) src[static_cast<size_t>(perm[d])] = idx[d];
      int64_t flat = 0;
      for (int64_t d = 0; d < x.rank(); ++d) flat = flat * x.dim(d) + src[static_cast<size_t>(d)];
      y[static_cast<size_t>(i)] = v[static_cast<size_t>(flat)];
    }
    return from_vector(y, out);
  };
  r.push_back({"transpose", {{{2, 3, 4}}}, [](const Inputs& x) { return transpose(x[0], {2, 0, 1}); },
               [=](const Inputs& x) { return ref_transpose(x[0], {2, 0, 1}); }});
  r.push_back({"reshape_of_transpose", {{{3, 4}}}, [](const Inputs& x) { return reshape(transpose(x[0]), {2, 6}); },
               [=](const Inputs& x) { return from_vector(ref_transpose(x[0], {1, 0}).to_vector<double>(), Shape{2, 6}); }});
  r.push_back({"exp_of_transpose", {{{3, 4}}}, [](const Inputs& x) { return exp(transpose(x[0])); },
               [=](const Inputs& x) { return ref_unary(ref_transpose(x[0], {1, 0}), [](double v) { return std::exp(v); }); }});
  // linspace of start [2] and stop [3, 1] (broadcast to [3, 2]), 5 values along axis 1: [3, 5, 2].
  r.push_back({"linspace", {{{2}}, {{3, 1}}}, [](const Inputs& x) { return linspace(x[0], x[1], 5, 1); },
               [](const Inputs& x) {
                 auto a = x[0].to_vector<double>(), b = x[1].to_vector<double>();
                 std::vector<double> y;
                 for (int64_t i = 0; i < 3; ++i)
                   for (int64_t k = 0; k < 5; ++k)
                     for (int64_t j = 0; j < 2; ++j) {
                       const double lo = a[static_cast<size_t>(j)], hi = b[static_cast<size_t>(i)];
                       y.push_back(k == 4 ? hi : lo + static_cast<double>(k) * ((hi - lo) / 4));
                     }
                 return from_vector(y, Shape{3, 5, 2});
               }});
  r.push_back({"slice", {{{5, 6}}}, [](const Inputs& x) { return slice(x[0], {1, 2}, {3, -1}); },
               [](const Inputs& x) {
                 auto v = x[0].to_vector<double>();
                 std::vector<double> y;
                 for (int64_t i = 1; i < 4; ++i)
                   for (int64_t j = 2; j < 6; ++j) y.push_back(v[static_cast<size_t>(i * 6 + j)]);
                 return from_vector(y, Shape{3, 4});
               }});
  r.push_back({"concat", {{{2, 3}}, {{2, 4}}, {{2, 1}}}, [](const Inputs& x) { return concat(x, 1); },
               [](const Inputs& x) {
                 std::vector<double> y;
                 for (int64_t i = 0; i < 2; ++i)
                   for (const Tensor& t : x) {
                     auto v = t.to_vector<double>();
                     y.insert(y.end(), v.begin() + i * t.dim(1), v.begin() + (i + 1) * t.dim(1));
                   }
                 return from_vector(y, Shape{2, 8});
               }});
  r.push_back({"stack", {{{3, 2}}, {{3, 2}}}, [](const Inputs& x) { return stack(x, 1); },
               [](const Inputs& x) {
                 auto a = x[0].to_vector<double>(), b = x[1].to_vector<double>();
                 std::vector<double> y;
                 for (size_t i = 0; i < 3; ++i) y.insert(y.end(), {a[2 * i], a[2 * i + 1], b[2 * i], b[2 * i + 1]});
                 return from_vector(y, Shape{3, 2, 2});
               }});
  r.push_back({"gather", {{{6, 3}}, {{5}, Kind::labels, 6}}, [](const Inputs& x) { return gather(x[0], x[1]); },
               [](const Inputs& x) {
                 auto v = x[0].to_vector<double>();
                 std::vector<double> y;
                 for (int64_t i : x[1].to_vector<int64_t>()) y.insert(y.end(), v.begin() + i * 3, v.begin() + i * 3 + 3);
                 return from_vector(y, Shape{5, 3});
               }});
  // Embedding's lookup: 12 indices into 4 rows, so rows repeat and their gradients must add up.
  r.push_back({"gather_embedding_lookup",
               {{{4, 3}}, {{3, 4}, Kind::labels, 4, DType::int32}},
               [](const Inputs& x) { return gather(x[0], x[1]); },
               [](const Inputs& x) {
                 auto v = x[0].to_vector<double>();
                 std::vector<double> y;
                 for (int64_t i : x[1].to_vector<int64_t>())
                   y.insert(y.end(), v.begin() + i * 3, v.begin() + i * 3 + 3);
                 return from_vector(y, Shape{3, 4, 3});
               }});
  // LayerNormalization's composition (no fused kernel): (x - mean) * rsqrt(var + eps) * gamma + beta.
  r.push_back({"layer_norm_composed",
               {{{4, 6}}, {{6}}, {{6}}},
               [](const Inputs& x) {
                 Tensor c = x[0] - reduce_mean(x[0], {-1}, true);
                 return c * rsqrt(reduce_mean(square(c), {-1}, true) + 1e-3) * x[1] + x[2];
               },
               [](const Inputs& x) {
                 auto v = x[0].to_vector<double>(), g = x[1].to_vector<double>(), b = x[2].to_vector<double>();
                 std::vector<double> y(v.size());
                 for (size_t row = 0; row < 4; ++row) {
                   double mean = 0, var = 0;
                   for (size_t j = 0; j < 6; ++j) mean += v[row * 6 + j] / 6;
                   for (size_t j = 0; j < 6; ++j) var += (v[row * 6 + j] - mean) * (v[row * 6 + j] - mean) / 6;
                   for (size_t j = 0; j < 6; ++j)
                     y[row * 6 + j] = (v[row * 6 + j] - mean) / std::sqrt(var + 1e-3) * g[j] + b[j];
                 }
                 return from_vector(y, Shape{4, 6});
               }});
  // GlobalAveragePooling2D and GlobalMaxPooling2D: reductions over height and width of NHWC.
  for (bool max : {false, true})
    r.push_back({max ? "global_max_pool2d" : "global_avg_pool2d",
                 {{{2, 3, 4, 5}}},
                 [max](const Inputs& x) {
                   return max ? reduce_max(x[0], {1, 2}) : reduce_mean(x[0], {1, 2});
                 },
                 [max](const Inputs& x) {
                   return ref_reduce(x[0], {1, 2}, false, max ? "max" : "mean");
                 }});
  // UpSampling2D's op, by factors (2, 3).
  for (bool bilinear : {false, true})
    r.push_back(
        {bilinear ? "resize_images_bilinear" : "resize_images_nearest",
         {{{2, 3, 4, 2}}},
         [bilinear](const Inputs& x) { return nn::resize_images(x[0], 2, 3, bilinear ? "bilinear" : "nearest"); },
         [bilinear](const Inputs& x) { return ref_resize_images(x[0], 2, 3, bilinear); }});
  r.push_back({"one_hot", {{{5}, Kind::labels, 4}},
               [](const Inputs& x) { return one_hot(x[0], 4, 2.0, -1.0, DType::float64); },
               [](const Inputs& x) {
                 std::vector<double> y;
                 for (int64_t i : x[0].to_vector<int64_t>())
                   for (int64_t j = 0; j < 4; ++j) y.push_back(i == j ? 2.0 : -1.0);
                 return from_vector(y, Shape{5, 4});
               }, false});

  // Matmul: every transpose combination, batches with and without broadcasting, degenerate sizes, and a
  // transposed view passed as is.
  struct Mm { Shape a, b; bool ta, tb; };
  const std::vector<Mm> mms = {{{3, 4}, {4, 5}, false, false}, {{4, 3}, {4, 5}, true, false},
                               {{3, 4}, {5, 4}, false, true},  {{4, 3}, {5, 4}, true, true},
                               {{2, 3, 4}, {4, 5}, false, false}, {{2, 3, 4}, {2, 4, 5}, false, false},
                               {{1, 3, 4}, {2, 4, 5}, false, true}, {{1, 1}, {1, 1}, false, false},
                               {{1, 7}, {7, 1}, false, false}, {{64, 33}, {33, 10}, false, false}};
  for (size_t i = 0; i < mms.size(); ++i) {
    Mm m = mms[i];
    if (m.tb && m.b.rank() == 3) m.b = Shape{2, 5, 4};
    r.push_back({"matmul_" + std::to_string(i), {{m.a}, {m.b}},
                 [m](const Inputs& x) { return matmul(x[0], x[1], m.ta, m.tb); },
                 [m](const Inputs& x) { return ref_matmul(x[0], x[1], m.ta, m.tb); }});
  }
  r.push_back({"matmul_of_transposed_view", {{{4, 3}}, {{4, 5}}},
               [](const Inputs& x) { return matmul(transpose(x[0]), x[1]); },
               [](const Inputs& x) { return ref_matmul(x[0], x[1], true, false); }});

  r.push_back({"softmax_last", {{{4, 7}}}, [](const Inputs& x) { return nn::softmax(x[0]); },
               [](const Inputs& x) { return ref_softmax(x[0], -1, false); }});
  r.push_back({"softmax_axis1", {{{2, 3, 5}}}, [](const Inputs& x) { return nn::softmax(x[0], 1); },
               [](const Inputs& x) { return ref_softmax(x[0], 1, false); }});
  r.push_back({"log_softmax_last", {{{4, 7}}}, [](const Inputs& x) { return nn::log_softmax(x[0]); },
               [](const Inputs& x) { return ref_softmax(x[0], -1, true); }});
  r.push_back({"log_softmax_axis0", {{{5, 3}}}, [](const Inputs& x) { return nn::log_softmax(x[0], 0); },
               [](const Inputs& x) { return ref_softmax(x[0], 0, true); }});

  // Convolution: valid and same, strides 1 and 2, batch 1, 1x1 and 5x5 filters, with and without bias.
  struct Cv { Shape x, w; int64_t stride; bool same, bias; };
  const std::vector<Cv> convs = {{{2, 7, 7, 3}, {3, 3, 3, 4}, 1, false, true}, {{2, 8, 6, 2}, {3, 3, 2, 3}, 2, true, true},
                                 {{1, 5, 6, 2}, {5, 5, 2, 2}, 1, true, false}, {{1, 4, 4, 3}, {1, 1, 3, 5}, 1, false, true},
                                 {{3, 9, 9, 1}, {3, 3, 1, 4}, 2, false, false}};
  for (size_t i = 0; i < convs.size(); ++i) {
    Cv c = convs[i];
    std::vector<In> in = {{c.x}, {c.w}};
    if (c.bias) in.push_back({Shape{c.w[3]}});
    r.push_back({"conv2d_" + std::to_string(i), in,
                 [c](const Inputs& x) {
                   return nn::conv2d(x[0], x[1], c.bias ? x[2] : Tensor(),
                                     {.stride_h = c.stride, .stride_w = c.stride,
                                      .padding = c.same ? Padding::same : Padding::valid});
                 },
                 [c](const Inputs& x) { return ref_conv(x[0], x[1], c.bias ? x[2] : Tensor(), c.stride, c.same); }});
  }
  struct Pl { Shape x; int64_t k, stride; bool same; };
  const std::vector<Pl> pools = {{{2, 6, 6, 3}, 2, 2, false}, {{1, 7, 5, 2}, 3, 2, true}, {{2, 5, 5, 1}, 2, 1, false}};
  for (size_t i = 0; i < pools.size(); ++i)
    for (bool max : {true, false}) {
      Pl p = pools[i];
      Pool2dOptions o{.pool_h = p.k, .pool_w = p.k, .stride_h = p.stride, .stride_w = p.stride,
                      .padding = p.same ? Padding::same : Padding::valid};
      r.push_back({std::string(max ? "max" : "avg") + "_pool2d_" + std::to_string(i), {{p.x}},
                   [o, max](const Inputs& x) { return max ? nn::max_pool2d(x[0], o) : nn::avg_pool2d(x[0], o); },
                   [p, max](const Inputs& x) { return ref_pool(x[0], p.k, p.stride, p.same, max); }});
    }

  for (DType ld : {DType::int64, DType::int32})
    r.push_back({std::string("sparse_softmax_xent_") + std::string(dtype_name(ld)), {{{5}, Kind::labels, 7, ld}, {{5, 7}}},
                 [](const Inputs& x) { return nn::sparse_softmax_cross_entropy_with_logits(x[0], x[1]); },
                 [](const Inputs& x) {
                   Tensor ls = ref_softmax(x[1], -1, true);
                   auto v = ls.to_vector<double>();
                   std::vector<double> y;
                   auto labels = x[0].to_vector<int64_t>();
                   for (size_t i = 0; i < labels.size(); ++i) y.push_back(-v[i * 7 + static_cast<size_t>(labels[i])]);
                   return from_vector(y, Shape{5});
                 }});
  return r;
}

// ---- the checks ----

Tensor make_input(const In& in, DType float_dtype, uint64_t seed) {
  Philox rng(seed);
  switch (in.kind) {
    case Kind::any: return random_uniform(in.shape, rng, -2, 2, float_dtype);
    case Kind::positive: return random_uniform(in.shape, rng, 0.5, 2, float_dtype);
    case Kind::small_int: {
      Tensor u = random_uniform(in.shape, rng, -2, 3, DType::float64);
      return raw_ops::cast(raw_ops::cast(u, DType::int32), float_dtype);
    }
    case Kind::boolean: return raw_ops::binary(raw_ops::BinaryOp::greater, random_uniform(in.shape, rng, -1, 1),
                                               zeros({}, DType::float32));
    case Kind::labels: {
      Tensor u = random_uniform(in.shape, rng, 0, static_cast<double>(in.classes), DType::float64);
      return raw_ops::cast(u, in.label_dtype);
    }
  }
  return Tensor();
}

bool is_float_input(const In& in) { return in.kind == Kind::any || in.kind == Kind::positive || in.kind == Kind::small_int; }

Inputs make_inputs(const Row& row, DType float_dtype, uint64_t seed) {
  Inputs xs;
  for (size_t i = 0; i < row.inputs.size(); ++i) xs.push_back(make_input(row.inputs[i], float_dtype, seed * 31 + i));
  return xs;
}

// max |a - b| / max(1, max |b|).
double relative_error(const Tensor& a, const Tensor& b) {
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  double diff = 0, scale = 1;
  for (size_t i = 0; i < va.size(); ++i) {
    diff = std::max(diff, std::isnan(va[i]) != std::isnan(vb[i]) ? INFINITY : std::abs(va[i] - vb[i]));
    scale = std::max(scale, std::abs(vb[i]));
  }
  return diff / scale;
}

// sum(op(x) * w): a scalar whose gradient exercises every output element with a different weight.
Tensor weighted_loss(const Row& row, const Inputs& x, const Tensor& w) { return reduce_sum(row.op(x) * w); }

class OpForward : public ::testing::TestWithParam<Row> {};
class OpGradient : public ::testing::TestWithParam<Row> {};

// The row's forward on `device` against its reference, in float64 and in float32.
void expect_forward_matches_reference(const Row& row, Device device) {
  Inputs x64 = make_inputs(row, DType::float64, 1);
  Tensor expected = row.reference(x64);
  Inputs x32;
  for (const Tensor& t : x64) x32.push_back(is_floating(t.dtype()) ? raw_ops::cast(t, DType::float32) : t);
  for (const auto& [x, tol] : {std::pair{x64, row.f64_tolerance}, std::pair{x32, row.f32_tolerance}}) {
    Inputs placed;
    for (const Tensor& t : x) placed.push_back(t.to(device));
    Tensor y = row.op(placed);
    ASSERT_EQ(y.device(), device) << row.name << " ran on " << y.device().str();
    ASSERT_EQ(y.shape(), expected.shape()) << row.name;
    ASSERT_EQ(y.dtype() == DType::bool_, expected.dtype() == DType::bool_) << row.name;
    EXPECT_LE(relative_error(y, expected), tol) << row.name << " in " << dtype_name(x[0].dtype());
  }
}

TEST_P(OpForward, MatchesReference) { expect_forward_matches_reference(GetParam(), Device{}); }

TEST_P(OpGradient, MatchesFiniteDifferences) {
  const Row& row = GetParam();
  Inputs x = make_inputs(row, DType::float64, 2);
  Philox wrng(99);
  Tensor w = random_normal(row.op(x).shape(), wrng, 0, 1, DType::float64);

  GradientTape tape;
  for (size_t i = 0; i < x.size(); ++i)
    if (is_float_input(row.inputs[i])) tape.watch(x[i]);
  std::vector<Tensor> grads = tape.gradient(weighted_loss(row, x, w), x);

  const double eps = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!is_float_input(row.inputs[i])) continue;
    ASSERT_TRUE(grads[i].defined()) << row.name << ": no gradient for input " << i;
    ASSERT_EQ(grads[i].shape(), x[i].shape()) << row.name;
    auto analytic = grads[i].to_vector<double>();
    // Up to 40 elements per input, spread over the tensor.
    const int64_t n = x[i].numel(), step = std::max<int64_t>(1, n / 40);
    for (int64_t j = 0; j < n; j += step) {
      auto at = [&](double delta) {
        Tensor moved = x[i].clone();
        moved.data<double>()[j] += delta;
        Inputs xm = x;
        xm[i] = moved;
        return weighted_loss(row, xm, w).item<double>();
      };
      const double numeric = (at(eps) - at(-eps)) / (2 * eps);
      EXPECT_NEAR(analytic[static_cast<size_t>(j)], numeric, 1e-5 * std::max(1.0, std::abs(numeric)))
          << row.name << ": input " << i << " element " << j;
    }
  }
}

TEST_P(OpGradient, Float32MatchesFloat64) {
  const Row& row = GetParam();
  Inputs x64 = make_inputs(row, DType::float64, 3), x32;
  for (const Tensor& t : x64) x32.push_back(is_floating(t.dtype()) ? raw_ops::cast(t, DType::float32) : t);
  Philox wrng(7);
  Tensor w64 = random_normal(row.op(x64).shape(), wrng, 0, 1, DType::float64);
  Tensor w32 = raw_ops::cast(w64, DType::float32);
  auto grads = [&](const Inputs& x, const Tensor& w) {
    GradientTape tape;
    for (size_t i = 0; i < x.size(); ++i)
      if (is_float_input(row.inputs[i])) tape.watch(x[i]);
    return tape.gradient(weighted_loss(row, x, w), x);
  };
  auto g64 = grads(x64, w64), g32 = grads(x32, w32);
  for (size_t i = 0; i < x64.size(); ++i) {
    if (!is_float_input(row.inputs[i])) continue;
    ASSERT_EQ(g32[i].dtype(), DType::float32) << row.name;
    EXPECT_LE(relative_error(g32[i], g64[i]), 10 * row.f32_tolerance) << row.name << ": input " << i;
  }
}

// ---- NaN and the infinities, against TensorFlow ----

// One op run on the inputs of the nan_golden.json case of the same name (make_nan_golden.py: NaN first and later in
// rows and windows, +Inf against -Inf, saturating magnitudes). Its output and the gradients of sum(y * w) must be
// TensorFlow's, NaN and the infinities in exactly TF's places. An elementwise row also runs on its input repeated
// kLongCopies times, long enough for the vectorised and oneDNN paths.
struct SpecialRow {
  std::string name;
  Fn op;
  bool elementwise = false;
  // TF's max-pooling gradient goes to a NaN that starts its window, though its forward skipped that NaN; oneDNN's
  // (float32) goes to the maximum the forward chose. Matching TF would cost a pass over the input (+55% on the
  // backward), for a gradient that is finite either way: those rows' float32 gradients are not compared.
  bool float32_gradient_is_onednns = false;
};
void PrintTo(const SpecialRow& row, std::ostream* os) { *os << row.name; }

constexpr int64_t kLongCopies = 400;  // 4800 elements: past the 4096 at which oneDNN's eltwise takes over

std::vector<SpecialRow> special_value_rows() {
  std::vector<SpecialRow> r;
  auto unary = [&](const std::string& name, Tensor (*op)(const Tensor&)) {
    r.push_back({name, [op](const Inputs& x) { return op(x[0]); }, true});
  };
  unary("relu", nn::relu);
  unary("sigmoid", sigmoid);
  unary("tanh", tanh);
  unary("exp", exp);
  unary("log", log);
  unary("sqrt", sqrt);
  unary("rsqrt", rsqrt);
  unary("square", square);
  unary("abs", abs);
  unary("sign", sign);
  unary("negative", negative);
  auto binary = [&](const std::string& name, Tensor (*op)(const Tensor&, const Tensor&)) {
    r.push_back({name, [op](const Inputs& x) { return op(x[0], x[1]); }});
  };
  binary("add", add);
  binary("subtract", subtract);
  binary("multiply", multiply);
  binary("divide", divide);
  binary("pow", pow);
  binary("maximum", maximum);
  binary("minimum", minimum);
  binary("maximum_with_zero", maximum);
  binary("minimum_with_nan", minimum);
  // Reductions of a [7, 4] matrix along its rows, its columns and whole; min as the Python binding composes it.
  auto reduce_min = [](const Tensor& x, const std::vector<int64_t>& axes) { return -reduce_max(-x, axes); };
  for (const auto& [s, axis] : {std::pair<std::string, int64_t>{"rows", -1}, {"columns", 0}}) {
    const std::vector<int64_t> axes{axis};
    r.push_back({"reduce_sum_" + s, [axes](const Inputs& x) { return reduce_sum(x[0], axes); }});
    r.push_back({"reduce_mean_" + s, [axes](const Inputs& x) { return reduce_mean(x[0], axes); }});
    r.push_back({"reduce_max_" + s, [axes](const Inputs& x) { return reduce_max(x[0], axes); }});
    r.push_back({"reduce_min_" + s, [axes, reduce_min](const Inputs& x) { return reduce_min(x[0], axes); }});
    r.push_back({"argmax_" + s, [axes](const Inputs& x) { return argmax(x[0], axes[0]); }});
    r.push_back({"softmax_" + s, [axes](const Inputs& x) { return nn::softmax(x[0], axes[0]); }});
    r.push_back({"log_softmax_" + s, [axes](const Inputs& x) { return nn::log_softmax(x[0], axes[0]); }});
  }
  r.push_back({"reduce_sum_all", [](const Inputs& x) { return reduce_sum(x[0]); }});
  r.push_back({"l2_loss_with_inf", [](const Inputs& x) { return nn::l2_loss(x[0]); }});
  r.push_back({"l2_loss_with_nan", [](const Inputs& x) { return nn::l2_loss(x[0]); }});
  r.push_back({"sparse_softmax_xent",
               [](const Inputs& x) { return nn::sparse_softmax_cross_entropy_with_logits(x[0], x[1]); }});
  // Pooling of a 4x4 image whose windows hold NaN first, -Inf, only -Inf and only NaN; 16 channels take oneDNN's
  // vector path.
  struct Pl { std::string name; int64_t k, stride; Padding padding; };
  for (const Pl& p : {Pl{"valid_2x2", 2, 2, Padding::valid}, Pl{"valid_2x2_stride1", 2, 1, Padding::valid},
                      Pl{"same_3x3", 3, 2, Padding::same}, Pl{"valid_2x2_16_channels", 2, 2, Padding::valid}}) {
    const Pool2dOptions o{
        .pool_h = p.k, .pool_w = p.k, .stride_h = p.stride, .stride_w = p.stride, .padding = p.padding};
    r.push_back({"max_pool2d_" + p.name, [o](const Inputs& x) { return nn::max_pool2d(x[0], o); }, false, true});
    r.push_back({"avg_pool2d_" + p.name, [o](const Inputs& x) { return nn::avg_pool2d(x[0], o); }});
  }
  return r;
}

const golden::json& nan_golden_case(const std::string& name) {
  static const golden::json doc = golden::load_golden("nan_golden.json");
  for (const golden::json& c : doc["ops"])
    if (c["name"] == name) return c;
  throw std::runtime_error("nan_golden.json has no case \"" + name + "\": add it to make_nan_golden.py and rerun it");
}

// x repeated `copies` times along its only axis (a no-op for 1).
Tensor repeated(const Tensor& x, int64_t copies) {
  if (copies == 1) return x;
  return reshape(broadcast_to(reshape(x, {1, x.numel()}), {copies, x.numel()}), {copies * x.numel()}).contiguous();
}

void expect_special_row_matches_tensorflow(const SpecialRow& row, Device device) {
  const golden::json& c = nan_golden_case(row.name);
  for (DType dtype : {DType::float32, DType::float64}) {
    const golden::json& tf = c[std::string(dtype_name(dtype))];
    const double tolerance = dtype == DType::float32 ? 1e-5 : 1e-10;
    for (int64_t copies : row.elementwise ? std::vector<int64_t>{1, kLongCopies} : std::vector<int64_t>{1}) {
      const std::string what = row.name + " in " + std::string(dtype_name(dtype)) + (copies > 1 ? ", repeated" : "");
      Inputs x;
      for (const golden::json& t : c["inputs"])
        x.push_back(repeated(golden::special_tensor(t, dtype), copies).to(device));
      GradientTape tape;
      for (const Tensor& t : x)
        if (is_floating(t.dtype())) tape.watch(t);
      const Tensor y = row.op(x);
      EXPECT_EQ(y.device(), device) << what;
      const Tensor expected = repeated(golden::special_tensor(tf["output"], DType::float64), copies);
      golden::expect_special_values_match(what, y, expected, tolerance);
      if (!is_floating(y.dtype()) || (row.float32_gradient_is_onednns && dtype == DType::float32 && !device.is_gpu()))
        continue;
      const std::vector<Tensor> grads = tape.gradient(reduce_sum(y * golden::special_weights(y)), x);
      for (size_t i = 0; i < x.size(); ++i) {
        if (tf["gradients"][i].is_null()) continue;
        ASSERT_TRUE(grads[i].defined()) << what << ": no gradient for input " << i;
        golden::expect_special_values_match(
            what + ", gradient of input " + std::to_string(i), grads[i],
            repeated(golden::special_tensor(tf["gradients"][i], DType::float64), copies), tolerance);
      }
    }
  }
}

class SpecialValues : public ::testing::TestWithParam<SpecialRow> {};

TEST_P(SpecialValues, MatchTensorFlow) { expect_special_row_matches_tensorflow(GetParam(), Device{}); }

TEST(SpecialValues, EveryGoldenCaseHasARow) {
  const golden::json doc = golden::load_golden("nan_golden.json");
  std::set<std::string> names;
  for (const SpecialRow& row : special_value_rows()) names.insert(row.name);
  for (const golden::json& c : doc["ops"])
    EXPECT_TRUE(names.count(c["name"].get<std::string>())) << c["name"] << " has no row in special_value_rows()";
}

// ---- the same rows on the GPU ----

std::vector<Row> differentiable_rows() {
  std::vector<Row> out;
  for (Row& r : rows())
    if (r.differentiable) out.push_back(std::move(r));
  return out;
}

// Every row on /gpu:0, as two tests that walk the table (each failure names its row): a machine without a GPU skips
// two tests, not one per row.
class OpOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no GPU: " << (has_cuda_build() ? "none visible to this process" : "built without CUDA");
  }
  static bool has_cuda_build() {
#if LOCKSTEP_WITH_CUDA
    return true;
#else
    return false;
#endif
  }
};

TEST_F(OpOnGpu, EveryRowsForwardMatchesItsReference) {
  const std::vector<Row> table = rows();
  for (const Row& row : table) {
    SCOPED_TRACE(row.name);
    expect_forward_matches_reference(row, Device::gpu(0));
  }
  std::cout << "    " << table.size() << " rows' forward on /gpu:0\n";
}

// The row's gradients on the GPU against the CPU's, in float64 and float32.
void expect_gpu_gradients_match_the_cpu(const Row& row) {
  for (DType dtype : {DType::float64, DType::float32}) {
    Inputs x = make_inputs(row, dtype, 2), on_gpu;
    for (const Tensor& t : x) on_gpu.push_back(t.to(Device::gpu(0)));
    Philox wrng(99);
    Tensor w = random_normal(row.op(x).shape(), wrng, 0, 1, dtype);
    auto grads = [&](const Inputs& in, const Tensor& weights) {
      GradientTape tape;
      for (size_t i = 0; i < in.size(); ++i)
        if (is_float_input(row.inputs[i])) tape.watch(in[i]);
      return tape.gradient(weighted_loss(row, in, weights), in);
    };
    auto cpu = grads(x, w), gpu = grads(on_gpu, w.to(Device::gpu(0)));
    for (size_t i = 0; i < x.size(); ++i) {
      if (!is_float_input(row.inputs[i])) continue;
      ASSERT_TRUE(gpu[i].defined()) << row.name << ": no gradient for input " << i;
      EXPECT_TRUE(gpu[i].device().is_gpu()) << row.name;
      EXPECT_LE(relative_error(gpu[i], cpu[i]), dtype == DType::float64 ? 1e-10 : 10 * row.f32_tolerance)
          << row.name << ": input " << i << " in " << dtype_name(dtype);
    }
  }
}

TEST_F(OpOnGpu, EveryRowsGradientsMatchTheCpu) {
  const std::vector<Row> table = differentiable_rows();
  for (const Row& row : table) {
    SCOPED_TRACE(row.name);
    expect_gpu_gradients_match_the_cpu(row);
  }
  std::cout << "    " << table.size() << " rows' gradients on /gpu:0\n";
}

TEST_F(OpOnGpu, EverySpecialValueRowMatchesTensorFlow) {
  const std::vector<SpecialRow> table = special_value_rows();
  for (const SpecialRow& row : table) {
    SCOPED_TRACE(row.name);
    expect_special_row_matches_tensorflow(row, Device::gpu(0));
  }
  std::cout << "    " << table.size() << " rows of NaN and infinities on /gpu:0\n";
}

auto row_name = [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; };
INSTANTIATE_TEST_SUITE_P(Ops, OpForward, ::testing::ValuesIn(rows()), row_name);
INSTANTIATE_TEST_SUITE_P(Ops, OpGradient, ::testing::ValuesIn(differentiable_rows()), row_name);
INSTANTIATE_TEST_SUITE_P(Ops, SpecialValues, ::testing::ValuesIn(special_value_rows()),
                         [](const ::testing::TestParamInfo<SpecialRow>& info) { return info.param.name; });

}  // namespace
}  // namespace lockstep
