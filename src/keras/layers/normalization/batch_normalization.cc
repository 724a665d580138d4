// keras.layers.BatchNormalization: batch statistics (averaged over the replicas of a strategy) while training,
// moving statistics otherwise.
#include "lockstep/keras/layers/normalization/batch_normalization.h"

#include "lockstep/distribute/strategy/strategy.h"
#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::ConfigReader;
using detail::plain_kernel;
using detail::operator+;

BatchNormalization::BatchNormalization(BatchNormalizationOptions options)
    : Layer(kClassName, options.name), opt_(std::move(options)) {}

void BatchNormalization::build(const Shape& s) {
  const Shape c{s[-1]};
  gamma_ = add_weight("gamma", c, "ones");
  beta_ = add_weight("beta", c, "zeros");
  moving_mean_ = add_weight("moving_mean", c, "zeros", false);
  moving_variance_ = add_weight("moving_variance", c, "ones", false);
}

Tensor BatchNormalization::call(const Tensor& x_in, bool training) {
  // As Keras does, the statistics of bfloat16 inputs are taken in float32 and only the result is rounded.
  const Tensor x = x_in.dtype() == DType::bfloat16 ? cast(x_in, DType::float32) : x_in;
  std::vector<int64_t> axes;
  for (int64_t d = 0; d + 1 < x.rank(); ++d) axes.push_back(d);
  Tensor mean, variance;
  if (training && trainable()) {  // a frozen BatchNormalization normalises with its moving statistics, as Keras'
    mean = reduce_mean(x, axes);
    variance = reduce_mean(square(x - mean), axes);
    NoGradGuard no_grad;
    // Under a strategy the moving statistics follow the mean of every replica's batch statistics (TF's MEAN
    // aggregation), so they stay identical on every replica and worker; one replica per worker writes them.
    Tensor batch_mean = mean, batch_variance = variance;
    distribute::Strategy& strategy = distribute::get_strategy();
    const bool replicated = distribute::in_replica_context() && strategy.num_replicas_in_sync() > 1;
    if (replicated) {
      std::vector<double> stats = raw_ops::cast(raw_ops::concat({mean, variance}, 0), DType::float64).to_vector<double>();
      strategy.all_reduce_sum(stats);
      for (double& v : stats) v /= strategy.num_replicas_in_sync();
      Tensor both = raw_ops::cast(from_vector(stats, Shape{static_cast<int64_t>(stats.size())}), mean.dtype());
      batch_mean = raw_ops::slice(both, {0}, {mean.numel()});
      batch_variance = raw_ops::slice(both, {mean.numel()}, {mean.numel()});
    }
    const double m = opt_.momentum;
    auto update = [&] {
      moving_mean_.assign(moving_mean_.value() * m + batch_mean * (1 - m));
      moving_variance_.assign(moving_variance_.value() * m + batch_variance * (1 - m));
    };
    if (replicated) strategy.merge_call(update);
    else update();
  } else {
    mean = moving_mean_.value();
    variance = moving_variance_.value();
  }
  const Tensor y = (x - mean) * rsqrt(variance + opt_.epsilon) * gamma_ + beta_;
  return y.dtype() == x_in.dtype() ? y : cast(y, x_in.dtype());
}

nlohmann::json BatchNormalization::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["axis"] = -1;
  c["momentum"] = opt_.momentum;
  c["epsilon"] = opt_.epsilon;
  c["center"] = true;
  c["scale"] = true;
  c["beta_initializer"] = initializers::Zeros()->get_config();
  c["gamma_initializer"] = initializers::Ones()->get_config();
  c["moving_mean_initializer"] = initializers::Zeros()->get_config();
  c["moving_variance_initializer"] = initializers::Ones()->get_config();
  for (const char* none : {"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint", "renorm_clipping"})
    c[none] = nullptr;
  c["synchronized"] = false;
  c["renorm"] = false;
  c["renorm_momentum"] = 0.99;
  return c;
}

std::vector<Param> BatchNormalization::params() {
  const nlohmann::json zeros = initializers::Zeros()->get_config(), ones = initializers::Ones()->get_config();
  return std::vector<Param>{
             Param::fixed("axis", -1, "lockstep normalises the last axis", {nlohmann::json::array({-1})}),
             {"momentum", 0.99, "the moving statistics' decay"},
             {"epsilon", 0.001, "added to the variance"},
             Param::fixed("center", true, "lockstep's BatchNormalization always has beta"),
             Param::fixed("scale", true, "lockstep's BatchNormalization always has gamma"),
             Param::fixed("beta_initializer", "zeros", "lockstep starts beta at 0", {zeros}),
             Param::fixed("gamma_initializer", "ones", "lockstep starts gamma at 1", {ones}),
             Param::fixed("moving_mean_initializer", "zeros", "lockstep starts the moving mean at 0", {zeros}),
             Param::fixed("moving_variance_initializer", "ones", "lockstep starts the moving variance at 1", {ones})} +
         plain_kernel({"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"}) +
         std::vector<Param>{Param::fixed("renorm", false, "not implemented by lockstep"),
                            Param::fixed("renorm_clipping", nullptr, "not implemented by lockstep"),
                            Param::fixed("renorm_momentum", 0.99, "not implemented by lockstep"),
                            {"synchronized", false, "lockstep's statistics are each replica's (as Keras' default)"}};
}

std::shared_ptr<BatchNormalization> BatchNormalization::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  return std::make_shared<BatchNormalization>(BatchNormalizationOptions{
      .momentum = c.value("momentum", 0.99), .epsilon = c.value("epsilon", 1e-3), .name = r.name()});
}

}  // namespace lockstep::keras::layers
