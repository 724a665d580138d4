// Devices: TensorFlow's device names, placement scopes, and (on a machine with a GPU) tensors on /gpu:0: copies both
// ways, strided views, the caching allocator, host operands copied to an op's GPU, and host code refused a GPU
// tensor. Without a GPU the GPU cases skip, saying why.
#include <gtest/gtest.h>

#include "../error_of.h"
#include "lockstep/tensor/ops.h"

namespace lockstep {
namespace {

using testing::error_of;

TEST(Device, ParsesTensorFlowsSpellings) {
  EXPECT_EQ(Device::parse("/cpu:0"), Device{});
  EXPECT_EQ(Device::parse("cpu"), Device{});
  EXPECT_EQ(Device::parse("/device:CPU:0"), Device{});
  EXPECT_EQ(Device::parse("/gpu:1"), Device::gpu(1));
  EXPECT_EQ(Device::parse("/device:GPU:2"), Device::gpu(2));
  EXPECT_EQ(Device::parse("GPU:0"), Device::gpu(0));
  EXPECT_EQ(Device::parse("gpu"), Device::gpu(0));
  EXPECT_EQ(Device::gpu(3).str(), "/gpu:3");
  for (const char* bad : {"tpu:0", "/gpu:x", "", "/gpu:", "gpu:-1"})
    EXPECT_NE(error_of([&] { Device::parse(bad); }).find("use /cpu:0, /gpu:N or /device:GPU:N"), std::string::npos)
        << bad;
}

TEST(Device, AMissingGpuIsRefusedWithTheReason) {
  const Device past = Device::gpu(gpu_count());
  const std::string e = error_of([&] { check_device_available(past); });
  EXPECT_NE(e.find(past.str() + " is not available"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { Tensor::empty({2}, DType::float32, past); }).find("is not available"), std::string::npos);
  EXPECT_NE(error_of([&] { DeviceScope scope(past); }).find("is not available"), std::string::npos);
}

TEST(Device, ScopesNestAndRestore) {
  EXPECT_EQ(default_device(), Device{});
  {
    DeviceScope outer(Device{});
    EXPECT_EQ(default_device(), Device{});
  }
  EXPECT_EQ(default_device(), Device{});
}

class OnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu_count() == 0) GTEST_SKIP() << "no GPU visible to this process";
  }
  const Device gpu = Device::gpu(0);
};

TEST_F(OnGpu, CopiesRoundTripEveryDtype) {
  Philox rng(3);
  for (DType dtype : {DType::float32, DType::float64, DType::int64, DType::int32, DType::uint8, DType::bfloat16}) {
    Tensor x = raw_ops::cast(random_uniform({5, 7}, rng, -50, 50, DType::float64), dtype);
    Tensor g = x.to(gpu);
    EXPECT_TRUE(g.device().is_gpu());
    EXPECT_EQ(g.cpu().to_vector<double>(), x.to_vector<double>()) << dtype_name(dtype);
    EXPECT_EQ(g.to_vector<double>(), x.to_vector<double>()) << dtype_name(dtype);  // to_vector copies itself
  }
}

TEST_F(OnGpu, StridedViewsCopyAndAssign) {
  Tensor x = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{3, 4});
  Tensor g = x.to(gpu);
  Tensor t = raw_ops::transpose(g, {1, 0});
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.contiguous().to_vector<float>(), raw_ops::transpose(x, {1, 0}).contiguous().to_vector<float>());
  Tensor s = raw_ops::slice(g, {1, 1}, {2, 2});
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{5, 6, 9, 10}));
  s.copy_from(from_vector(std::vector<float>{-1, -2, -3, -4}, Shape{2, 2}));  // host source, GPU slice
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, -1, -2, 7, 8, -3, -4, 11}));
}

TEST_F(OnGpu, HostOperandsAreCopiedToTheGpu) {
  Tensor a = from_vector(std::vector<float>{1, 2, 3}, Shape{3}).to(gpu);
  Tensor y = raw_ops::binary(raw_ops::BinaryOp::mul, a, scalar(2));
  EXPECT_TRUE(y.device().is_gpu());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_TRUE(zeros_like(a).device().is_gpu());
  EXPECT_EQ(full({2}, 7, DType::int32, gpu).to_vector<int32_t>(), (std::vector<int32_t>{7, 7}));
}

TEST_F(OnGpu, HostCodeIsRefusedAGpuTensor) {
  Tensor a = zeros({2}, DType::float32, gpu);
  const std::string e = error_of([&] { a.data<float>(); });
  EXPECT_NE(e.find("copy it with .cpu() first"), std::string::npos) << e;
}

}  // namespace
}  // namespace lockstep
