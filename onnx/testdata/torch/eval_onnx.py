#!/usr/bin/python3
"""Evaluates an ONNX graph with PyTorch, op by op, in float64.

    eval_onnx.py MODEL.onnx OUTDIR INPUT.npy...
    eval_onnx.py --dir DIR

The first form feeds the inputs (in the graph's input order) and writes
every graph output k to OUTDIR/output_K.npy as float32. The second
evaluates every NAME.onnx in DIR that has NAME_input.npy beside it, its
one input, or NAME_input_0.npy, NAME_input_1.npy, … for several, and
writes its first output to NAME_eval.npy there (and, for a graph of
several outputs, output k to NAME_eval_K.npy). It knows the operators the
Go exporter (onnx/export*.go) emits, each written here from the ONNX operator
specification (opset 17) on top of torch.nn.functional; any other operator is
an error. This machine has no ONNX runtime; check_ort.py compares with
onnxruntime where one exists.
"""
import functools
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def pad_input(x, pads, value):
    """Pads the spatial dims of (N, C, D...) by ONNX pads [b1.., e1..]."""
    r = len(pads) // 2
    spec = []
    for d in reversed(range(r)):
        spec += [pads[d], pads[d + r]]
    return F.pad(x, spec, value=value)


def conv(x, w, b=None, kernel_shape=None, strides=None, dilations=None, pads=None, group=1):
    r = w.dim() - 2
    strides = strides or [1] * r
    dilations = dilations or [1] * r
    pads = pads or [0] * (2 * r)
    x = pad_input(x, pads, 0.0)
    f = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[r]
    return f(x, w, b, stride=strides, dilation=dilations, groups=group)


def pool(x, kind, kernel_shape, strides=None, pads=None, count_include_pad=0, ceil_mode=0):
    assert ceil_mode == 0
    r = len(kernel_shape)
    strides = strides or [1] * r
    pads = pads or [0] * (2 * r)
    f = {1: F.max_pool1d, 2: F.max_pool2d}[r] if kind == "max" else {1: F.avg_pool1d, 2: F.avg_pool2d}[r]
    if kind == "max":
        return f(pad_input(x, pads, -float("inf")), kernel_shape, strides)
    s = f(pad_input(x, pads, 0.0), kernel_shape, strides)
    if count_include_pad:
        return s
    ones = pad_input(torch.ones_like(x[:1, :1]), pads, 0.0)
    return s / f(ones, kernel_shape, strides)


def conv_transpose(x, w, b=None, kernel_shape=None, strides=None, dilations=None, pads=None, output_padding=None, group=1):
    """ConvTranspose: the full transposed convolution, output_padding at the
    end of each axis, then the pads cut from both ends."""
    r = w.dim() - 2
    strides = strides or [1] * r
    dilations = dilations or [1] * r
    pads = pads or [0] * (2 * r)
    output_padding = output_padding or [0] * r
    f = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[r]
    y = f(x, w, None, stride=strides, groups=group, dilation=dilations)
    spec = []
    for d in reversed(range(r)):
        spec += [0, output_padding[d]]
    y = F.pad(y, spec)  # positions no input reaches: zero, then the bias
    if b is not None:
        y = y + b.reshape(-1, *[1] * r)
    idx = [slice(None), slice(None)] + [slice(pads[d], y.shape[2 + d] - pads[d + r]) for d in range(r)]
    return y[tuple(idx)]


def pad(x, pads, value=None, mode="constant"):
    assert mode == "constant"
    pads = [int(p) for p in pads.tolist()]
    r = x.dim()
    spec = []
    for d in reversed(range(r)):
        spec += [pads[d], pads[d + r]]
    return F.pad(x, spec, value=0.0 if value is None else float(value))


def slice_(x, starts, ends, axes=None, steps=None):
    starts, ends = starts.tolist(), ends.tolist()
    axes = list(range(len(starts))) if axes is None else axes.tolist()
    steps = [1] * len(starts) if steps is None else steps.tolist()
    idx = [slice(None)] * x.dim()
    for s, e, a, st in zip(starts, ends, axes, steps):
        assert st == 1, "Slice with steps other than 1 is not handled"
        n = x.shape[a]
        s = min(max(s + n if s < 0 else s, 0), n)
        e = min(max(e + n if e < 0 else e, 0), n)
        idx[a] = slice(s, e)
    return x[tuple(idx)]


