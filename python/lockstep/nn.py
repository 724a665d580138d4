"""tf.nn: activations, losses for custom training loops, convolution and pooling."""
import numpy as _np

from . import _lockstep, math as _math

_ops = _lockstep.ops
_convert = _ops.convert_to_tensor

relu, sigmoid, tanh = _ops.relu, _ops.sigmoid, _ops.tanh
softplus, log_sigmoid, l2_normalize = _math.softplus, _math.log_sigmoid, _math.l2_normalize


def softmax(logits, axis=None, name=None):
    return _ops.softmax(logits, -1 if axis is None else int(axis))


def log_softmax(logits, axis=None, name=None):
    return _ops.log_softmax(logits, -1 if axis is None else int(axis))


def relu6(features, name=None):
    return _ops.minimum(_ops.relu(features), 6.0)


def leaky_relu(features, alpha=0.2, name=None):
    x = _convert(features)
    return _ops.maximum(x, _ops.multiply(x, alpha))


def elu(features, name=None):
    x = _convert(features)
    return _ops.where(_ops.greater(x, 0), x, _ops.subtract(_ops.exp(_ops.minimum(x, 0.0)), 1.0))


def silu(features, beta=1.0, name=None):
    x = _convert(features)
    return _ops.multiply(x, _ops.sigmoid(_ops.multiply(x, beta)))


swish = silu


def gelu(features, approximate=False, name=None):
    x = _convert(features)
    inner = _ops.multiply(_ops.add(x, _ops.multiply(_ops.pow(x, 3.0), 0.044715)), 0.7978845608028654)
    return _ops.multiply(_ops.multiply(x, 0.5), _ops.add(_ops.tanh(inner), 1.0))


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    """sum(per_example_loss * sample_weight) / global_batch_size; the batch is the per-replica batch times
    num_replicas_in_sync when not given, so that the replicas' sums add up to the mean over the global batch."""
    return _ops.compute_average_loss(per_example_loss, sample_weight, int(global_batch_size or 0))


def scale_regularization_loss(regularization_loss):
    return _ops.scale_regularization_loss(_ops.convert_to_tensor(regularization_loss))


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None, name=None):
    labels = _convert(labels)
    if labels.dtype.name not in ("int32", "int64"):
        labels = _ops.cast(labels, "int64")
    return _ops.sparse_softmax_cross_entropy_with_logits(labels, logits)


def softmax_cross_entropy_with_logits(labels=None, logits=None, axis=-1, name=None):
    return _ops.negative(_ops.reduce_sum(_ops.multiply(labels, _ops.log_softmax(logits, axis)), axis, False))


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    z, x = _convert(labels), _convert(logits)
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

    x = _convert(x)
    keep = _ops.cast(_ops.greater_equal(random.uniform(x.shape, seed=seed), rate), x.dtype)
    return _ops.divide(_ops.multiply(x, keep), 1.0 - rate)


top_k, in_top_k = _math.top_k, _math.in_top_k


def moments(x, axes, shift=None, keepdims=False, name=None):
    """(mean, variance) over `axes`; the variance is the mean of squared deviations, as TF's."""
    x = _convert(x)
    axes = [int(a) for a in axes]
    mean = _ops.reduce_mean(x, axes, True)
    variance = _ops.reduce_mean(_ops.square(_ops.subtract(x, mean)), axes, True)
    if not keepdims:
        kept = [d for i, d in enumerate(x._shape_tuple) if i not in {a % len(x._shape_tuple) for a in axes}]
        mean, variance = _ops.reshape(mean, kept), _ops.reshape(variance, kept)
    return mean, variance


def weighted_moments(x, axes, frequency_weights, keepdims=False, name=None):
    x = _convert(x)
    w = _convert(frequency_weights, dtype_hint=x.dtype)
    axes = [int(a) for a in axes]
    total = _ops.reduce_sum(_ops.broadcast_to(w, _ops.multiply(x, w)._shape_tuple), axes, True)
    mean = _ops.divide(_ops.reduce_sum(_ops.multiply(w, x), axes, True), total)
    variance = _ops.divide(_ops.reduce_sum(_ops.multiply(w, _ops.square(_ops.subtract(x, mean))), axes, True), total)
    if not keepdims:
        kept = [d for i, d in enumerate(mean._shape_tuple) if i not in {a % len(x._shape_tuple) for a in axes}]
        mean, variance = _ops.reshape(mean, kept), _ops.reshape(variance, kept)
    return mean, variance


def normalize_moments(counts, mean_ss, variance_ss, shift, name=None):
    divisor = _ops.divide(1.0, _convert(counts, dtype_hint=_convert(mean_ss).dtype))
    shifted_mean = _ops.multiply(mean_ss, divisor)
    mean = shifted_mean if shift is None else _ops.add(shifted_mean, shift)
    variance = _ops.subtract(_ops.multiply(variance_ss, divisor), _ops.square(shifted_mean))
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset; offset and scale may be None."""
    inv = _ops.rsqrt(_ops.add(variance, variance_epsilon))
    if scale is not None:
        inv = _ops.multiply(inv, scale)
    out = _ops.multiply(_ops.subtract(x, mean), inv)
    return out if offset is None else _ops.add(out, offset)


def embedding_lookup(params, ids, max_norm=None, name=None):
    from . import _array_ops

    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("tf.nn.embedding_lookup over a list of sharded params is not implemented by "
                                      "lockstep (see docs/python.md)")
        params = params[0]
    if max_norm is not None:
        raise NotImplementedError("tf.nn.embedding_lookup with max_norm is not implemented by lockstep "
                                  "(see docs/python.md)")
    return _array_ops.gather(params, ids)


def convolution(input, filters, strides=None, padding="VALID", data_format=None, dilations=None,  # noqa: A002
                name=None):
    """N-D convolution for N = 1 and 2 (1-D as a 2-D convolution of height 1)."""
    x, f = _convert(input), _convert(filters)
    rank = len(x._shape_tuple) - 2
    if dilations is not None and any(int(d) != 1 for d in _np.ravel(dilations)):
        raise NotImplementedError("tf.nn.convolution with dilations other than 1 is not implemented by lockstep "
                                  "(see docs/python.md)")
    if data_format not in (None, "NWC", "NHWC"):
        raise NotImplementedError(f"tf.nn.convolution with data_format={data_format!r} is not implemented by "
                                  "lockstep (see docs/python.md)")
    if len(f._shape_tuple) != rank + 2:
        raise ValueError(f"tf.nn.convolution: filters of shape {f._shape_tuple} need rank {rank + 2} for an input of "
                         f"shape {x._shape_tuple}")
    stride = [1] * rank if strides is None else [int(s) for s in _np.ravel(strides)]
    stride = stride * rank if len(stride) == 1 else stride
    if rank == 2:
        return conv2d(x, f, stride, padding)
    if rank == 1:
        return conv1d(x, f, stride[0], padding)
    raise NotImplementedError(f"tf.nn.convolution of {rank}-D inputs is not implemented by lockstep "
                              "(see docs/python.md)")


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None, name=None):  # noqa: A002
    x, f = _convert(input), _convert(filters)
    (n, w, c), (k, fc, o) = x._shape_tuple, f._shape_tuple
    s = stride if isinstance(stride, int) else int(list(stride)[-2 if len(list(stride)) == 3 else 0])
    y = _ops.conv2d(_ops.reshape(x, [n, 1, w, c]), _ops.reshape(f, [1, k, fc, o]), 1, s, str(padding))
    return _ops.reshape(y, [n, y._shape_tuple[2], o])
