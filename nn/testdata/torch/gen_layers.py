#!/usr/bin/python3
"""Generate layers.json: golden values for nn's Conv1DTranspose, Conv2DTranspose,
SeparableConv2D and UpSampling2D layers, and for one SGD training step through
them, computed with PyTorch's own modules (nn.ConvTranspose2d, nn.Conv2d,
nn.Upsample) in float64 from float32 inputs and weights.

Tensors are channels-last with Keras's weight layouts:
  Conv2DTranspose kernel (kh, kw, filters, channels)   torch weight (channels, filters, kh, kw)
  Conv1DTranspose kernel (k, filters, channels)         torch weight (channels, filters, k)
  SeparableConv2D depthwise_kernel (kh, kw, channels, multiplier), pointwise_kernel
      (1, 1, channels*multiplier, filters)
Where Keras's "same" padding of a transposed convolution is symmetric, the torch
module gets that padding; where it is not (kernel 3, stride 2: nothing before, one
after), the module runs with padding 0 and the output's last row and column, which
Keras drops, are cut off.

Regenerate (from the repository root):
    /usr/bin/python3 nn/testdata/torch/gen_layers.py
"""

import json
import os
import zlib

import numpy as np
import torch
import torch.nn as tnn

F64 = torch.float64
OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers.json")


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def f32(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def enc(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


def nchw(x):
    return torch.tensor(x, dtype=F64).permute(0, 3, 1, 2)


def nhwc(t):
    return t.permute(0, 2, 3, 1).detach().numpy()


def convT_module(k, cin, filters, stride, padding, output_padding=0, bias=True):
    m = tnn.ConvTranspose2d(cin, filters, k, stride=stride, padding=padding,
                            output_padding=output_padding, bias=bias).double()
    return m


def set_convT(m, kernel, bias):
    # (kh, kw, filters, channels) -> (channels, filters, kh, kw)
    m.weight.data = torch.tensor(kernel, dtype=F64).permute(3, 2, 0, 1).contiguous()
    if bias is not None:
        m.bias.data = torch.tensor(bias, dtype=F64)


def separable_modules(k, cin, mult, filters, padding, bias=True):
    dw = tnn.Conv2d(cin, cin * mult, k, padding=padding, groups=cin, bias=False).double()
    pw = tnn.Conv2d(cin * mult, filters, 1, bias=bias).double()
    return dw, pw


def set_separable(dw, pw, dkernel, pkernel, bias):
    kh, kw, c, m = dkernel.shape
    dw.weight.data = torch.tensor(dkernel, dtype=F64).permute(2, 3, 0, 1).reshape(c * m, 1, kh, kw).contiguous()
    pw.weight.data = torch.tensor(pkernel, dtype=F64).permute(3, 2, 0, 1).contiguous()
    if bias is not None:
        pw.bias.data = torch.tensor(bias, dtype=F64)


def forward_cases():
    cases = []

    name = "conv2d_transpose_same_k4_s2_relu"
    r = rng_for(name)
    x, k, b = f32(r, (2, 3, 3, 3)), f32(r, (4, 4, 4, 3), 0.5), f32(r, (4,), 0.5)
    m = convT_module(4, 3, 4, 2, 1)            # Keras: total padding 2, one before
    set_convT(m, k, b)
    y = torch.relu(m(nchw(x)))
    cases.append({"name": name, "x": enc(x), "weights": {"conv2d_transpose/kernel": enc(k), "conv2d_transpose/bias": enc(b)},
                  "output": enc(nhwc(y))})

    name = "conv2d_transpose_valid_k3_s2_op1"
    r = rng_for(name)
    x, k, b = f32(r, (2, 3, 4, 2)), f32(r, (3, 3, 2, 2), 0.5), f32(r, (2,), 0.5)
    m = convT_module(3, 2, 2, 2, 0, output_padding=1)
    set_convT(m, k, b)
    cases.append({"name": name, "x": enc(x), "weights": {"conv2d_transpose/kernel": enc(k), "conv2d_transpose/bias": enc(b)},
                  "output": enc(nhwc(m(nchw(x))))})

    name = "conv2d_transpose_same_k3_s1_nobias"
    r = rng_for(name)
    x, k = f32(r, (1, 4, 3, 2)), f32(r, (3, 3, 3, 2), 0.5)
    m = convT_module(3, 2, 3, 1, 1, bias=False)
    set_convT(m, k, None)
    cases.append({"name": name, "x": enc(x), "weights": {"conv2d_transpose/kernel": enc(k)}, "output": enc(nhwc(m(nchw(x))))})

    name = "conv2d_transpose_same_k3_s2"
    r = rng_for(name)
    x, k, b = f32(r, (1, 3, 2, 2)), f32(r, (3, 3, 2, 2), 0.5), f32(r, (2,), 0.5)
    m = convT_module(3, 2, 2, 2, 0)            # Keras: nothing before, one after
    set_convT(m, k, b)
    y = m(nchw(x))[:, :, :6, :4]
    cases.append({"name": name, "x": enc(x), "weights": {"conv2d_transpose/kernel": enc(k), "conv2d_transpose/bias": enc(b)},
                  "output": enc(nhwc(y))})

    name = "conv1d_transpose_valid_k4_s2_op1_tanh"
    r = rng_for(name)
    x, k, b = f32(r, (2, 5, 3)), f32(r, (4, 2, 3), 0.5), f32(r, (2,), 0.5)
    m = tnn.ConvTranspose1d(3, 2, 4, stride=2, padding=0, output_padding=1).double()
    m.weight.data = torch.tensor(k, dtype=F64).permute(2, 1, 0).contiguous()   # (k, F, C) -> (C, F, k)
    m.bias.data = torch.tensor(b, dtype=F64)
    y = torch.tanh(m(torch.tensor(x, dtype=F64).permute(0, 2, 1))).permute(0, 2, 1)
    cases.append({"name": name, "x": enc(x), "weights": {"conv1d_transpose/kernel": enc(k), "conv1d_transpose/bias": enc(b)},
                  "output": enc(y.detach().numpy())})

    name = "separable_conv2d_same_k3_m2"
    r = rng_for(name)
    x, dk, pk, b = f32(r, (2, 4, 5, 3)), f32(r, (3, 3, 3, 2), 0.5), f32(r, (1, 1, 6, 4), 0.5), f32(r, (4,), 0.5)
    dw, pw = separable_modules(3, 3, 2, 4, 1)
    set_separable(dw, pw, dk, pk, b)
    cases.append({"name": name, "x": enc(x), "weights": {"separable_conv2d/depthwise_kernel": enc(dk),
                  "separable_conv2d/pointwise_kernel": enc(pk), "separable_conv2d/bias": enc(b)},
                  "output": enc(nhwc(pw(dw(nchw(x)))))})

    name = "up_sampling2d_bilinear_2x3"
    r = rng_for(name)
    x = f32(r, (2, 3, 2, 2))
    up = tnn.Upsample(scale_factor=(2.0, 3.0), mode="bilinear", align_corners=False)
    cases.append({"name": name, "x": enc(x), "weights": {}, "output": enc(nhwc(up(nchw(x))))})
    return cases


def train_case():
    """One SGD step (learning rate 0.1, mean squared error over every element)
    of Input(4, 4, 2) -> Conv2DTranspose(3, 3, strides 2, same, tanh)
    -> SeparableConv2D(2, 3, same) -> UpSampling2D(bilinear) -> ZeroPadding2D(1)
    -> Cropping2D(2) -> Rescaling(0.5, 0.25)."""
    name = "train_step"
    r = rng_for(name)
    x = f32(r, (3, 4, 4, 2))
    target = f32(r, (3, 14, 14, 2))
    k, b = f32(r, (3, 3, 3, 2), 0.4), f32(r, (3,), 0.2)
    dk, pk, pb = f32(r, (3, 3, 3, 1), 0.4), f32(r, (1, 1, 3, 2), 0.4), f32(r, (2,), 0.2)
    ct = convT_module(3, 2, 3, 2, 0)
    set_convT(ct, k, b)
    dw, pw = separable_modules(3, 3, 1, 2, 1)
    set_separable(dw, pw, dk, pk, pb)
    up = tnn.Upsample(scale_factor=2.0, mode="bilinear", align_corners=False)
    h = torch.tanh(ct(nchw(x))[:, :, :8, :8])   # Keras "same": 8 = 4 * 2
    h = up(pw(dw(h)))                            # 16 x 16
    h = torch.nn.functional.pad(h, (1, 1, 1, 1))  # 18 x 18
    h = h[:, :, 2:-2, 2:-2] * 0.5 + 0.25          # 14 x 14
    y = nhwc_t = h.permute(0, 2, 3, 1)
    loss = ((y - torch.tensor(target, dtype=F64)) ** 2).mean()
    params = [ct.weight, ct.bias, dw.weight, pw.weight, pw.bias]
    grads = torch.autograd.grad(loss, params)
    lr = 0.1
    new = [p.detach() - lr * g for p, g in zip(params, grads)]
    kh = new[2].shape[-1]
    after = {
        "conv2d_transpose/kernel": new[0].permute(2, 3, 1, 0).numpy(),
        "conv2d_transpose/bias": new[1].numpy(),
        "separable_conv2d/depthwise_kernel": new[2].reshape(3, 1, kh, kh).permute(2, 3, 0, 1).numpy(),
        "separable_conv2d/pointwise_kernel": new[3].permute(2, 3, 1, 0).numpy(),
        "separable_conv2d/bias": new[4].numpy(),
    }
    return {"name": name, "x": enc(x), "target": enc(target), "loss": float(loss),
            "weights": {"conv2d_transpose/kernel": enc(k), "conv2d_transpose/bias": enc(b),
                        "separable_conv2d/depthwise_kernel": enc(dk), "separable_conv2d/pointwise_kernel": enc(pk),
                        "separable_conv2d/bias": enc(pb)},
            "after": {n: enc(v) for n, v in after.items()}, "output": enc(nhwc_t.detach().numpy())}


def main():
    torch.set_num_threads(1)
    doc = {"generator": "gen_layers.py", "torch_version": torch.__version__,
           "cases": forward_cases(), "train": train_case()}
    with open(OUT_PATH, "w") as f:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print("wrote %s: %d bytes" % (OUT_PATH, os.path.getsize(OUT_PATH)))


if __name__ == "__main__":
    main()
