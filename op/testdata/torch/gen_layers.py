#!/usr/bin/python3
"""Generate layers.json: golden values for the op library's transposed
convolutions, up-sampling, separable convolution and 1-D pooling, computed with
PyTorch in float64.

It reuses gen_ops.py's case machinery (Case, spread, the channels-last
conventions of README.md) and adds its ops to gen_ops.OPS.

Transposed convolutions run through torch's conv_transpose1d/2d with no padding,
which gives the full output ((in - 1)*stride + span long); the output Keras
defines is then cut from it: its length is Keras's deconv_output_length and its
first position is TensorFlow's padding before (0 for "valid", half, rounded
down, of the total for "same"), positions past the full output being zero.

Regenerate (from the repository root):
    /usr/bin/python3 op/testdata/torch/gen_layers.py
"""

import json
import os
import sys

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_ops  # noqa: E402
from gen_ops import Case, spread, pad_spatial_nchw  # noqa: E402

OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers.json")


def deconv_output_length(length, k, padding, output_padding, stride, dilation):
    """Keras's conv_utils.deconv_output_length."""
    k = k + (k - 1) * (dilation - 1)
    if output_padding is None:
        if padding == "valid":
            return length * stride + max(k - stride, 0)
        return length * stride
    pad = k // 2 if padding == "same" else 0
    return (length - 1) * stride + k - 2 * pad + output_padding


def tf_pad_before(length, out, k, stride, dilation, padding):
    """TensorFlow's padding before for the convolution whose input gradient
    this transposed convolution is."""
    if padding == "valid":
        return 0
    span = (k - 1) * dilation + 1
    return max((length - 1) * stride + span - out, 0) // 2


def op_conv_transpose(t, p):
    x, w, b = t["x"], t["w"], t["b"]
    s = x.dim() - 2
    ks = w.shape[:s]
    perm = (0, s + 1) + tuple(range(1, s + 1))
    xt = x.permute(*perm)                              # N, C, spatial...
    wt = w.permute(s + 1, s, *range(s))                # (k..., O, C) -> (C, O, k...)
    conv = F.conv_transpose2d if s == 2 else F.conv_transpose1d
    full = conv(xt, wt, None, stride=tuple(p["strides"]), padding=0,
                dilation=tuple(p["dilation"]))
    op_ = p["output_padding"]
    for d in range(s):
        length = x.shape[1 + d]
        out = deconv_output_length(length, ks[d], p["padding"], None if op_ is None else op_[d],
                                   p["strides"][d], p["dilation"][d])
        before = tf_pad_before(length, out, ks[d], p["strides"][d], p["dilation"][d], p["padding"])
        dim = 2 + d
        need = before + out - full.shape[dim]
        if need > 0:
            shape = list(full.shape)
            shape[dim] = need
            full = torch.cat([full, torch.zeros(shape, dtype=full.dtype)], dim=dim)
        full = full.narrow(dim, before, out)
    back = (0,) + tuple(range(2, s + 2)) + (1,)
    return full.permute(*back) + b


def op_upsample2d(t, p):
    x = t["x"].permute(0, 3, 1, 2)
    mode = p["interpolation"]
    kw = {"align_corners": False} if mode == "bilinear" else {}
    y = F.interpolate(x, scale_factor=tuple(float(v) for v in p["size"]), mode=mode, **kw)
    return y.permute(0, 2, 3, 1)


def op_resize_bilinear(t, p):
    x = t["x"].permute(0, 3, 1, 2)
    y = F.interpolate(x, size=tuple(p["size"]), mode="bilinear", align_corners=False)
    return y.permute(0, 2, 3, 1)


