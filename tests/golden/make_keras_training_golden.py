"""Makes tests/golden/keras_training_steps.json: 20 training steps of the TensorFlow multi-worker tutorial
CNN run by real Keras (train_on_batch) with SGD, Adam, SGD+Nesterov momentum and RMSprop, from weights and
batches given by an integer formula. Reference for lockstep's layers, loss and optimizers end to end.

Generated with TensorFlow 2.21.0, Keras 3.15.1, NumPy 2.4.6 (tensorflow-cpu wheel, Python 3.11). Rerun from
the source root with a virtualenv that has tensorflow-cpu (the pyenv python3 on PATH has no TensorFlow):
    python3 -m venv /tmp/tfenv && /tmp/tfenv/bin/pip install tensorflow-cpu
    /tmp/tfenv/bin/python tests/golden/make_keras_training_golden.py

Model, exactly as Keras builds it:
    keras.Sequential([keras.Input(shape=(28, 28)), layers.Reshape((28, 28, 1)),
                      layers.Conv2D(32, 3, activation='relu'), layers.Flatten(),
                      layers.Dense(128, activation='relu'), layers.Dense(10)])
    loss SparseCategoricalCrossentropy(from_logits=True) (mean over the batch), float32, CPU,
    compile(jit_compile=False), tf.config.experimental.enable_op_determinism(), intra/inter op threads 1,
    TF_ENABLE_ONEDNN_OPTS=0 (plain Eigen kernels).
Keras weights -> names used here (lockstep layouts, same as tutorial_cnn_step.json):
    conv2d kernel HWIO [3,3,1,32] -> conv_kernel, conv2d bias -> conv_bias,
    dense kernel [21632,128] -> dense1_kernel, dense bias -> dense1_bias,
    dense_1 kernel [128,10] -> dense2_kernel, dense_1 bias -> dense2_bias.

Formula: byte-identical to make_tutorial_golden.py (copied, not imported: that module imports torch at top
level and torch is not installed next to TensorFlow). Element i (row-major) of the tensor with salt s:
    h = (i * 2654435761 + s * 40503 + 12345) mod 2^32      (uint32 arithmetic)
    u = (h >> 8) / 2^24                                      (exact in float32)
    weight = float32((u - 0.5) * scale)                      (product in double, rounded to float32 once)
    image  = float32(u)                                      (in [0, 1))
    label  = h % 10                                          (int64 here; i = 0..63 within the batch)
Initial weights: the salts/scales of make_tutorial_golden.py (conv_kernel 3/0.5, conv_bias 4/0.1,
dense1_kernel 5/0.02, dense1_bias 6/0.1, dense2_kernel 7/0.3, dense2_bias 8/0.1).
Batch of step k (k = 0..19), 64 images [64,28,28] and 64 labels:
    image salt = 1 + 77777*k, label salt = 2 + 77777*k          (salts as uint64; h is still mod 2^32)
so step 0 is exactly the batch of tutorial_cnn_step.json (and initial_loss here must equal its loss).
Why 77777: a salt only adds salt*40503/2^32 (mod 1) to every u of the tensor. 77777*40503/2^32 = 0.733 mod 1,
so consecutive batches differ (mean |x_k - x_(k-1)| = 0.39) and every step has its own labels (the random
labels mean the loss stays near ln 10). A stride such as 100 moves u by only 0.001 and leaves every label
the same (100*40503 = 0 mod 10). Among 13 strides tried, 77777 was one of those whose float32 run stays
closest to float64 (fewest ReLU pre-activations within float32 rounding of 0 along the way); 65536, for one,
flips a dense unit at step 16 and its SGD weights end 3e-3 apart from float64.
Large tensors (dense1_kernel) are stored as sums, 4096 samples at idx_k = h(k, 10) mod numel and the dot
product with weight(i, 9, scale 1), as tutorial_cnn_step.json stores its dense1 gradient.

What train_on_batch returns (Keras 3.15, TF backend, no compiled metrics): a Python float, the loss of that
batch computed in the forward pass *before* the update (reset_metrics() runs on every call, so the loss
tracker is not a running mean over calls). The script checks this: before each call it evaluates the loss
of the same batch with the current weights, and it is stored in `train_on_batch_vs_forward_max_abs_diff`.

Each run is also reproduced with a plain GradientTape loop (tf.nn ops) plus the optimizer update written
out by hand (formulas below, those of keras/src/optimizers/*.py), once in float32 (must agree with Keras:
this checks the formulas) and once in float64 from the same float32 inputs (the noise floor of float32).
    SGD:        w -= lr*g
    SGD+nest.:  m = mu*m - lr*g;  w += mu*m - lr*g                         (m starts at 0)
    Adam:       t = step+1; alpha = lr*sqrt(1-b2^t)/(1-b1^t); m += (g-m)*(1-b1); v += (g*g-v)*(1-b2);
                w -= m*alpha/(sqrt(v)+eps)                                  (eps outside the sqrt)
    RMSprop:    v = rho*v + (1-rho)*g*g;  w -= lr*g/sqrt(v+eps)             (eps INSIDE the sqrt, v starts 0)
The stored losses and weights are the Keras float32 ones; the float64 losses are stored alongside.

Noise floor (Keras float32 vs float64, per run in `f32_vs_f64_relative`; a rerun with oneDNN's kernels,
another float32 summation order, differed from this run's values and deltas by at most 1.25x these):
    per-step losses:                       <= 1.1e-7 (SGD, Nesterov, RMSprop), 2.3e-6 (Adam)
    final values, max |diff| / max |w|:    <= 5.3e-7 (SGD, Nesterov, RMSprop), 4.4e-5 (Adam)
    final - initial, max |diff| / max |delta|: 2.9e-4 SGD (dense2_kernel), 8.2e-4 Adam (conv_kernel),
                                           1.7e-5 Nesterov, 3.6e-6 RMSprop
    sums / projections (see compare()):    <= 1.0e-4 SGD (dense2_kernel delta_max_abs), 4.4e-5 Adam
A float32 run is only reproducible to the extent that no ReLU pre-activation along the way lies within
float32 rounding of 0; a conv pre-activation within 1e-8 of 0 happens at most steps, which SGD hardly
notices but Adam (eps 1e-7 normalizes tiny gradients up) carries into the weights.
"""

