#!/usr/bin/python3
"""Generate adam20/: the showcase CNN's loss over its first 20 Adam steps.

The model is the Keras Fashion-MNIST showcase with dropout off:
  Input(28,28,1) -> Conv2D(64,2,same,relu) -> MaxPool 2 -> Conv2D(32,2,same,relu)
  -> MaxPool 2 -> Flatten (h,w,c order) -> Dense(256,relu) -> Dense(10)
trained with sparse categorical cross-entropy from logits (mean over the batch) and
Keras-semantics Adam (learning rate 1e-3, beta_1 0.9, beta_2 0.999, epsilon 1e-7) on
the first 20 batches of 64 Fashion-MNIST training images, in file order.

Writes, next to this script in adam20/:
  batches.safetensors   x uint8 (1280,28,28,1), y uint8 (1280,)
  init.safetensors      float32 Keras-layout initial weights (glorot uniform, zero biases)
  final.safetensors     float32 weights after the 20 float32 steps
  losses.json           the 20 float32 losses (each before its step's update)
  losses_f64.json       the same run in float64 from the same float32 initial weights

Regenerate (from the repository root):
    /usr/bin/python3 nn/testdata/torch/gen_adam20.py
"""

import gzip
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "adam20")
DATA_DIR = "/usr/share/datasets/fashion-mnist"
SEED = 1234
STEPS = 20
BATCH = 64
LR, BETA_1, BETA_2, EPSILON = 1e-3, 0.9, 0.999, 1e-7

# Keras layer names, Keras layouts, and (fan_in, fan_out) for glorot uniform.
WEIGHTS = [
    ("conv2d/kernel", (2, 2, 1, 64), (2 * 2 * 1, 2 * 2 * 64)),
    ("conv2d/bias", (64,), None),
    ("conv2d_1/kernel", (2, 2, 64, 32), (2 * 2 * 64, 2 * 2 * 32)),
    ("conv2d_1/bias", (32,), None),
    ("dense/kernel", (7 * 7 * 32, 256), (7 * 7 * 32, 256)),
    ("dense/bias", (256,), None),
    ("dense_1/kernel", (256, 10), (256, 10)),
    ("dense_1/bias", (10,), None),
]


# ---------------------------------------------------------------------------
# Files.

def read_idx(path, magic, ndim):
    """Reads a gzipped IDX file (big-endian header, uint8 payload)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    got_magic, = struct.unpack(">I", raw[:4])
    if got_magic != magic:
        raise ValueError("%s: magic %d, want %d" % (path, got_magic, magic))
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError("%s: %d bytes of data for dims %s" % (path, data.size, dims))
    return data.reshape(dims)


def write_safetensors(path, tensors, metadata=None):
    """Writes an ordered list of (name, numpy array) as a safetensors file.

    Layout: u64 little-endian header length N, N bytes of JSON header (padded with
    spaces so that the data starts 8-byte aligned), then the tensors' little-endian
    bytes back to back in the order given.
    """
    dtypes = {np.dtype(np.float32): "F32", np.dtype(np.uint8): "U8",
              np.dtype(np.float64): "F64"}
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr)
        blob = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": dtypes[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    os.replace(tmp, path)


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")


# ---------------------------------------------------------------------------
# Model and training.

def same_pads(size, k, stride, dilation=1):
    """TensorFlow/Keras 'same' padding for one spatial dim: (before, after)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def conv2d_same(x_nchw, w_keras, b):
    kh, kw = w_keras.shape[0], w_keras.shape[1]
    ph = same_pads(x_nchw.shape[2], kh, 1)
    pw = same_pads(x_nchw.shape[3], kw, 1)
    xp = F.pad(x_nchw, (pw[0], pw[1], ph[0], ph[1]))
    return F.conv2d(xp, w_keras.permute(3, 2, 0, 1), b)


def forward(p, x_nhwc):
    h = x_nhwc.permute(0, 3, 1, 2)
    h = F.max_pool2d(F.relu(conv2d_same(h, p["conv2d/kernel"], p["conv2d/bias"])), 2, 2)
    h = F.max_pool2d(F.relu(conv2d_same(h, p["conv2d_1/kernel"], p["conv2d_1/bias"])), 2, 2)
    h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)   # Keras Flatten order (h, w, c)
    h = F.relu(h @ p["dense/kernel"] + p["dense/bias"])
    return h @ p["dense_1/kernel"] + p["dense_1/bias"]