def op_separable_conv2d(t, p):
    x, dw, pw, b = t["x"], t["dw"], t["pw"], t["b"]
    kh, kw, c, m = dw.shape
    xt = x.permute(0, 3, 1, 2)
    xt = pad_spatial_nchw(xt, (kh, kw), p["strides"], p["dilation"], p["padding"])
    dwt = dw.permute(2, 3, 0, 1).reshape(c * m, 1, kh, kw)
    y = F.conv2d(xt, dwt, None, stride=tuple(p["strides"]), dilation=tuple(p["dilation"]), groups=c)
    pwt = pw.permute(3, 2, 0, 1)                       # (1, 1, C*M, O) -> (O, C*M, 1, 1)
    y = F.conv2d(y, pwt, b)
    return y.permute(0, 2, 3, 1)


def op_max_pool1d(t, p):
    x = t["x"].permute(0, 2, 1)
    k, s = tuple(p["pool_size"]), tuple(p["strides"])
    xp = pad_spatial_nchw(x, k, s, (1,), p["padding"], value=-float("inf"))
    return F.max_pool1d(xp, k, s).permute(0, 2, 1)


def op_avg_pool1d(t, p):
    x = t["x"].permute(0, 2, 1)
    k, s = tuple(p["pool_size"]), tuple(p["strides"])
    xp = pad_spatial_nchw(x, k, s, (1,), p["padding"], value=0.0)
    ones = pad_spatial_nchw(torch.ones_like(x[:1, :1]), k, s, (1,), p["padding"], value=0.0)
    sums = F.avg_pool1d(xp, k, s) * k[0]
    counts = F.avg_pool1d(ones, k, s) * k[0]
    return (sums / counts).permute(0, 2, 1)


gen_ops.OPS.update({
    "conv2d_transpose": op_conv_transpose,
    "conv1d_transpose": op_conv_transpose,
    "upsample2d": op_upsample2d,
    "resize_bilinear": op_resize_bilinear,
    "separable_conv2d": op_separable_conv2d,
    "max_pool1d": op_max_pool1d,
    "avg_pool1d": op_avg_pool1d,
    "global_avg_pool1d": lambda t, p: t["x"].mean(dim=1),
    "global_max_pool1d": lambda t, p: t["x"].amax(dim=1),
})


def transpose_case(name, x_shape, k, o, strides, padding, output_padding=None, dilation=None):
    s = len(k)
    dilation = dilation or [1] * s
    p = {"strides": list(strides), "padding": padding, "dilation": list(dilation),
         "output_padding": None if output_padding is None else list(output_padding)}
    c = Case(name, "conv2d_transpose" if s == 2 else "conv1d_transpose", p)
    return (c.normal("x", x_shape)
             .normal("w", tuple(k) + (o, x_shape[-1]), scale=0.5)
             .normal("b", (o,), scale=0.5))


