#!/usr/bin/python3
"""Generate ops.json: golden values for Tartan's op library, computed with PyTorch.

Every tensor is channels-last (Keras layout).  The computations run in float64 in
PyTorch, permuting to NCHW / OIHW internally and back to channels-last afterwards.
Gradients are taken with torch.autograd: for a case with output O and a random
cotangent R of O's shape, grads[name] = d sum(O * R) / d inputs[name].

Regenerate (from the repository root):
    /usr/bin/python3 op/testdata/torch/gen_ops.py
"""

import json
import math
import os
import zlib

import numpy as np
import torch
import torch.nn.functional as F

F64 = torch.float64
OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops.json")


# ---------------------------------------------------------------------------
# Padding and layout helpers.

def same_pads(size, k, stride, dilation=1):
    """TensorFlow/Keras 'same' padding for one spatial dim: (before, after)."""
    out = -(-size // stride)  # ceil(size / stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def pad_spatial_nchw(x, kernel, strides, dilation, padding, value=0.0):
    """Pads an N,C,H,W tensor explicitly for 'same'; 'valid' leaves it alone."""
    if padding == "valid":
        return x
    if padding != "same":
        raise ValueError("unknown padding %r" % padding)
    pads = []
    # F.pad takes the last dim first: (w_before, w_after, h_before, h_after).
    for dim in reversed(range(len(kernel))):
        size = x.shape[2 + dim]
        pads.extend(same_pads(size, kernel[dim], strides[dim], dilation[dim]))
    return F.pad(x, tuple(pads), value=value)


# ---------------------------------------------------------------------------
# Op implementations on channels-last tensors.

def op_conv2d(t, p):
    x, w, b = t["x"], t["w"], t["b"]
    kh, kw = w.shape[0], w.shape[1]
    xt = x.permute(0, 3, 1, 2)                       # NHWC -> NCHW
    xt = pad_spatial_nchw(xt, (kh, kw), p["strides"], p["dilation"], p["padding"])
    wt = w.permute(3, 2, 0, 1)                       # (kh,kw,C/g,O) -> (O,C/g,kh,kw)
    y = F.conv2d(xt, wt, b, stride=tuple(p["strides"]),
                 dilation=tuple(p["dilation"]), groups=p["groups"])
    return y.permute(0, 2, 3, 1)                     # NCHW -> NHWC


def op_depthwise_conv2d(t, p):
    x, w, b = t["x"], t["w"], t["b"]
    kh, kw, c, m = w.shape
    xt = x.permute(0, 3, 1, 2)
    xt = pad_spatial_nchw(xt, (kh, kw), p["strides"], p["dilation"], p["padding"])
    # (kh,kw,C,M) -> (C,M,kh,kw) -> (C*M,1,kh,kw): output channel c*M+m.
    wt = w.permute(2, 3, 0, 1).reshape(c * m, 1, kh, kw)
    y = F.conv2d(xt, wt, b, stride=tuple(p["strides"]),
                 dilation=tuple(p["dilation"]), groups=c)
    return y.permute(0, 2, 3, 1)


def op_conv1d(t, p):
    x, w, b = t["x"], t["w"], t["b"]
    k = w.shape[0]
    xt = x.permute(0, 2, 1)                          # NWC -> NCW
    xt = pad_spatial_nchw(xt, (k,), p["strides"], p["dilation"], p["padding"])
    wt = w.permute(2, 1, 0)                          # (k,C/g,O) -> (O,C/g,k)
    y = F.conv1d(xt, wt, b, stride=tuple(p["strides"]),
                 dilation=tuple(p["dilation"]), groups=p["groups"])
    return y.permute(0, 2, 1)


def op_max_pool2d(t, p):
    x = t["x"].permute(0, 3, 1, 2)
    k, s = tuple(p["pool_size"]), tuple(p["strides"])
    # Padded cells hold -inf so that they never win a window.
    xp = pad_spatial_nchw(x, k, s, (1, 1), p["padding"], value=-math.inf)
    return F.max_pool2d(xp, k, s).permute(0, 2, 3, 1)


def op_avg_pool2d(t, p):
    x = t["x"].permute(0, 3, 1, 2)
    k, s = tuple(p["pool_size"]), tuple(p["strides"])
    xp = pad_spatial_nchw(x, k, s, (1, 1), p["padding"], value=0.0)
    ones = pad_spatial_nchw(torch.ones_like(x[:1, :1]), k, s, (1, 1), p["padding"], value=0.0)
    sums = F.avg_pool2d(xp, k, s, divisor_override=1)
    counts = F.avg_pool2d(ones, k, s, divisor_override=1)  # real cells per window
    return (sums / counts).permute(0, 2, 3, 1)


def softmax_xent_from_logits(logits, onehot_or_soft):
    return -(onehot_or_soft * torch.log_softmax(logits, dim=-1)).sum(-1)


def keras_probs_log(probs):
    eps = 1e-7
    q = probs / probs.sum(-1, keepdim=True)
    return torch.log(torch.clamp(q, eps, 1.0 - eps))


def op_sparse_cce(t, p):
    labels = t["labels"]
    if p["from_logits"]:
        logp = torch.log_softmax(t["logits"], dim=-1)
    else:
        logp = keras_probs_log(t["probs"])
    return -logp.gather(1, labels.view(-1, 1)).squeeze(1).mean()


def op_cce(t, p):
    y = t["targets"]
    if p["from_logits"]:
        logp = torch.log_softmax(t["logits"], dim=-1)
    else:
        logp = keras_probs_log(t["probs"])
    return -(y * logp).sum(-1).mean()


def op_bce(t, p):
    y = t["targets"]
    if p["from_logits"]:
        x = t["logits"]
        per = torch.clamp(x, min=0) - x * y + torch.log1p(torch.exp(-x.abs()))
    else:
        eps = 1e-7
        q = torch.clamp(t["probs"], eps, 1.0 - eps)
        per = -(y * torch.log(q) + (1 - y) * torch.log(1 - q))
    return per.mean(-1).mean()


def op_batch_norm(t, p):
    x, gamma, beta = t["x"], t["gamma"], t["beta"]
    axes = tuple(range(x.dim() - 1))
    if p["training"]:
        mean = x.mean(axes)
        var = ((x - mean) ** 2).mean(axes)           # biased variance
    else:
        mean, var = t["moving_mean"], t["moving_var"]
    return gamma * (x - mean) / torch.sqrt(var + p["epsilon"]) + beta


def op_layer_norm(t, p):
    x, gamma, beta = t["x"], t["gamma"], t["beta"]
    ax = p["axis"]
    mean = x.mean(ax, keepdim=True)
    var = ((x - mean) ** 2).mean(ax, keepdim=True)
    return gamma * (x - mean) / torch.sqrt(var + p["epsilon"]) + beta


def reduce_op(fn):
    def run(t, p):
        return fn(t["x"], dim=tuple(p["axes"]), keepdim=p["keepdims"])
    return run


OPS = {
    "matmul": lambda t, p: torch.matmul(t["a"], t["b"]),
    "dense": lambda t, p: t["x"] @ t["w"] + t["b"],
    "conv2d": op_conv2d,
    "depthwise_conv2d": op_depthwise_conv2d,
    "conv1d": op_conv1d,
    "max_pool2d": op_max_pool2d,
    "avg_pool2d": op_avg_pool2d,
    "global_avg_pool2d": lambda t, p: t["x"].mean(dim=(1, 2)),
    "global_max_pool2d": lambda t, p: t["x"].amax(dim=(1, 2)),
    "relu": lambda t, p: F.relu(t["x"]),
    "leaky_relu": lambda t, p: F.leaky_relu(t["x"], p["alpha"]),
    "elu": lambda t, p: F.elu(t["x"], p["alpha"]),
    "gelu": lambda t, p: F.gelu(t["x"], approximate="tanh" if p["approximate"] else "none"),
    "sigmoid": lambda t, p: torch.sigmoid(t["x"]),
    "tanh": lambda t, p: torch.tanh(t["x"]),
    "softplus": lambda t, p: torch.log1p(torch.exp(t["x"])),
    "softmax": lambda t, p: torch.softmax(t["x"], dim=p["axis"]),
    "log_softmax": lambda t, p: torch.log_softmax(t["x"], dim=p["axis"]),
    "exp": lambda t, p: torch.exp(t["x"]),
    "log": lambda t, p: torch.log(t["x"]),
    "sqrt": lambda t, p: torch.sqrt(t["x"]),
    "rsqrt": lambda t, p: torch.rsqrt(t["x"]),
    "erf": lambda t, p: torch.erf(t["x"]),
    "pow": lambda t, p: torch.pow(t["a"], t["b"]),
    "sparse_categorical_crossentropy": op_sparse_cce,
    "categorical_crossentropy": op_cce,
    "binary_crossentropy": op_bce,
    "mean_squared_error": lambda t, p: ((t["y_pred"] - t["y_true"]) ** 2).mean(-1).mean(),
    "mean_absolute_error": lambda t, p: (t["y_pred"] - t["y_true"]).abs().mean(-1).mean(),
    "batch_norm": op_batch_norm,
    "layer_norm": op_layer_norm,
    "sum": reduce_op(torch.sum),
    "mean": reduce_op(torch.mean),
    "max": reduce_op(torch.amax),
    "argmax": lambda t, p: torch.argmax(t["x"], dim=p["axis"]),
}


# ---------------------------------------------------------------------------
# Case construction.

def rng_for(name):
    """A generator seeded from the case name, so cases are independent of order."""
    return np.random.default_rng(zlib.crc32(name.encode()))


def encode(arr):
    arr = np.asarray(arr)
    if arr.dtype.kind in "iu":
        data = [int(v) for v in arr.reshape(-1)]
    else:
        data = [float(v) for v in arr.reshape(-1)]
        if not all(math.isfinite(v) for v in data):
            raise ValueError("non-finite value")
    return {"shape": list(arr.shape), "data": data}


class Case:
    def __init__(self, name, op, params):
        self.name, self.op, self.params = name, op, params
        self.rng = rng_for(name)
        self.inputs = {}     # name -> numpy array
        self.diff = []       # names of differentiable inputs

    def normal(self, key, shape, scale=1.0, diff=True):
        return self.add(key, self.rng.standard_normal(shape) * scale, diff)

    def uniform(self, key, shape, lo, hi, diff=True):
        return self.add(key, self.rng.uniform(lo, hi, shape), diff)

    def add(self, key, arr, diff=True):
        arr = np.asarray(arr)
        self.inputs[key] = arr
        if diff and arr.dtype.kind == "f":
            self.diff.append(key)
        return self

    def build(self):
        tens = {}
        for k, v in self.inputs.items():
            if v.dtype.kind == "f":
                tens[k] = torch.tensor(v, dtype=F64, requires_grad=k in self.diff)
            else:
                tens[k] = torch.tensor(v, dtype=torch.int64)
        out = OPS[self.op](tens, self.params)
        case = {
            "name": self.name,
            "op": self.op,
            "params": self.params,
            "inputs": {k: encode(v) for k, v in self.inputs.items()},
            "output": encode(out.detach().numpy()),
        }
        if self.diff:
            r = self.rng.standard_normal(tuple(out.shape))
            rt = torch.tensor(r, dtype=F64)
            (out * rt).sum().backward()
            case["cotangent"] = encode(r)
            case["grads"] = {k: encode(tens[k].grad.numpy()) for k in self.diff}
        else:
            case["grads"] = {}
        return case


def spread(rng, shape, lo=-3.0, hi=3.0, min_abs=0.05, min_gap=1e-3):
    """Uniform values in [lo, hi], none within min_abs of 0, no two within min_gap."""
    n = int(np.prod(shape))
    while True:
        v = rng.uniform(lo, hi, n)
        s = np.sort(v)
        if np.all(np.abs(v) >= min_abs) and np.all(np.diff(s) >= min_gap):
            return v.reshape(shape)


def conv2d_case(name, x_shape, k, o, strides, padding, dilation=(1, 1), groups=1):
    p = {"strides": list(strides), "padding": padding,
         "dilation": list(dilation), "groups": groups}
    c = Case(name, "conv2d", p)
    cin = x_shape[-1]
    return (c.normal("x", x_shape)
             .normal("w", (k[0], k[1], cin // groups, o), scale=0.5)
             .normal("b", (o,), scale=0.5))


def depthwise_case(name, x_shape, k, m, strides, padding, dilation=(1, 1)):
    p = {"strides": list(strides), "padding": padding, "dilation": list(dilation)}
    c = Case(name, "depthwise_conv2d", p)
    cin = x_shape[-1]
    return (c.normal("x", x_shape)
             .normal("w", (k[0], k[1], cin, m), scale=0.5)
             .normal("b", (cin * m,), scale=0.5))


def conv1d_case(name, x_shape, k, o, stride, padding, dilation=1):
    p = {"strides": [stride], "padding": padding, "dilation": [dilation], "groups": 1}
    c = Case(name, "conv1d", p)
    return (c.normal("x", x_shape)
             .normal("w", (k, x_shape[-1], o), scale=0.5)
             .normal("b", (o,), scale=0.5))


def pool_case(op, name, x_shape, pool, strides, padding):
    p = {"pool_size": list(pool), "strides": list(strides), "padding": padding}
    c = Case(name, op, p)
    return c.add("x", spread(c.rng, x_shape, min_abs=0.0))


def unary_case(name, op, params=None, positive=False):
    c = Case(name, op, params or {})
    if positive:
        x = spread(c.rng, (3, 7), 0.2, 3.0, min_abs=0.0)
    else:
        x = spread(c.rng, (3, 7))
    return c.add("x", x)


def softmax_rows(rng, shape):
    z = rng.standard_normal(shape)
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def all_cases():
    cs = []

    # Matrix products.
    c = Case("matmul_2d", "matmul", {})
    cs.append(c.normal("a", (3, 5)).normal("b", (5, 4)))
    c = Case("matmul_batched", "matmul", {})
    cs.append(c.normal("a", (2, 3, 5)).normal("b", (2, 5, 4)))
    c = Case("dense", "dense", {})
    cs.append(c.normal("x", (4, 7)).normal("w", (7, 3)).normal("b", (3,)))

    # 2-D convolutions.
    cs.append(conv2d_case("conv2d_k2_same_s1", (2, 6, 5, 3), (2, 2), 4, (1, 1), "same"))
    cs.append(conv2d_case("conv2d_k3_valid_s2", (2, 7, 6, 3), (3, 3), 4, (2, 2), "valid"))
    cs.append(conv2d_case("conv2d_k3_same_s2_even", (2, 6, 6, 3), (3, 3), 4, (2, 2), "same"))
    cs.append(conv2d_case("conv2d_k3_same_s2_odd", (2, 7, 5, 3), (3, 3), 4, (2, 2), "same"))
    cs.append(conv2d_case("conv2d_k2_same_s2", (2, 7, 6, 3), (2, 2), 4, (2, 2), "same"))
    cs.append(conv2d_case("conv2d_k3_d2_same", (2, 7, 6, 3), (3, 3), 4, (1, 1), "same",
                          dilation=(2, 2)))
    cs.append(conv2d_case("conv2d_k3_g2_valid", (2, 6, 5, 4), (3, 3), 6, (1, 1), "valid",
                          groups=2))
    cs.append(conv2d_case("conv2d_k1_valid", (2, 5, 5, 3), (1, 1), 4, (1, 1), "valid"))

    # Depthwise convolutions.
    cs.append(depthwise_case("depthwise_conv2d_k3_same_s1_m2", (2, 6, 5, 3), (3, 3), 2,
                             (1, 1), "same"))
    cs.append(depthwise_case("depthwise_conv2d_k3_valid_s2_m1", (2, 7, 6, 4), (3, 3), 1,
                             (2, 2), "valid"))

    # 1-D convolutions.
    cs.append(conv1d_case("conv1d_k3_same_s1", (2, 7, 3), 3, 4, 1, "same"))
    cs.append(conv1d_case("conv1d_k4_valid_s2", (2, 9, 3), 4, 4, 2, "valid"))
    cs.append(conv1d_case("conv1d_k2_same_d2", (2, 6, 3), 2, 4, 1, "same", dilation=2))

    # Pooling.
    for op in ("max_pool2d", "avg_pool2d"):
        cs.append(pool_case(op, op + "_p2_s2_valid_even", (2, 6, 6, 3), (2, 2), (2, 2), "valid"))
        cs.append(pool_case(op, op + "_p2_s2_valid_odd", (2, 7, 7, 3), (2, 2), (2, 2), "valid"))
        cs.append(pool_case(op, op + "_p3_s2_same", (2, 6, 7, 3), (3, 3), (2, 2), "same"))
        cs.append(pool_case(op, op + "_p2_s1_same", (2, 5, 6, 3), (2, 2), (1, 1), "same"))
    for op in ("global_avg_pool2d", "global_max_pool2d"):
        c = Case(op, op, {})
        cs.append(c.add("x", spread(c.rng, (2, 5, 6, 3), min_abs=0.0)))

    # Activations and elementwise maths.
    cs.append(unary_case("relu", "relu"))
    cs.append(unary_case("leaky_relu", "leaky_relu", {"alpha": 0.3}))
    cs.append(unary_case("elu", "elu", {"alpha": 1.0}))
    cs.append(unary_case("gelu_exact", "gelu", {"approximate": False}))
    cs.append(unary_case("gelu_tanh", "gelu", {"approximate": True}))
    for op in ("sigmoid", "tanh", "softplus"):
        cs.append(unary_case(op, op))
    cs.append(unary_case("softmax_axis-1", "softmax", {"axis": -1}))
    cs.append(unary_case("softmax_axis0", "softmax", {"axis": 0}))
    cs.append(unary_case("log_softmax_axis-1", "log_softmax", {"axis": -1}))
    cs.append(unary_case("exp", "exp"))
    for op in ("log", "sqrt", "rsqrt"):
        cs.append(unary_case(op, op, positive=True))
    cs.append(unary_case("erf", "erf"))
    c = Case("pow", "pow", {})
    cs.append(c.add("a", spread(c.rng, (3, 7), 0.2, 3.0, min_abs=0.0))
               .add("b", spread(c.rng, (3, 7), -2.0, 2.0)))

    # Losses (scalar outputs, mean over the batch).
    c = Case("sparse_categorical_crossentropy_logits", "sparse_categorical_crossentropy",
             {"from_logits": True})
    cs.append(c.normal("logits", (5, 4)).add("labels", c.rng.integers(0, 4, 5)))
    c = Case("sparse_categorical_crossentropy_probs", "sparse_categorical_crossentropy",
             {"from_logits": False})
    cs.append(c.add("probs", softmax_rows(c.rng, (5, 4))).add("labels", c.rng.integers(0, 4, 5)))
    c = Case("categorical_crossentropy_logits", "categorical_crossentropy", {"from_logits": True})
    cs.append(c.add("targets", softmax_rows(c.rng, (5, 4)), diff=False).normal("logits", (5, 4)))
    c = Case("categorical_crossentropy_probs", "categorical_crossentropy", {"from_logits": False})
    cs.append(c.add("targets", softmax_rows(c.rng, (5, 4)), diff=False)
               .add("probs", softmax_rows(c.rng, (5, 4))))
    c = Case("binary_crossentropy_logits", "binary_crossentropy", {"from_logits": True})
    cs.append(c.add("targets", c.rng.integers(0, 2, (4, 3)).astype(np.float64), diff=False)
               .add("logits", spread(c.rng, (4, 3))))
    c = Case("binary_crossentropy_probs", "binary_crossentropy", {"from_logits": False})
    cs.append(c.add("targets", c.rng.integers(0, 2, (4, 3)).astype(np.float64), diff=False)
               .uniform("probs", (4, 3), 0.05, 0.95))
    for op in ("mean_squared_error", "mean_absolute_error"):
        c = Case(op, op, {})
        cs.append(c.normal("y_true", (4, 3), diff=False).normal("y_pred", (4, 3)))

    # Normalisation.
    c = Case("batch_norm_training", "batch_norm", {"epsilon": 1e-3, "training": True})
    cs.append(c.add("x", c.rng.standard_normal((4, 3, 3, 2)) * 2.0 + 0.5)
               .uniform("gamma", (2,), 0.5, 1.5).normal("beta", (2,), scale=0.5))
    c = Case("batch_norm_inference", "batch_norm", {"epsilon": 1e-3, "training": False})
    cs.append(c.normal("x", (4, 3, 3, 2), scale=2.0)
               .uniform("gamma", (2,), 0.5, 1.5).normal("beta", (2,), scale=0.5)
               .normal("moving_mean", (2,), scale=0.5, diff=False)
               .uniform("moving_var", (2,), 0.5, 2.0, diff=False))
    c = Case("layer_norm", "layer_norm", {"epsilon": 1e-3, "axis": -1})
    cs.append(c.normal("x", (3, 5), scale=2.0)
               .uniform("gamma", (5,), 0.5, 1.5).normal("beta", (5,), scale=0.5))

    # Reductions.
    for op in ("sum", "mean", "max"):
        c = Case(op + "_axes1", op, {"axes": [1], "keepdims": False})
        cs.append(c.add("x", spread(c.rng, (3, 4, 5), min_abs=0.0)))
        c = Case(op + "_axes02_keepdims", op, {"axes": [0, 2], "keepdims": True})
        cs.append(c.add("x", spread(c.rng, (3, 4, 5), min_abs=0.0)))
    c = Case("argmax_axis1", "argmax", {"axis": 1})
    cs.append(c.add("x", spread(c.rng, (3, 4, 5), min_abs=0.0), diff=False))
    return cs


def main():
    torch.set_num_threads(1)
    cases = [c.build() for c in all_cases()]
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    doc = {"generator": "gen_ops.py", "torch_version": torch.__version__, "cases": cases}
    with open(OUT_PATH, "w") as f:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print("wrote %s: %d cases, %d bytes" % (OUT_PATH, len(cases), os.path.getsize(OUT_PATH)))


if __name__ == "__main__":
    main()