import json
import os

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

kBatch = 64
kClasses = 10
kSteps = 20
kSampleCount = 4096
kSampleSalt = 10
kProjectionSalt = 9
kImageSaltBase = 1
kLabelSaltBase = 2
kStepSaltStride = 77777

# name -> (salt, scale, shape in lockstep layout), as make_tutorial_golden.py.
kWeightSpecs = {
    "conv_kernel": (3, 0.5, (3, 3, 1, 32)),
    "conv_bias": (4, 0.1, (32,)),
    "dense1_kernel": (5, 0.02, (26 * 26 * 32, 128)),
    "dense1_bias": (6, 0.1, (128,)),
    "dense2_kernel": (7, 0.3, (128, kClasses)),
    "dense2_bias": (8, 0.1, (kClasses,)),
}
kWeights = list(kWeightSpecs)
kKerasNames = ["conv2d/kernel", "conv2d/bias", "dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"]
kMaxStored = 2048

# name -> (Keras constructor, hyper-parameters as stored in the JSON)
kRuns = {
    "sgd": (lambda: keras.optimizers.SGD(learning_rate=0.01),
            {"type": "SGD", "learning_rate": 0.01, "momentum": 0.0, "nesterov": False}),
    "adam": (lambda: keras.optimizers.Adam(learning_rate=0.001),
             {"type": "Adam", "learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7,
              "amsgrad": False}),
    "sgd_nesterov": (lambda: keras.optimizers.SGD(learning_rate=0.01, momentum=0.9, nesterov=True),
                     {"type": "SGD", "learning_rate": 0.01, "momentum": 0.9, "nesterov": True}),
    "rmsprop": (lambda: keras.optimizers.RMSprop(learning_rate=0.001),
                {"type": "RMSprop", "learning_rate": 0.001, "rho": 0.9, "momentum": 0.0, "epsilon": 1e-7,
                 "centered": False}),
}