def train(init, x_u8, y_u8, dtype):
    """Runs STEPS Keras-Adam steps; returns (losses, final weights as numpy)."""
    names = [n for n, _, _ in WEIGHTS]
    params = {n: torch.tensor(init[n], dtype=dtype, requires_grad=True) for n in names}
    m = {n: torch.zeros_like(params[n]) for n in names}
    v = {n: torch.zeros_like(params[n]) for n in names}
    x_all = torch.tensor(x_u8).to(dtype) / 255
    y_all = torch.tensor(y_u8.astype(np.int64))
    losses = []
    for i in range(STEPS):
        xb, yb = x_all[BATCH * i:BATCH * (i + 1)], y_all[BATCH * i:BATCH * (i + 1)]
        logits = forward(params, xb)
        loss = -torch.log_softmax(logits, dim=-1).gather(1, yb.view(-1, 1)).mean()
        grads = torch.autograd.grad(loss, [params[n] for n in names])
        losses.append(float(loss.item()))
        t = i + 1
        lr_t = LR * math.sqrt(1 - BETA_2 ** t) / (1 - BETA_1 ** t)
        lr_t = torch.tensor(lr_t, dtype=dtype)
        with torch.no_grad():
            for n, g in zip(names, grads):
                m[n].add_((g - m[n]) * (1 - BETA_1))
                v[n].add_((g * g - v[n]) * (1 - BETA_2))
                params[n].sub_(lr_t * m[n] / (torch.sqrt(v[n]) + EPSILON))
    return losses, {n: params[n].detach().numpy() for n in names}


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT_DIR, exist_ok=True)
    n = STEPS * BATCH
    images = read_idx(os.path.join(DATA_DIR, "train-images-idx3-ubyte.gz"), 2051, 3)
    labels = read_idx(os.path.join(DATA_DIR, "train-labels-idx1-ubyte.gz"), 2049, 1)
    x_u8 = np.ascontiguousarray(images[:n].reshape(n, 28, 28, 1))
    y_u8 = np.ascontiguousarray(labels[:n])

    rng = np.random.default_rng(SEED)
    init = {}
    for name, shape, fans in WEIGHTS:
        if fans is None:
            init[name] = np.zeros(shape, dtype=np.float32)
        else:
            limit = math.sqrt(6.0 / (fans[0] + fans[1]))
            init[name] = rng.uniform(-limit, limit, shape).astype(np.float32)

    losses32, final32 = train(init, x_u8, y_u8, torch.float32)
    losses64, _ = train(init, x_u8, y_u8, torch.float64)

    meta = {"generator": "gen_adam20.py", "torch_version": torch.__version__}
    write_safetensors(os.path.join(OUT_DIR, "batches.safetensors"),
                      [("x", x_u8), ("y", y_u8)],
                      dict(meta, source="Fashion-MNIST train set, samples 0..1279 in file order"))
    write_safetensors(os.path.join(OUT_DIR, "init.safetensors"),
                      [(nm, init[nm]) for nm, _, _ in WEIGHTS],
                      dict(meta, init="glorot uniform kernels (numpy seed %d), zero biases" % SEED))
    write_safetensors(os.path.join(OUT_DIR, "final.safetensors"),
                      [(nm, final32[nm]) for nm, _, _ in WEIGHTS],
                      dict(meta, state="float32 weights after %d Keras-Adam steps" % STEPS))
    common = ("Showcase CNN, dropout off, batch i = training samples [64i, 64i+64) scaled "
              "by 1/255; sparse categorical cross-entropy from logits, mean over the "
              "batch; Keras Adam lr 1e-3, beta_1 0.9, beta_2 0.999, epsilon 1e-7. "
              "losses[i] is batch i's loss with the weights before step i+1's update. ")
    write_json(os.path.join(OUT_DIR, "losses.json"), {
        "losses": losses32,
        "note": common + "Computed in float32 (torch %s, CPU, 1 thread)." % torch.__version__,
    })
    diff = max(abs(a - b) for a, b in zip(losses32, losses64))
    write_json(os.path.join(OUT_DIR, "losses_f64.json"), {
        "losses": losses64,
        "note": common + ("Computed in float64 from the same float32 initial weights and "
                          "data (torch %s); max |float32 - float64| over the 20 losses "
                          "is %.3g." % (torch.__version__, diff)),
    })
    print("float32 losses:", " ".join("%.6f" % l for l in losses32))
    print("float64 losses:", " ".join("%.6f" % l for l in losses64))
    print("max |f32 - f64| = %.3g" % diff)


if __name__ == "__main__":
    main()