def all_cases():
    cs = []
    for name, xs, k, o, st, pad, op_, dil in [
        ("valid_k3_s1", (2, 4, 5, 3), (3, 3), 2, (1, 1), "valid", None, None),
        ("valid_k3_s2", (2, 3, 4, 2), (3, 3), 3, (2, 2), "valid", None, None),
        ("valid_k1_s2", (1, 3, 3, 2), (1, 1), 2, (2, 2), "valid", None, None),
        ("valid_k2_s3", (1, 3, 2, 2), (2, 2), 2, (3, 3), "valid", None, None),
        ("same_k3_s1", (2, 4, 4, 2), (3, 3), 3, (1, 1), "same", None, None),
        ("same_k3_s2", (2, 3, 4, 2), (3, 3), 2, (2, 2), "same", None, None),
        ("same_k4_s2", (1, 3, 3, 3), (4, 4), 2, (2, 2), "same", None, None),
        ("same_k2_s3", (1, 2, 3, 2), (2, 2), 2, (3, 3), "same", None, None),
        ("valid_k3_s2_op1", (1, 3, 3, 2), (3, 3), 2, (2, 2), "valid", (1, 1), None),
        ("same_k3_s3_op2", (1, 2, 3, 2), (3, 3), 2, (3, 3), "same", (2, 1), None),
        ("same_k4_s2_op0", (1, 3, 3, 2), (4, 4), 2, (2, 2), "same", (0, 0), None),
        ("rect_k2x3_s2x1", (2, 3, 4, 2), (2, 3), 3, (2, 1), "same", None, None),
        ("dilation2_same", (1, 4, 5, 2), (3, 2), 2, (1, 1), "same", None, (2, 2)),
        ("dilation2_valid", (1, 3, 3, 2), (3, 3), 2, (1, 1), "valid", None, (2, 1)),
    ]:
        cs.append(transpose_case("conv2d_transpose_" + name, xs, k, o, st, pad, op_, dil))
    cs.append(transpose_case("conv1d_transpose_same_k3_s2", (2, 5, 3), (3,), 2, (2,), "same"))
    cs.append(transpose_case("conv1d_transpose_valid_k4_s2_op1", (2, 4, 2), (4,), 3, (2,), "valid", (1,)))

    for name, xs, size, mode in [
        ("nearest_2x2", (2, 3, 4, 2), (2, 2), "nearest"),
        ("nearest_3x1", (1, 2, 3, 2), (3, 1), "nearest"),
        ("bilinear_2x2", (2, 3, 4, 2), (2, 2), "bilinear"),
        ("bilinear_3x2", (1, 4, 3, 2), (3, 2), "bilinear"),
        ("bilinear_1x4", (1, 2, 3, 1), (1, 4), "bilinear"),
        ("bilinear_size1_input", (1, 1, 3, 2), (2, 3), "bilinear"),
    ]:
        c = Case("upsample2d_" + name, "upsample2d", {"size": list(size), "interpolation": mode})
        cs.append(c.normal("x", xs))

    for name, xs, size in [
        ("down_5x7_to_3x4", (2, 5, 7, 2), (3, 4)),
        ("up_3x4_to_5x9", (1, 3, 4, 2), (5, 9)),
        ("mixed_4x4_to_6x3", (1, 4, 4, 1), (6, 3)),
    ]:
        c = Case("resize_bilinear_" + name, "resize_bilinear", {"size": list(size)})
        cs.append(c.normal("x", xs))

    for name, xs, k, m, o, st, pad, dil in [
        ("valid_k3_m1", (2, 5, 5, 3), (3, 3), 1, 4, (1, 1), "valid", (1, 1)),
        ("same_k3_m2_s2", (2, 5, 4, 2), (3, 3), 2, 3, (2, 2), "same", (1, 1)),
        ("same_k2x3_dilation2", (1, 6, 6, 2), (2, 3), 1, 2, (1, 1), "same", (2, 2)),
    ]:
        p = {"strides": list(st), "padding": pad, "dilation": list(dil)}
        c = Case("separable_conv2d_" + name, "separable_conv2d", p)
        cs.append(c.normal("x", xs)
                   .normal("dw", k + (xs[-1], m), scale=0.5)
                   .normal("pw", (1, 1, xs[-1] * m, o), scale=0.5)
                   .normal("b", (o,), scale=0.5))

    for op in ("max_pool1d", "avg_pool1d"):
        for name, xs, k, st, pad in [
            ("valid_k2", (2, 7, 3), 2, 2, "valid"),
            ("valid_k3_s1", (2, 6, 2), 3, 1, "valid"),
            ("same_k3_s2", (2, 7, 2), 3, 2, "same"),
            ("same_k2_s1", (1, 5, 2), 2, 1, "same"),
        ]:
            p = {"pool_size": [k], "strides": [st], "padding": pad}
            c = Case(op + "_" + name, op, p)
            cs.append(c.add("x", spread(c.rng, xs, min_abs=0.0)))
    for op in ("global_avg_pool1d", "global_max_pool1d"):
        c = Case(op, op, {})
        cs.append(c.add("x", spread(c.rng, (3, 5, 4), min_abs=0.0)))
    return cs


def main():
    torch.set_num_threads(1)
    cases = [c.build() for c in all_cases()]
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    doc = {"generator": "gen_layers.py", "torch_version": torch.__version__, "cases": cases}
    with open(OUT_PATH, "w") as f:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print("wrote %s: %d cases, %d bytes" % (OUT_PATH, len(cases), os.path.getsize(OUT_PATH)))


if __name__ == "__main__":
    main()