# ---- formula: byte-identical to make_tutorial_golden.py ----
def hash_u32(n, salt):
    i = np.arange(n, dtype=np.uint64)
    return (i * np.uint64(2654435761) + np.uint64(salt * 40503 + 12345)) & np.uint64(0xFFFFFFFF)


def uniform(n, salt):
    return (hash_u32(n, salt) >> np.uint64(8)).astype(np.float64) / 2.0**24


def generate(salt, scale, shape):
    u = uniform(int(np.prod(shape)), salt)
    values = u if scale is None else (u - 0.5) * scale
    return values.astype(np.float32).reshape(shape)
# ---- end of formula ----


def batch(step):
    image_salt = kImageSaltBase + kStepSaltStride * step
    label_salt = kLabelSaltBase + kStepSaltStride * step
    x = generate(image_salt, None, (kBatch, 28, 28))
    y = (hash_u32(kBatch, label_salt) % np.uint64(kClasses)).astype(np.int64)
    return image_salt, label_salt, x, y


def floats(a):
    # Python's float repr round-trips a float64 exactly (and so every float32).
    return [float(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def make_model():
    return keras.Sequential([
        keras.Input(shape=(28, 28)),
        layers.Reshape((28, 28, 1)),
        layers.Conv2D(32, 3, activation="relu"),
        layers.Flatten(),
        layers.Dense(128, activation="relu"),
        layers.Dense(10),
    ])


def keras_run(make_optimizer, init, batches):
    keras.backend.clear_session()  # fresh layer names: conv2d, dense, dense_1
    model = make_model()
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=make_optimizer(), loss=loss_fn, jit_compile=False)
    names = [w.path for w in model.weights]
    assert [n.split("/", 1)[1] for n in names] == kKerasNames, names
    model.set_weights(init)
    initial_loss = float(loss_fn(batches[0][3], model(batches[0][2], training=False)))
    losses, forward_diff = [], 0.0
    for _, _, x, y in batches:
        before = float(loss_fn(y, model(x, training=False)))
        got = model.train_on_batch(x, y)
        assert isinstance(got, float), type(got)
        forward_diff = max(forward_diff, abs(got - before))
        losses.append(got)
    return initial_loss, losses, forward_diff, [np.array(w) for w in model.get_weights()]


def manual_run(opt, init, batches, dtype):
    """GradientTape loop with the optimizer written out; every value in `dtype`."""
    np_dtype = np.float32 if dtype == tf.float32 else np.float64
    c = lambda v: np_dtype(v)  # noqa: E731  hyper-parameters cast to the variable dtype, as Keras does
    w = [tf.Variable(v.astype(np_dtype)) for v in init]
    state = [[np.zeros_like(v, dtype=np_dtype) for v in init] for _ in range(2)]

    def loss_of(x, y):
        h = tf.reshape(tf.constant(x, dtype), [kBatch, 28, 28, 1])
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, w[0], 1, "VALID"), w[1]))
        h = tf.reshape(h, [kBatch, -1])
        h = tf.nn.relu(tf.matmul(h, w[2]) + w[3])
        logits = tf.matmul(h, w[4]) + w[5]
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))

    losses = []
    for step, (_, _, x, y) in enumerate(batches):
        with tf.GradientTape() as tape:
            loss = loss_of(x, y)
        grads = [g.numpy() for g in tape.gradient(loss, w)]
        losses.append(float(loss))
        lr = c(opt["learning_rate"])
        for j, g in enumerate(grads):
            v = w[j].numpy()
            if opt["type"] == "SGD" and opt["momentum"] == 0:
                v = v - g * lr
            elif opt["type"] == "SGD":
                mu = c(opt["momentum"])
                m = state[0][j] = state[0][j] * mu - g * lr
                v = v + (m * mu - g * lr)
            elif opt["type"] == "Adam":
                t = c(step + 1)
                b1, b2 = c(opt["beta_1"]), c(opt["beta_2"])
                alpha = lr * np.sqrt(c(1) - b2 ** t) / (c(1) - b1 ** t)
                m = state[0][j] = state[0][j] + (g - state[0][j]) * c(1 - opt["beta_1"])
                s = state[1][j] = state[1][j] + (g * g - state[1][j]) * c(1 - opt["beta_2"])
                v = v - (m * alpha) / (np.sqrt(s) + c(opt["epsilon"]))
            elif opt["type"] == "RMSprop":
                rho = c(opt["rho"])
                s = state[1][j] = rho * state[1][j] + c(1 - opt["rho"]) * (g * g)
                v = v - (lr * g) / np.sqrt(s + c(opt["epsilon"]))
            else:
                raise ValueError(opt)
            w[j].assign(v.astype(np_dtype))
    return losses, [v.numpy() for v in w]