def resize(x, roi=None, scales=None, sizes=None, mode="nearest", coordinate_transformation_mode="half_pixel",
           nearest_mode="round_prefer_floor", **rest):
    """Resize by scales, axis by axis: nearest ("floor") or linear, with
    the "asymmetric" or "half_pixel" coordinate transformation."""
    assert sizes is None and not rest, "Resize by sizes or with %s is not handled" % sorted(rest)
    mode = mode.decode() if isinstance(mode, bytes) else mode
    ctm = coordinate_transformation_mode
    ctm = ctm.decode() if isinstance(ctm, bytes) else ctm
    nm = nearest_mode.decode() if isinstance(nearest_mode, bytes) else nearest_mode
    for a, s in enumerate(scales.tolist()):
        n = x.shape[a]
        out = int(np.floor(n * np.float32(s)))
        if out == n and s == 1:
            continue
        pos = torch.arange(out, dtype=torch.float64)
        if ctm == "half_pixel":
            orig = (pos + 0.5) / s - 0.5
        elif ctm == "asymmetric":
            orig = pos / s
        else:
            raise ValueError("coordinate_transformation_mode %s is not handled" % ctm)
        if mode == "nearest":
            assert nm == "floor", "nearest_mode %s is not handled" % nm
            x = torch.index_select(x, a, torch.clamp(torch.floor(orig), 0, n - 1).to(torch.int64))
        elif mode == "linear":
            orig = torch.clamp(orig, 0, n - 1)
            lo = torch.floor(orig).to(torch.int64)
            hi = torch.clamp(lo + 1, max=n - 1)
            shape = [1] * x.dim()
            shape[a] = out
            wt = (orig - lo).reshape(shape)
            x = torch.index_select(x, a, lo) * (1 - wt) + torch.index_select(x, a, hi) * wt
        else:
            raise ValueError("Resize mode %s is not handled" % mode)
    return x


def rnn_activation(name, alpha, beta):
    """One of the activation functions of ONNX's RNN, GRU and LSTM, with
    its alpha and beta (None: the function's default)."""
    name = name.decode() if isinstance(name, bytes) else name
    a = lambda d: d if alpha is None else alpha
    b = lambda d: d if beta is None else beta
    return {
        "relu": torch.relu,
        "tanh": torch.tanh,
        "sigmoid": torch.sigmoid,
        "affine": lambda x: a(1.0) * x + b(0.0),
        "leakyrelu": lambda x: torch.where(x < 0, a(0.01) * x, x),
        "thresholdedrelu": lambda x: torch.where(x > a(1.0), x, torch.zeros_like(x)),
        "scaledtanh": lambda x: a(1.0) * torch.tanh(b(1.0) * x),
        "hardsigmoid": lambda x: torch.clamp(a(0.2) * x + b(0.5), 0, 1),
        "elu": lambda x: torch.where(x < 0, a(1.0) * (torch.exp(x) - 1), x),
        "softsign": lambda x: x / (1 + torch.abs(x)),
        "softplus": lambda x: torch.log(torch.exp(x) + 1),
    }[name.lower()]


# The activations that take an alpha and a beta: activation_alpha and
# activation_beta are consumed by these, in the order of the activations.
TAKES_ALPHA = {"affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu"}
TAKES_BETA = {"affine", "scaledtanh", "hardsigmoid"}


