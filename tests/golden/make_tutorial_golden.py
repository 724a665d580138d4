"""Makes tests/golden/tutorial_cnn_step.json: PyTorch's loss and gradients for one step of the TensorFlow
multi-worker tutorial CNN on a fixed batch, the reference for tests/golden/tutorial_golden_test.cc.

Rerun from the source root with Debian's Python (torch 1.13, numpy), not the pyenv python3 on PATH:
    /usr/bin/python3 tests/golden/make_tutorial_golden.py

Model (lockstep/Keras layouts): x NHWC [64,28,28,1] -> Conv2D(32, 3x3, valid, stride 1, bias) HWIO -> relu
-> Flatten in (h, w, c) order -> Dense(128) [in,out] -> relu -> Dense(10) [in,out] -> sparse softmax
cross-entropy with integer labels -> mean over the batch.

Inputs come from one integer formula so no weights are stored. Element i (row-major, lockstep layout) of
the tensor with salt s:
    h = (i * 2654435761 + s * 40503 + 12345) mod 2^32      (uint32 arithmetic)
    u = (h >> 8) / 2^24                                      (exact in float32)
    weight = float32((u - 0.5) * scale)                      (product in double, rounded to float32 once)
    image  = float32(u)                                      (in [0, 1))
    label  = h % 10
The dense1 kernel gradient (2.77M values) is stored at 4096 indices idx_k = h(k, kSampleSalt) mod numel,
k = 0..4095, plus its full dot product with the projection tensor weight(i, kProjectionSalt, scale 1).
The computation runs in float32 and in float64 from the same float32 inputs; the largest f32-vs-f64
difference relative to each tensor's largest magnitude is printed and stored as the noise floor. The
stored values are the float64 ones: PyTorch's single-threaded float32 conv weight gradient sums 43264
terms one by one and is off by ~5e-6 relative, half the test's 1e-5 budget, which a float32 lockstep
with a different summation order would add its own error to.
"""

import json
import os

import numpy as np
import torch

kBatch = 64
kClasses = 10
kSampleCount = 4096
kSampleSalt = 10
kProjectionSalt = 9

# name -> (salt, scale, shape in lockstep layout); scale None means u itself (images).
kInputs = {
    "images": (1, None, (kBatch, 28, 28, 1)),
    "conv_kernel": (3, 0.5, (3, 3, 1, 32)),
    "conv_bias": (4, 0.1, (32,)),
    "dense1_kernel": (5, 0.02, (26 * 26 * 32, 128)),
    "dense1_bias": (6, 0.1, (128,)),
    "dense2_kernel": (7, 0.3, (128, kClasses)),
    "dense2_bias": (8, 0.1, (kClasses,)),
}
kLabelSalt = 2
kWeights = ["conv_kernel", "conv_bias", "dense1_kernel", "dense1_bias", "dense2_kernel", "dense2_bias"]
# Tensors at most this large are stored whole; larger ones sampled and projected.
kMaxStored = 2048


def hash_u32(n, salt):
    i = np.arange(n, dtype=np.uint64)
    return (i * np.uint64(2654435761) + np.uint64(salt * 40503 + 12345)) & np.uint64(0xFFFFFFFF)


def uniform(n, salt):
    return (hash_u32(n, salt) >> np.uint64(8)).astype(np.float64) / 2.0**24


def generate(salt, scale, shape):
    u = uniform(int(np.prod(shape)), salt)
    values = u if scale is None else (u - 0.5) * scale
    return values.astype(np.float32).reshape(shape)