def weight_entry(final, initial):
    f = final.astype(np.float64).ravel()
    d = f - initial.astype(np.float64).ravel()
    e = {
        "shape": list(final.shape),
        "sum": float(np.sum(f)),
        "sum_abs": float(np.sum(np.abs(f))),
        "sum_squares": float(np.sum(f * f)),
        "max_abs": float(np.max(np.abs(f))),
        # final - initial, in float64 from the float32 values: what the optimizer changed.
        "delta_sum": float(np.sum(d)),
        "delta_sum_abs": float(np.sum(np.abs(d))),
        "delta_max_abs": float(np.max(np.abs(d))),
    }
    if f.size <= kMaxStored:
        e["values"] = floats(f)
    else:
        idx = (hash_u32(kSampleCount, kSampleSalt) % np.uint64(f.size)).astype(np.int64)
        proj = generate(kProjectionSalt, 1.0, (f.size,)).astype(np.float64)
        e["sample_salt"] = kSampleSalt
        e["sample_indices"] = idx.tolist()
        e["sample_values"] = floats(f[idx])
        e["projection_salt"] = kProjectionSalt
        e["projection"] = float(np.dot(f, proj))
        e["projection_abs"] = float(np.sum(np.abs(f * proj)))
        e["delta_projection"] = float(np.dot(d, proj))
        e["delta_projection_abs"] = float(np.sum(np.abs(d * proj)))
    return e