def recurrent(kind, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None,
              activations=None, activation_alpha=None, activation_beta=None, clip=None,
              direction=b"forward", hidden_size=None, layout=0, linear_before_reset=0, input_forget=0):
    """RNN, GRU and LSTM as the ONNX specification defines them, one step
    at a time: gates of W, R and B in the order i, o, f, c (LSTM) or z, r,
    h (GRU); a sequence's steps from its length on leave the state as it
    is and output zeros; the reverse direction reads from the last step
    (of each sequence's length) to the first."""
    assert not input_forget, "input_forget is not handled"
    direction = direction.decode() if isinstance(direction, bytes) else direction
    if layout:
        X = X.transpose(0, 1)
        initial_h = None if initial_h is None else initial_h.transpose(0, 1)
        initial_c = None if initial_c is None else initial_c.transpose(0, 1)
    seq, batch, _ = X.shape
    dirs = W.shape[0]
    hidden = R.shape[-1]
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    defaults = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    names = activations or defaults * dirs
    alphas, betas = list(activation_alpha or []), list(activation_beta or [])
    fns = []
    for n in names:
        low = (n.decode() if isinstance(n, bytes) else n).lower()
        al = alphas.pop(0) if low in TAKES_ALPHA and alphas else None
        be = betas.pop(0) if low in TAKES_BETA and betas else None
        fns.append(rnn_activation(n, al, be))
    lens = torch.full((batch,), seq, dtype=torch.int64) if sequence_lens is None else sequence_lens.to(torch.int64)
    cl = (lambda v: v) if clip is None else (lambda v: torch.clamp(v, -clip, clip))
    ys, hs, cs = [], [], []
    for d in range(dirs):
        f = fns[d * len(defaults):(d + 1) * len(defaults)]
        w, r = W[d], R[d]
        wb = torch.zeros(gates * hidden, dtype=X.dtype) if B is None else B[d][:gates * hidden]
        rb = torch.zeros(gates * hidden, dtype=X.dtype) if B is None else B[d][gates * hidden:]
        h = torch.zeros(batch, hidden, dtype=X.dtype) if initial_h is None else initial_h[d]
        c = torch.zeros(batch, hidden, dtype=X.dtype) if initial_c is None else initial_c[d]
        p = None if P is None else P[d]
        blk = lambda v, k: v[..., k * hidden:(k + 1) * hidden]
        y = torch.zeros(seq, batch, hidden, dtype=X.dtype)
        backward = direction == "reverse" or (direction == "bidirectional" and d == 1)
        steps = range(seq - 1, -1, -1) if backward else range(seq)
        for t in steps:
            live = (t < lens).reshape(batch, 1)
            xw = X[t] @ w.T + wb
            if kind == "RNN":
                hn = f[0](cl(xw + h @ r.T + rb))
                cn = c
            elif kind == "GRU":
                z = f[0](cl(blk(xw, 0) + h @ blk(r.T, 0) + blk(rb, 0)))
                rr = f[0](cl(blk(xw, 1) + h @ blk(r.T, 1) + blk(rb, 1)))
                if linear_before_reset:
                    hh = f[1](cl(blk(xw, 2) + rr * (h @ blk(r.T, 2) + blk(rb, 2))))
                else:
                    hh = f[1](cl(blk(xw, 2) + (rr * h) @ blk(r.T, 2) + blk(rb, 2)))
                hn = (1 - z) * hh + z * h
                cn = c
            else:
                a = xw + h @ r.T + rb
                pi, po, pf = (0, 0, 0) if p is None else (p[:hidden], p[hidden:2 * hidden], p[2 * hidden:])
                i = f[0](cl(blk(a, 0) + pi * c))
                fg = f[0](cl(blk(a, 2) + pf * c))
                cc = f[1](cl(blk(a, 3)))
                cn = fg * c + i * cc
                o = f[0](cl(blk(a, 1) + po * cn))
                hn = o * f[2](cn)
            y[t] = torch.where(live, hn, torch.zeros_like(hn))
            h = torch.where(live, hn, h)
            c = torch.where(live, cn, c)
        ys.append(y)
        hs.append(h)
        cs.append(c)
    Y, Y_h, Y_c = torch.stack(ys, 1), torch.stack(hs, 0), torch.stack(cs, 0)
    if layout:
        Y, Y_h, Y_c = Y.permute(2, 0, 1, 3), Y_h.transpose(0, 1), Y_c.transpose(0, 1)
    return (Y, Y_h, Y_c) if kind == "LSTM" else (Y, Y_h)


