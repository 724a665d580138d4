// What the convolutions (Conv1D, Conv2D) share: their parameter table (Keras' BaseConv arguments).
#include "../layers-impl.h"

namespace lockstep::keras::detail {

std::vector<Param> conv_params(int rank, const std::string& kernel_doc, const std::string& padding_doc) {
  // Keras writes a rank-1 size as a number, a larger one as a tuple; lockstep takes either spelling.
  const nlohmann::json one = rank == 1 ? nlohmann::json(1) : nlohmann::json(std::vector<int>(static_cast<size_t>(rank), 1));
  const nlohmann::json other = rank == 1 ? nlohmann::json::array({1}) : nlohmann::json(1);
  return std::vector<Param>{{"filters", kRequired, "the number of output channels"},
                            {"kernel_size", kRequired, kernel_doc},
                            {"strides", one, "the step between windows (a number, or one per axis)"},
                            {"padding", "valid", padding_doc},
                            channels_last(),
                            Param::fixed("dilation_rate", one, "not implemented by lockstep", {other}),
                            Param::fixed("groups", 1, "not implemented by lockstep"),
                            {"activation", nullptr, "applied to the output; None is linear"},
                            {"use_bias", true, "whether to add a bias vector"},
                            {"kernel_initializer", "glorot_uniform", "the kernel's initial values"},
                            {"bias_initializer", "zeros", "the bias's initial values"},
                            {"kernel_regularizer", nullptr, "a penalty on the kernel, added to the loss"}} +
         plain_kernel({"bias_regularizer", "activity_regularizer", "kernel_constraint", "bias_constraint"});
}

}  // namespace lockstep::keras::detail
