#!/usr/bin/python3
"""Generate cnn_batch8.json.gz: one forward and backward pass of the showcase CNN.

The model is the Keras Fashion-MNIST showcase with dropout off (inference/identity):
  Input(28,28,1) -> Conv2D(64,2,same,relu) -> MaxPool 2 -> Conv2D(32,2,same,relu)
  -> MaxPool 2 -> Flatten (h,w,c order) -> Dense(256,relu) -> Dense(10) -> softmax,
with sparse categorical cross-entropy (mean over the batch), computed stably from the
logits.  Everything runs in float64 in PyTorch; tensors are stored channels-last and
kernels in Keras layout.

The first dense kernel, dense1_w (1568x256), holds random values rounded to 4
decimals so that its JSON text is short (and still exact); every other input is a
full-precision double, and so are all outputs and gradients.  The output is gzipped.

Regenerate (from the repository root):
    /usr/bin/python3 op/testdata/torch/gen_cnn.py
"""

import gzip
import io
import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

F64 = torch.float64
HERE = os.path.dirname(os.path.abspath(__file__))
OUT_PATH = os.path.join(HERE, "cnn_batch8.json.gz")
SEED = 20240608
BATCH = 8


def same_pads(size, k, stride, dilation=1):
    """TensorFlow/Keras 'same' padding for one spatial dim: (before, after)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def conv2d_same(x_nchw, w_keras, b):
    """Stride-1 'same' convolution of an NCHW tensor with a Keras (kh,kw,in,out) kernel."""
    kh, kw = w_keras.shape[0], w_keras.shape[1]
    ph = same_pads(x_nchw.shape[2], kh, 1)
    pw = same_pads(x_nchw.shape[3], kw, 1)
    xp = F.pad(x_nchw, (pw[0], pw[1], ph[0], ph[1]))
    return F.conv2d(xp, w_keras.permute(3, 2, 0, 1), b)


def forward(p, x_nhwc):
    """Returns logits of the showcase CNN for channels-last input."""
    h = x_nhwc.permute(0, 3, 1, 2)                                # NHWC -> NCHW
    h = F.max_pool2d(F.relu(conv2d_same(h, p["conv1_w"], p["conv1_b"])), 2, 2)
    h = F.max_pool2d(F.relu(conv2d_same(h, p["conv2_w"], p["conv2_b"])), 2, 2)
    h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)            # Keras Flatten: (h, w, c)
    h = F.relu(h @ p["dense1_w"] + p["dense1_b"])
    return h @ p["dense2_w"] + p["dense2_b"]


def sparse_xent_from_logits(logits, labels):
    return -torch.log_softmax(logits, dim=-1).gather(1, labels.view(-1, 1)).mean()


def glorot(rng, shape, fan_in, fan_out, decimals=None):
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    w = rng.uniform(-limit, limit, shape)
    return w if decimals is None else np.round(w, decimals)


def small_bias(rng, n):
    """Uniform in +-[0.005, 0.05]: small, but never zero, so bias grads are tested."""
    return rng.choice([-1.0, 1.0], n) * rng.uniform(0.005, 0.05, n)


def encode(arr):
    arr = np.asarray(arr)
    if arr.dtype.kind in "iu":
        data = [int(v) for v in arr.reshape(-1)]
    else:
        data = [float(v) for v in arr.reshape(-1)]
    return {"shape": list(arr.shape), "data": data}


def main():
    torch.set_num_threads(1)
    rng = np.random.default_rng(SEED)
    x = rng.uniform(0.0, 1.0, (BATCH, 28, 28, 1))
    labels = rng.integers(0, 10, BATCH)
    params = {
        "conv1_w": glorot(rng, (2, 2, 1, 64), 2 * 2 * 1, 2 * 2 * 64),
        "conv1_b": small_bias(rng, 64),
        "conv2_w": glorot(rng, (2, 2, 64, 32), 2 * 2 * 64, 2 * 2 * 32),
        "conv2_b": small_bias(rng, 32),
        # Rounded to 4 decimals: short exact JSON for the largest tensor.  Its inputs
        # (pooled activations) are continuous, so no pre-activation lands on a grid.
        "dense1_w": glorot(rng, (7 * 7 * 32, 256), 7 * 7 * 32, 256, decimals=4),
        "dense1_b": small_bias(rng, 256),
        "dense2_w": glorot(rng, (256, 10), 256, 10),
        "dense2_b": small_bias(rng, 10),
    }

    xt = torch.tensor(x, dtype=F64, requires_grad=True)
    pt = {k: torch.tensor(v, dtype=F64, requires_grad=True) for k, v in params.items()}
    lt = torch.tensor(labels, dtype=torch.int64)
    logits = forward(pt, xt)
    probs = torch.softmax(logits, dim=-1)
    loss = sparse_xent_from_logits(logits, lt)
    loss.backward()

    inputs = {"x": encode(x), "labels": encode(labels)}
    inputs.update({k: encode(v) for k, v in params.items()})
    grads = {"x": encode(xt.grad.numpy())}
    grads.update({k: encode(pt[k].grad.numpy()) for k in params})
    doc = {
        "generator": "gen_cnn.py",
        "torch_version": torch.__version__,
        "inputs": inputs,
        "outputs": {
            "logits": encode(logits.detach().numpy()),
            "probs": encode(probs.detach().numpy()),
            "loss": encode(loss.detach().numpy()),
        },
        "grads": grads,
    }
    text = json.dumps(doc, separators=(",", ":"), allow_nan=False) + "\n"
    # mtime=0 and no file name in the gzip header keep the output byte-reproducible.
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as g:
        g.write(text.encode())
    with open(OUT_PATH, "wb") as f:
        f.write(buf.getvalue())
    print("wrote %s: %d bytes (%d uncompressed), loss %r"
          % (OUT_PATH, len(buf.getvalue()), len(text), float(loss)))


if __name__ == "__main__":
    main()