def split(x, sizes=None, axis=0, _outputs=1):
    if sizes is None:
        assert x.shape[axis] % _outputs == 0, "Split of %d into %d equal parts" % (x.shape[axis], _outputs)
        sizes = [x.shape[axis] // _outputs] * _outputs
    else:
        sizes = sizes.tolist()
    return tuple(torch.split(x, sizes, dim=axis))


def squeeze(x, axes=None):
    if axes is None:
        return x.squeeze()
    for a in sorted((int(a) % x.dim() for a in axes.tolist()), reverse=True):
        assert x.shape[a] == 1, "Squeeze of axis %d of %s" % (a, tuple(x.shape))
        x = x.squeeze(a)
    return x


def topk(x, k, axis=-1, largest=1, sorted=1):
    v, i = torch.topk(x, int(k.reshape(-1)[0]), dim=axis, largest=bool(largest), sorted=True)
    return v, i


def gather_elements(x, i, axis=0):
    i = torch.where(i < 0, i + x.shape[axis], i)
    return torch.gather(x, axis, i)


def cumsum(x, axis, exclusive=0, reverse=0):
    a = int(axis)
    if reverse:
        x = x.flip(a)
    y = torch.cumsum(x, a)
    if exclusive:
        y = y - x
    return y.flip(a) if reverse else y


def reduce_sum(x, axes=None, keepdims=1, noop_with_empty_axes=0):
    if axes is None or axes.numel() == 0:
        if noop_with_empty_axes:
            return x
        axes = torch.arange(x.dim())
    return x.sum(dim=tuple(int(a) for a in axes.tolist()), keepdim=bool(keepdims))


def expand(x, shape):
    return x.expand(*torch.broadcast_shapes(tuple(x.shape), tuple(int(d) for d in shape.tolist())))


def reshape(x, shape):
    shape = [int(d) for d in shape]
    out = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(out)


def cast(x, to):
    if to == onnx.TensorProto.FLOAT:
        return x.to(torch.float64)
    if to == onnx.TensorProto.INT64:
        return torch.trunc(x).to(torch.int64) if x.is_floating_point() else x.to(torch.int64)
    if to == onnx.TensorProto.INT32:
        return torch.trunc(x).to(torch.int32) if x.is_floating_point() else x.to(torch.int32)
    if to == onnx.TensorProto.BOOL:
        return x != 0
    raise ValueError("Cast to %d is not handled" % to)


OPS = {
    "Identity": lambda x: x,
    "Constant": lambda value: tensor(numpy_helper.to_array(value)),
    "Transpose": lambda x, perm=None: x.permute(*(perm if perm is not None else reversed(range(x.dim())))),
    "Conv": conv,
    "ConvTranspose": conv_transpose,
    "Pad": pad,
    "Slice": slice_,
    "Resize": resize,
    "MaxPool": lambda x, **a: pool(x, "max", **a),
    "AveragePool": lambda x, **a: pool(x, "avg", **a),
    "GlobalAveragePool": lambda x: x.mean(dim=tuple(range(2, x.dim())), keepdim=True),
    "GlobalMaxPool": lambda x: x.amax(dim=tuple(range(2, x.dim())), keepdim=True),
    "Flatten": lambda x, axis=1: x.reshape(int(np.prod(x.shape[:axis])), -1),
    "BatchNormalization": lambda x, s, b, m, v, epsilon=1e-5, momentum=0.9, training_mode=0: (
        (x - m.reshape(-1, *[1] * (x.dim() - 2))) / torch.sqrt(v.reshape(-1, *[1] * (x.dim() - 2)) + epsilon)
        * s.reshape(-1, *[1] * (x.dim() - 2)) + b.reshape(-1, *[1] * (x.dim() - 2))),
    "LayerNormalization": lambda x, s, b=None, axis=-1, epsilon=1e-5: layer_norm(x, s, b, axis, epsilon),
    "Gemm": lambda a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0: (
        alpha * ((a.T if transA else a) @ (b.T if transB else b)) + (0 if c is None else beta * c)),
    "MatMul": torch.matmul,
    "Add": torch.add,
    "Sub": torch.sub,
    "Mul": torch.mul,
    "Div": torch.div,
    "And": torch.logical_and,
    "Less": torch.lt,
    "GreaterOrEqual": torch.ge,
    "Where": torch.where,
    "Relu": torch.relu,
    "Clip": lambda x, lo=None, hi=None: torch.clamp(x, lo, hi),
    "Sigmoid": torch.sigmoid,
    "Tanh": torch.tanh,
    "Softmax": lambda x, axis=-1: torch.softmax(x, axis),
    "LogSoftmax": lambda x, axis=-1: torch.log_softmax(x, axis),
    "Elu": lambda x, alpha=1.0: torch.where(x < 0, alpha * (torch.exp(x) - 1), x),
    "Erf": torch.erf,
    "Softplus": lambda x: torch.log(torch.exp(x) + 1),
    "LeakyRelu": lambda x, alpha=0.01: torch.where(x < 0, alpha * x, x),
    "Sqrt": torch.sqrt,
    "ReduceMean": lambda x, axes, keepdims=1: x.mean(dim=tuple(axes), keepdim=bool(keepdims)),
    "ReduceMax": lambda x, axes, keepdims=1: x.amax(dim=tuple(axes), keepdim=bool(keepdims)),
    "Reshape": lambda x, shape, allowzero=0: reshape(x, shape.tolist()),
    "Concat": lambda *xs, axis: torch.cat(xs, axis),
    "Cast": cast,
    "Gather": lambda x, i, axis=0: torch.index_select(x, axis, i.reshape(-1)).reshape(
        *x.shape[:axis], *i.shape, *x.shape[axis + 1:]),
    "Unsqueeze": lambda x, axes: unsqueeze(x, axes.tolist()),
    "RNN": lambda *a, **k: recurrent("RNN", *a, **k),
    "GRU": lambda *a, **k: recurrent("GRU", *a, **k),
    "LSTM": lambda *a, **k: recurrent("LSTM", *a, **k),
    "Split": split,
    "Squeeze": squeeze,
    "TopK": topk,
    "GatherElements": gather_elements,
    "CumSum": cumsum,
    "ReduceSum": reduce_sum,
    "Expand": expand,
    "Shape": lambda x: torch.tensor(list(x.shape), dtype=torch.int64),
    "Not": torch.logical_not,
    "Equal": torch.eq,
    "Greater": torch.gt,
    "Max": lambda *xs: functools.reduce(torch.maximum, xs),
    "Min": lambda *xs: functools.reduce(torch.minimum, xs),
}


def layer_norm(x, s, b, axis, epsilon):
    axis = axis % x.dim()
    dims = tuple(range(axis, x.dim()))
    mean = x.mean(dim=dims, keepdim=True)
    d = x - mean
    y = d / torch.sqrt((d * d).mean(dim=dims, keepdim=True) + epsilon) * s
    return y if b is None else y + b


def unsqueeze(x, axes):
    r = x.dim() + len(axes)
    for a in sorted(a % r for a in axes):
        x = x.unsqueeze(a)
    return x


def tensor(a):
    t = torch.from_numpy(np.array(a))
    return t.to(torch.float64) if t.is_floating_point() else t


def evaluate(model, inputs):
    env = {}
    for init in model.graph.initializer:
        env[init.name] = tensor(numpy_helper.to_array(init))
    names = [i.name for i in model.graph.input if i.name not in env]
    if len(names) != len(inputs):
        raise ValueError("the graph has %d inputs, %d given" % (len(names), len(inputs)))
    for n, x in zip(names, inputs):
        env[n] = tensor(x)
    for node in model.graph.node:
        f = OPS.get(node.op_type)
        if f is None or node.domain not in ("", "ai.onnx"):
            raise ValueError("operator %s (node %s) is not handled" % (node.op_type, node.name))
        args = [env[i] if i else None for i in node.input]
        while args and args[-1] is None:
            args.pop()
        a = attrs(node)
        if node.op_type == "Split":
            a["_outputs"] = len(node.output)
        out = f(*args, **a)
        if not isinstance(out, tuple):
            out = (out,)
        for name, v in zip(node.output, out):
            if name:
                env[name] = v
    return [env[o.name] for o in model.graph.output]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--dir":
        d = sys.argv[2]
        for name in sorted(os.listdir(d)):
            base = os.path.join(d, name[:-len(".onnx")])
            if not name.endswith(".onnx"):
                continue
            paths = [base + "_input.npy"]
            if not os.path.exists(paths[0]):
                paths = []
                while os.path.exists("%s_input_%d.npy" % (base, len(paths))):
                    paths.append("%s_input_%d.npy" % (base, len(paths)))
            if not paths:
                continue
            with torch.no_grad():
                outs = evaluate(onnx.load(os.path.join(d, name)), [np.load(p) for p in paths])
            np.save(base + "_eval.npy", outs[0].numpy().astype(np.float32))
            if len(outs) > 1:
                for k, y in enumerate(outs):
                    np.save("%s_eval_%d.npy" % (base, k), y.numpy().astype(np.float32))
        return
    if len(sys.argv) < 3:
        sys.exit("usage: eval_onnx.py MODEL.onnx OUTDIR INPUT.npy... or eval_onnx.py --dir DIR")
    model = onnx.load(sys.argv[1])
    inputs = [np.load(p) for p in sys.argv[3:]]
    with torch.no_grad():
        outs = evaluate(model, inputs)
    os.makedirs(sys.argv[2], exist_ok=True)
    for k, y in enumerate(outs):
        np.save(os.path.join(sys.argv[2], "output_%d.npy" % k), y.numpy().astype(np.float32))


if __name__ == "__main__":
    main()