def forward_backward(inputs, labels, dtype):
    """Loss, logits and gradients (lockstep layouts) in `dtype`."""
    t = {k: torch.tensor(v, dtype=dtype, requires_grad=(k in kWeights)) for k, v in inputs.items()}
    x = t["images"].permute(0, 3, 1, 2)  # NHWC -> NCHW
    w = t["conv_kernel"].permute(3, 2, 0, 1)  # HWIO -> OIHW
    y = torch.nn.functional.conv2d(x, w, t["conv_bias"])
    y = torch.relu(y).permute(0, 2, 3, 1).reshape(kBatch, -1)  # back to NHWC so Flatten is (h, w, c)
    y = torch.relu(torch.matmul(y, t["dense1_kernel"]) + t["dense1_bias"])
    logits = torch.matmul(y, t["dense2_kernel"]) + t["dense2_bias"]
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(labels), reduction="mean")
    grads = torch.autograd.grad(loss, [t[k] for k in kWeights])
    return (loss.item(), logits.detach().numpy(), {k: g.numpy() for k, g in zip(kWeights, grads)})


def floats(a):
    # Python's float repr round-trips a float64 exactly.
    return [float(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def main():
    torch.set_num_threads(1)  # a fixed summation order, so reruns give identical files
    inputs = {k: generate(*spec) for k, spec in kInputs.items()}
    labels = (hash_u32(kBatch, kLabelSalt) % np.uint64(kClasses)).astype(np.int64)

    loss32, logits32, grads32 = forward_backward(inputs, labels, torch.float32)
    loss64, logits64, grads64 = forward_backward(inputs, labels, torch.float64)

    noise = {"loss": abs(loss32 - loss64) / abs(loss64)}
    for k in kWeights:
        noise[k] = float(np.max(np.abs(grads32[k] - grads64[k])) / np.max(np.abs(grads64[k])))
    print("f32 vs f64, max |diff| / max |f64 value|:")
    for k, v in noise.items():
        print(f"  {k:14s} {v:.3e}")
    print(f"  overall        {max(noise.values()):.3e}")
    print(f"loss f32 {loss32!r}  f64 {loss64!r}")
    print("labels", labels.tolist())

    out = {
        "description": "PyTorch float64 loss and gradients of the TF multi-worker tutorial CNN; "
        "see tests/golden/make_tutorial_golden.py",
        "formula": "h = (i*2654435761 + salt*40503 + 12345) mod 2^32; u = (h>>8)/2^24; "
        "weight = float32((u-0.5)*scale); image = float32(u); label = h % 10",
        "batch": kBatch,
        "label_salt": kLabelSalt,
        "labels": labels.tolist(),
        "inputs": {},
        "loss": loss64,
        "logits_sum": float(np.sum(logits64)),
        "logits_sum_abs": float(np.sum(np.abs(logits64))),
        "f32_vs_f64_relative": noise,
        "gradients": {},
    }
    # Sums of the generated inputs let the test tell a wrong port of the formula from a wrong gradient.
    for k, (salt, scale, shape) in kInputs.items():
        out["inputs"][k] = {"salt": salt, "scale": scale, "shape": list(shape),
                            "sum": float(np.sum(inputs[k], dtype=np.float64))}

    for k in kWeights:
        g = grads64[k].ravel()
        entry = {
            "shape": list(grads64[k].shape),
            "sum": float(np.sum(g)),
            "sum_abs": float(np.sum(np.abs(g))),
            "sum_squares": float(np.sum(g * g)),
            "max_abs": float(np.max(np.abs(g))),  # over the whole tensor: the scale of the tolerance
        }
        if g.size <= kMaxStored:
            entry["values"] = floats(g)
        else:
            idx = (hash_u32(kSampleCount, kSampleSalt) % np.uint64(g.size)).astype(np.int64)
            proj = generate(kProjectionSalt, 1.0, (g.size,)).astype(np.float64)
            entry["sample_salt"] = kSampleSalt
            entry["sample_indices"] = idx.tolist()
            entry["sample_values"] = floats(g[idx])
            entry["projection_salt"] = kProjectionSalt
            entry["projection"] = float(np.dot(g, proj))
            entry["projection_abs"] = float(np.sum(np.abs(g * proj)))
        out["gradients"][k] = entry

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tutorial_cnn_step.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()