def rel(a, b):
    """max |a - b| / max |b|."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


# Each stored statistic -> the statistic its difference is measured against (a sum can cancel to ~0).
kStatScale = {"sum": "sum_abs", "sum_abs": "sum_abs", "sum_squares": "sum_squares", "max_abs": "max_abs",
              "delta_sum": "delta_sum_abs", "delta_sum_abs": "delta_sum_abs", "delta_max_abs": "delta_max_abs",
              "projection": "projection_abs", "projection_abs": "projection_abs",
              "delta_projection": "delta_projection_abs", "delta_projection_abs": "delta_projection_abs"}


def compare(losses, weights, ref_losses, ref_weights, init):
    """How far (losses, weights) are from (ref_losses, ref_weights), for each thing the JSON stores:
    losses: max over steps of |diff| / |ref|; values / sample_values: max |diff| / max |ref|;
    *_delta: the same for final - initial; scalar statistics: |diff| / the scale in kStatScale."""
    out = {"loss": float(np.max(np.abs(np.array(losses) - ref_losses) / np.abs(ref_losses)))}
    for k, a, b, w0 in zip(kWeights, weights, ref_weights, init):
        ea, eb = weight_entry(a, w0), weight_entry(b, w0)
        key = "values" if "values" in eb else "sample_values"
        d = {key: rel(ea[key], eb[key]),
             key + "_delta": rel(np.array(ea[key]) - w0.ravel()[eb.get("sample_indices", slice(None))],
                                 np.array(eb[key]) - w0.ravel()[eb.get("sample_indices", slice(None))]),
             "all_values": rel(a, b),
             "all_values_delta": rel(a.astype(np.float64) - w0, b.astype(np.float64) - w0)}
        for stat, scale in kStatScale.items():
            if stat in eb:
                d[stat] = abs(ea[stat] - eb[stat]) / abs(eb[scale])
        out[k] = d
    return out


def summary(d):
    """The worst of each kind of entry over the tensors, for printing."""
    worst = {"loss": d["loss"]}
    for k in kWeights:
        for stat, v in d[k].items():
            stat = stat.replace("sample_values", "values")
            worst[stat] = max(worst.get(stat, 0.0), v)
    return ", ".join(f"{k} {v:.1e}" for k, v in worst.items())


def main():
    tf.config.experimental.enable_op_determinism()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.utils.set_random_seed(0)  # unused: every weight is set explicitly

    init = [generate(*kWeightSpecs[k]) for k in kWeights]
    batches = [batch(k) for k in range(kSteps)]

    out = {
        "description": "Keras train_on_batch losses and final weights of the TF multi-worker tutorial CNN; "
        "see tests/golden/make_keras_training_golden.py",
        "versions": {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__},
        "formula": "h = (i*2654435761 + salt*40503 + 12345) mod 2^32; u = (h>>8)/2^24; "
        "weight = float32((u-0.5)*scale); image = float32(u); label = h % 10",
        "batch": kBatch,
        "steps": kSteps,
        "batch_salts": "step k: image salt = 1 + 77777*k (shape [64,28,28]), label salt = 2 + 77777*k (i = 0..63)",
        "image_salt_base": kImageSaltBase,
        "label_salt_base": kLabelSaltBase,
        "step_salt_stride": kStepSaltStride,
        "train_on_batch_returns": "the loss of that batch (mean sparse softmax cross-entropy), computed in "
        "the forward pass before the update; not a running mean (metrics are reset on every call)",
        "batches": [],
        "initial_weights": {},
        "initial_loss": None,
        "runs": {},
    }
    for k, (image_salt, label_salt, x, y) in enumerate(batches):
        out["batches"].append({"step": k, "image_salt": image_salt, "label_salt": label_salt,
                               "images_sum": float(np.sum(x, dtype=np.float64)), "labels": y.tolist()})
    for k, w in zip(kWeights, init):
        salt, scale, shape = kWeightSpecs[k]
        out["initial_weights"][k] = {"keras_name": kKerasNames[kWeights.index(k)], "salt": salt,
                                     "scale": scale, "shape": list(shape),
                                     "sum": float(np.sum(w, dtype=np.float64))}

    init64 = [w.astype(np.float64) for w in init]
    for name, (make_optimizer, opt) in kRuns.items():
        initial_loss, losses, forward_diff, weights = keras_run(make_optimizer, init, batches)
        losses32, weights32 = manual_run(opt, init, batches, tf.float32)
        losses64, weights64 = manual_run(opt, init, batches, tf.float64)
        if out["initial_loss"] is None:
            out["initial_loss"] = initial_loss
        assert initial_loss == out["initial_loss"]
        vs_manual32 = compare(losses, weights, np.array(losses32), weights32, init64)
        vs_f64 = compare(losses, weights, np.array(losses64), weights64, init64)
        print(f"== {name}: losses {losses[0]:.6f} .. {losses[-1]:.6f}; "
              f"train_on_batch vs forward-before max |diff| {forward_diff:.3e}")
        for label, d in (("keras f32 vs manual f32", vs_manual32), ("keras f32 vs manual f64", vs_f64)):
            print(f"  {label}, worst over tensors: {summary(d)}")
        out["runs"][name] = {
            "optimizer": opt,
            "losses": floats(losses),
            "losses_f64": floats(losses64),
            "train_on_batch_vs_forward_max_abs_diff": forward_diff,
            "f32_vs_f64_relative": vs_f64,
            "keras_vs_manual_f32_relative": vs_manual32,
            "final_weights": {k: weight_entry(w, w0) for k, w, w0 in zip(kWeights, weights, init)},
        }
    print(f"initial loss {out['initial_loss']!r}")

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_training_steps.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
