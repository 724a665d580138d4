"""tf.nn: activations, losses for custom training loops, convolution and pooling."""
from . import _lockstep, math as _math

_ops = _lockstep.ops
convert = _ops.convert_to_tensor

relu, sigmoid, tanh = _ops.relu, _ops.sigmoid, _ops.tanh
softplus, log_sigmoid, l2_normalize = _math.softplus, _math.log_sigmoid, _math.l2_normalize


def softmax(logits, axis=None, name=None):
    return _ops.softmax(logits, -1 if axis is None else int(axis))


def log_softmax(logits, axis=None, name=None):
    return _ops.log_softmax(logits, -1 if axis is None else int(axis))


def relu6(features, name=None):
    return _ops.minimum(_ops.relu(features), 6.0)


def leaky_relu(features, alpha=0.2, name=None):
    x = convert(features)
    return _ops.maximum(x, _ops.multiply(x, alpha))


def elu(features, name=None):
    x = convert(features)
    return _ops.where(_ops.greater(x, 0), x, _ops.subtract(_ops.exp(_ops.minimum(x, 0.0)), 1.0))


def silu(features, beta=1.0, name=None):
    x = convert(features)
    return _ops.multiply(x, _ops.sigmoid(_ops.multiply(x, beta)))


swish = silu


def gelu(features, approximate=False, name=None):
    x = convert(features)
    inner = _ops.multiply(_ops.add(x, _ops.multiply(_ops.pow(x, 3.0), 0.044715)), 0.7978845608028654)
    return _ops.multiply(_ops.multiply(x, 0.5), _ops.add(_ops.tanh(inner), 1.0))


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """sum(per_example_loss * sample_weight) / global_batch_size; the batch is the per-replica batch times
    num_replicas_in_sync when not given, so that the replicas' sums add up to the mean over the global batch."""
    return _ops.compute_average_loss(per_example_loss, sample_weight, int(global_batch_size or 0))


def scale_regularization_loss(regularization_loss):
    return _ops.scale_regularization_loss(_ops.convert_to_tensor(regularization_loss))


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    labels = convert(labels)
    if labels.dtype.name not in ("int32", "int64"):
        labels = _ops.cast(labels, "int64")
    return _ops.sparse_softmax_cross_entropy_with_logits(labels, logits)


def softmax_cross_entropy_with_logits(labels=None, logits=None, axis=-1, name=None):
    return _ops.negative(_ops.reduce_sum(_ops.multiply(labels, _ops.log_softmax(logits, axis)), axis, False))


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    z, x = convert(labels), convert(logits)
    # max(x, 0) - x * z + log(1 + exp(-|x|)), TF's stable form
    return _ops.add(_ops.subtract(_ops.relu(x), _ops.multiply(x, z)),
                    _ops.log(_ops.add(_ops.exp(_ops.negative(_ops.abs(x))), 1.0)))


def l2_loss(t, name=None):
    return _ops.l2_loss(t)


def bias_add(value, bias, data_format=None, name=None):
    return _ops.add(value, bias)


def _pair(v, name):
    if isinstance(v, int):
        return v, v
    v = list(v)
    if len(v) == 4:
        return v[1], v[2]
    if len(v) == 2:
        return v[0], v[1]
    if len(v) == 1:
        return v[0], v[0]
    raise ValueError(f"{name} must be an int or a list of 1, 2 or 4 ints, got {v}")


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):  # noqa: A002
    if data_format not in (None, "NHWC"):
        raise NotImplementedError("tf.nn.conv2d with data_format='NCHW' is not implemented by lockstep (see docs/python.md)")
    sh, sw = _pair(strides, "strides")
    return _ops.conv2d(input, filters, sh, sw, str(padding))


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    (kh, kw), (sh, sw) = _pair(ksize, "ksize"), _pair(strides, "strides")
    return _ops.pool2d(input, True, kh, kw, sh, sw, str(padding))


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    (kh, kw), (sh, sw) = _pair(ksize, "ksize"), _pair(strides, "strides")
    return _ops.pool2d(input, False, kh, kw, sh, sw, str(padding))


max_pool, avg_pool = max_pool2d, avg_pool2d


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    from . import random

    x = convert(x)
    keep = _ops.cast(_ops.greater_equal(random.uniform(x.shape, seed=seed), rate), x.dtype)
    return _ops.divide(_ops.multiply(x, keep), 1.0 - rate)
