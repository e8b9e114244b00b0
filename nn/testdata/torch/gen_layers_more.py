#!/usr/bin/python3
"""Generate layers_more.json: golden forward outputs and gradients of nn's
layers, computed with PyTorch's own ops in float64 from float32 inputs and
weights.

Weightless layers: ZeroPadding1D/2D and Cropping1D/2D (F.pad, slicing),
UpSampling1D and UpSampling2D nearest and bilinear (F.interpolate),
Rescaling, ReLU and Softmax, MaxPooling1D/2D and AveragePooling1D/2D with
"valid" and "same" padding (F.max_pool1d/2d, F.avg_pool1d/2d),
GlobalAveragePooling1D/2D and GlobalMaxPooling1D/2D (mean, amax), and the
augmentation layers: RandomFlip, RandomContrast, RandomTranslation and
RandomCrop in inference (the identity, and RandomCrop's centred crop box
resized bilinearly), and RandomFlip, RandomContrast, RandomTranslation
(F.grid_sample) and RandomCrop in training; Dropout in inference and
training. Layers with weights: Conv1D and Conv2D (strides, dilation, groups,
"same" padding, F.conv1d/2d), DepthwiseConv2D (F.conv2d with one group per
channel), Dense over a rank-3 input, LayerNormalization (F.layer_norm) and
BatchNormalization in inference (its formula, checked against
F.batch_norm) and in training (F.batch_norm over the batch),
Conv1DTranspose and Conv2DTranspose (F.conv_transpose1d/2d, see
transpose_cases) and SeparableConv2D.

Every tensor is channels-last, as the Keras layers take it: (batch, steps,
channels) or (batch, height, width, channels); the ops run on its transpose
to channels-first. Each case holds:
  x          the input (float32 values)
  weighting  a fixed random tensor r of the output's shape (float32 values)
  output     the layer's output y
  grad_x     the gradient of sum(y * r) with respect to x (torch autograd),
             absent for Embedding, whose input holds indices
  weights, grad_weights
             for layers with weights: each weight by its Keras short name
             (kernel, bias, gamma, beta, moving_mean, moving_variance,
             depthwise_kernel, pointwise_kernel) in
             Keras's layout, and the gradient of sum(y * r) with respect
             to it
  updates    for BatchNormalization in training: the moving statistics
             after the step
  options    the layer's Keras options (pooling strides only where given,
             else Keras's default, the pool size), from which the Go test
             builds the layer
  training   whether the layer runs as in a training step; training cases
             also give seed, stream and draws (see below)

"same" padding is Keras's: out = ceil(n / stride), total padding
max((out - 1) * stride + size - n, 0), the smaller half before, with size
(k - 1) * dilation + 1 for a dilated convolution. Kernels in Keras's layouts:
Conv1D (k, channels/groups, filters), Conv2D (kh, kw, channels/groups,
filters), DepthwiseConv2D (kh, kw, channels, multiplier), Dense (in, units).
Max pooling pads with -inf; average pooling with "same" padding divides each
window's sum by the number of its elements inside the input, which is
computed here as avg_pool(zero-padded x) / avg_pool(zero-padded ones) (where
the padding is symmetric, F.avg_pool's count_include_pad=False gives the
same and the script asserts it).

Random draws: nn's augmentation layers draw uniform numbers on the device with
Philox4x32-10 (Salmon et al., SC'11). Element p of a layer's draw under seed s
and stream k is word p % 4 of Philox4x32-10 of the counter
(q & 0xffffffff, q >> 32, k & 0xffffffff, k >> 32), q = p // 4, under the key
(s & 0xffffffff, s >> 32), shifted right by 8 and scaled by 2^-24. philox()
below is this script's own implementation; each training case records the
draws it used, which the Go test compares with tile.UniformAt.
  RandomFlip:     draw (batch, 2); sample n flips left-right if draw[n, 0] < 0.5
                  and upside down if draw[n, 1] < 0.5 (torch.flip).
  RandomContrast: draw (batch, 1, 1, 1); factor 1 - f + 2 f draw[n];
                  y = clip((x - mean) * factor + mean, lo, hi), the mean per
                  sample and channel over height and width.
  RandomTranslation: draw (batch, 2); see augmentation_cases.
  Dropout:        draw of the input's shape; an element is kept, times
                  1 / (1 - rate), where its draw is at least the rate.
  RandomCrop:     draw (2); the window's start along height (width) is
                  min(floor(draw[0] * (H - h + 1)), H - h), computed in float32
                  as the layer does, for the whole batch.

RandomCrop in inference takes Keras's centred crop box (height
min(H, floor(W * h / w)), width min(W, floor(H * w / h)), each at least 1,
starting at half the rest rounded down) and resizes it to (h, w) with
F.interpolate(mode="bilinear", align_corners=False), the half-pixel
interpolation tf.image.resize uses.

Regenerate (from the repository root):
    /usr/bin/python3 nn/testdata/torch/gen_layers_more.py
"""

import json
import math
import os
import zlib

import numpy as np
import torch
import torch.nn.functional as F

F64 = torch.float64
OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers_more.json")
M32 = 0xFFFFFFFF


def philox(ctr, key):
    """Philox4x32-10 of a counter of four 32-bit words under a key of two."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c3 ^ k1) & M32, p0 & M32
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return c0, c1, c2, c3


def uniform(seed, stream, count):
    out = []
    for p in range(count):
        q = p // 4
        w = philox((q & M32, q >> 32, stream & M32, stream >> 32), (seed & M32, seed >> 32))[p % 4]
        out.append((w >> 8) * (1.0 / (1 << 24)))
    return out


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def f32(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def enc(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


def cf(x):
    """Channels-last to channels-first."""
    return x.permute(0, x.dim() - 1, *range(1, x.dim() - 1))


def cl(x):
    """Channels-first to channels-last."""
    return x.permute(0, *range(2, x.dim()), 1)


def same_pads(n, size, stride):
    out = -(-n // stride)
    total = max((out - 1) * stride + size - n, 0)
    return total // 2, total - total // 2


CASES = []


def case(name, layer, options, shape, fn, training=False, seed=None, stream=None, draws=None, scale=1.0, weights=None,
         indices=None):
    """Adds a case: fn(x) or, for a layer with weights (a dict of Keras short
    names to (shape, scale) or (shape, scale, "positive"), drawn in order
    after x; a positive weight is |normal| * scale + 0.5), fn(x, {name:
    tensor}). Gradients are taken with respect to x and every weight (zero
    for a weight the output does not depend on). With indices (an upper
    bound), x holds integers drawn below it instead, and has no gradient."""
    r = rng_for(name)
    x = r.integers(0, indices, shape).astype(np.float32) if indices else f32(r, shape, scale)
    xt = torch.tensor(x, dtype=F64, requires_grad=not indices)
    wv = {}
    for k, spec in (weights or {}).items():
        v = f32(r, spec[0], spec[1])
        wv[k] = (np.abs(v) + np.float32(0.5)).astype(np.float32) if spec[2:] == ("positive",) else v
    wt = {k: torch.tensor(v, dtype=F64, requires_grad=True) for k, v in wv.items()}
    y = fn(xt, wt) if weights else fn(xt)
    w = f32(r, tuple(y.shape))
    ins = ([] if indices else [xt]) + list(wt.values())
    grads = torch.autograd.grad((y * torch.tensor(w, dtype=F64)).sum(), ins, allow_unused=True)
    grads = [torch.zeros_like(t) if g is None else g for t, g in zip(ins, grads)]
    if indices:
        grads = [None] + grads
    c = {"name": name, "layer": layer, "options": options, "training": training,
         "x": enc(x), "weighting": enc(w), "output": enc(y.detach().numpy())}
    if not indices:
        c["grad_x"] = enc(grads[0].numpy())
    if weights:
        c["weights"] = {k: enc(v) for k, v in wv.items()}
        c["grad_weights"] = {k: enc(g.numpy()) for k, g in zip(wt, grads[1:])}
    if training:
        c.update({"seed": seed, "stream": stream, "draws": draws})
    CASES.append(c)


def padding_cases():
    for pad in ([1, 1], [2, 2], [0, 3]):
        case("zero_padding1d_%d_%d" % tuple(pad), "ZeroPadding1D", {"padding": pad}, (2, 5, 3),
             lambda x, p=pad: cl(F.pad(cf(x), (p[0], p[1]))))
    for crop in ([1, 1], [2, 1], [0, 2]):
        case("cropping1d_%d_%d" % tuple(crop), "Cropping1D", {"cropping": crop}, (2, 6, 3),
             lambda x, c=crop: x[:, c[0]:x.shape[1] - c[1], :])
    for pad in ([[2, 2], [2, 2]], [[1, 1], [2, 2]], [[0, 1], [2, 3]]):
        (t, b), (l, r) = pad
        case("zero_padding2d_%d_%d_%d_%d" % (t, b, l, r), "ZeroPadding2D", {"padding": pad}, (2, 3, 4, 2),
             lambda x, t=t, b=b, l=l, r=r: cl(F.pad(cf(x), (l, r, t, b))))
    for crop in ([[1, 1], [1, 1]], [[1, 1], [2, 2]], [[0, 1], [2, 1]]):
        (t, b), (l, r) = crop
        case("cropping2d_%d_%d_%d_%d" % (t, b, l, r), "Cropping2D", {"cropping": crop}, (2, 5, 6, 2),
             lambda x, t=t, b=b, l=l, r=r: x[:, t:x.shape[1] - b, l:x.shape[2] - r, :])


def upsampling_cases():
    for size in (2, 3, 1):
        case("up_sampling1d_%d" % size, "UpSampling1D", {"size": size}, (2, 4, 3),
             lambda x, s=size: cl(F.interpolate(cf(x), scale_factor=float(s), mode="nearest")))
    for size in ((2, 2), (3, 2), (1, 3)):
        case("up_sampling2d_nearest_%dx%d" % size, "UpSampling2D", {"size": list(size), "interpolation": "nearest"},
             (2, 3, 2, 2), lambda x, s=size: cl(F.interpolate(cf(x), scale_factor=(float(s[0]), float(s[1])), mode="nearest")))
    for size in ((2, 2), (3, 1), (4, 3)):
        case("up_sampling2d_bilinear_%dx%d" % size, "UpSampling2D", {"size": list(size), "interpolation": "bilinear"},
             (2, 3, 4, 2), lambda x, s=size: cl(F.interpolate(cf(x), scale_factor=(float(s[0]), float(s[1])),
                                                               mode="bilinear", align_corners=False)))


def activation_cases():
    case("relu", "ReLU", {}, (2, 3, 4), F.relu)
    case("relu_max1.5_slope0.2", "ReLU", {"max_value": 1.5, "negative_slope": 0.2}, (2, 3, 4),
         lambda x: torch.clamp(F.leaky_relu(x, 0.2), max=1.5))
    case("softmax", "Softmax", {"axis": -1}, (2, 3, 5), lambda x: F.softmax(x, -1))
    case("softmax_axis1", "Softmax", {"axis": 1}, (2, 3, 4), lambda x: F.softmax(x, 1), scale=2.0)


def rescaling_cases():
    for name, scale, offset in (("half_quarter", 0.5, 0.25), ("pixels", 1.0 / 255, 0.0), ("negate", -2.0, 1.0)):
        case("rescaling_" + name, "Rescaling", {"scale": scale, "offset": offset}, (2, 3, 2, 2),
             lambda x, s=scale, o=offset: x * s + o)


def pool1d(x, size, stride, padding, avg):
    """Keras 1-D pooling of x (batch, steps, channels)."""
    t = cf(x)
    before, after = same_pads(t.shape[2], size, stride) if padding == "same" else (0, 0)
    if not avg:
        return cl(F.max_pool1d(F.pad(t, (before, after), value=-math.inf), size, stride))
    sums = F.avg_pool1d(F.pad(t, (before, after)), size, stride)
    counts = F.avg_pool1d(F.pad(torch.ones_like(t), (before, after)), size, stride)
    y = sums / counts
    if before == after:
        alt = F.avg_pool1d(t, size, stride, padding=before, count_include_pad=False)
        assert torch.allclose(y, alt, rtol=0, atol=1e-12)
    return cl(y)


def pool2d(x, size, stride, padding, avg):
    """Keras 2-D pooling of x (batch, height, width, channels)."""
    t = cf(x)
    if padding == "same":
        (tp, bp), (lp, rp) = same_pads(t.shape[2], size[0], stride[0]), same_pads(t.shape[3], size[1], stride[1])
    else:
        tp = bp = lp = rp = 0
    pads = (lp, rp, tp, bp)
    if not avg:
        return cl(F.max_pool2d(F.pad(t, pads, value=-math.inf), size, stride))
    sums = F.avg_pool2d(F.pad(t, pads), size, stride)
    counts = F.avg_pool2d(F.pad(torch.ones_like(t), pads), size, stride)
    y = sums / counts
    if tp == bp and lp == rp:
        alt = F.avg_pool2d(t, size, stride, padding=(tp, lp), count_include_pad=False)
        assert torch.allclose(y, alt, rtol=0, atol=1e-12)
    return cl(y)


def pooling_cases():
    # (size, strides or None for Keras's default, padding, steps)
    for size, stride, padding, steps in ((2, None, "valid", 7), (3, 1, "valid", 6), (3, 2, "same", 7),
                                         (2, 2, "same", 7), (4, 3, "same", 8), (3, 1, "same", 5)):
        s = stride or size
        for cls, avg in (("MaxPooling1D", False), ("AveragePooling1D", True)):
            opts = {"pool_size": size, "padding": padding}
            if stride is not None:
                opts["strides"] = s
            case("%s_%d_s%d_%s_n%d" % (cls.lower(), size, s, padding, steps), cls, opts, (2, steps, 3),
                 lambda x, k=size, s=s, p=padding, a=avg: pool1d(x, k, s, p, a))
    for size, stride, padding, hw in (((2, 2), None, "valid", (4, 5)), ((3, 3), (2, 2), "same", (5, 6)),
                                      ((2, 3), (1, 2), "same", (4, 5)), ((3, 2), (2, 1), "valid", (6, 4))):
        s = stride or size
        for cls, avg in (("MaxPooling2D", False), ("AveragePooling2D", True)):
            opts = {"pool_size": list(size), "padding": padding}
            if stride is not None:
                opts["strides"] = list(s)
            case("%s_%dx%d_s%dx%d_%s" % ((cls.lower(),) + size + s + (padding,)), cls, opts, (2,) + hw + (2,),
                 lambda x, k=size, s=s, p=padding, a=avg: pool2d(x, k, s, p, a))
    case("global_average_pooling1d", "GlobalAveragePooling1D", {}, (3, 5, 4), lambda x: x.mean(1))
    case("global_max_pooling1d", "GlobalMaxPooling1D", {}, (3, 5, 4), lambda x: x.amax(1))
    case("global_average_pooling2d", "GlobalAveragePooling2D", {}, (2, 3, 4, 3), lambda x: x.mean((1, 2)))
    case("global_max_pooling2d", "GlobalMaxPooling2D", {}, (2, 3, 4, 3), lambda x: x.amax((1, 2)))


def centre_crop(x, th, tw):
    """RandomCrop in inference: Keras's centred crop box, resized bilinearly."""
    h, w = x.shape[1], x.shape[2]
    ch = max(min(h, int(w * th / tw)), 1)
    cw = max(min(w, int(h * tw / th)), 1)
    h0, w0 = (h - ch) // 2, (w - cw) // 2
    y = x[:, h0:h0 + ch, w0:w0 + cw, :]
    if (ch, cw) == (th, tw):
        return y
    return cl(F.interpolate(cf(y), size=(th, tw), mode="bilinear", align_corners=False))


def augmentation_cases():
    case("random_flip_inference", "RandomFlip", {"mode": "horizontal_and_vertical"}, (2, 3, 4, 2), lambda x: x * 1)
    case("random_contrast_inference", "RandomContrast", {"factor": 0.5}, (2, 3, 4, 2), lambda x: x * 1)
    case("random_translation_inference", "RandomTranslation", {"height_factor": 0.2, "width_factor": 0.3},
         (2, 3, 4, 2), lambda x: x * 1)
    for (h, w), (th, tw) in (((5, 6), (3, 4)), ((6, 4), (4, 4)), ((3, 4), (6, 8)), ((7, 5), (4, 4)), ((4, 4), (4, 4))):
        case("random_crop_inference_%dx%d_to_%dx%d" % (h, w, th, tw), "RandomCrop", {"height": th, "width": tw},
             (2, h, w, 2), lambda x, th=th, tw=tw: centre_crop(x, th, tw))

    n = 6
    for mode, seed, stream in (("horizontal", 5, 3), ("vertical", 11, 2), ("horizontal_and_vertical", 21, 7)):
        u = uniform(seed, stream, 2 * n)

        def flip(x, mode=mode, u=u):
            out = []
            for s in range(x.shape[0]):
                y = x[s:s + 1]
                if mode != "vertical" and u[2 * s] < 0.5:
                    y = torch.flip(y, [2])
                if mode != "horizontal" and u[2 * s + 1] < 0.5:
                    y = torch.flip(y, [1])
                out.append(y)
            return torch.cat(out)
        case("random_flip_training_" + mode, "RandomFlip", {"mode": mode}, (n, 3, 4, 2), flip,
             training=True, seed=seed, stream=stream, draws=u)

    for factor, lo, hi, seed, stream in ((0.4, -1000.0, 1000.0, 5, 2), (0.8, -1.0, 1.5, 9, 4)):
        u = uniform(seed, stream, n)

        def contrast(x, factor=factor, lo=lo, hi=hi, u=u):
            f = torch.tensor([1 - factor + 2 * factor * v for v in u], dtype=F64).reshape(-1, 1, 1, 1)
            mean = x.mean((1, 2), keepdim=True)
            return torch.clamp((x - mean) * f + mean, lo, hi)
        case("random_contrast_training_%g_%g_%g" % (factor, lo, hi), "RandomContrast",
             {"factor": factor, "value_range": [lo, hi]}, (n, 3, 4, 2), contrast,
             training=True, seed=seed, stream=stream, draws=u)

    # Dropout in training: draw of x's shape; an element is kept, scaled by
    # 1 / (1 - rate), where its draw is at least the rate (in float32).
    case("dropout_inference", "Dropout", {"rate": 0.5}, (2, 3, 4), lambda x: x * 1)
    for rate, shape, seed, stream in ((0.3, (2, 3, 4), 4, 2), (0.5, (2, 4, 3, 2), 13, 6)):
        size = int(np.prod(shape))
        u = uniform(seed, stream, size)

        def dropout(x, rate=rate, u=u, shape=shape):
            keep = torch.tensor(np.array(u, dtype=np.float32) >= np.float32(rate)).reshape(shape)
            return torch.where(keep, x / (1 - rate), torch.zeros_like(x))
        case("dropout_training_%g" % rate, "Dropout", {"rate": rate}, shape, dropout,
             training=True, seed=seed, stream=stream, draws=u)

    # RandomTranslation in training: sample n moves down by
    # dy = (-hf + 2 hf draw[n, 0]) * H and right by dx = (-wf + 2 wf draw[n, 1]) * W,
    # read bilinearly by F.grid_sample (align_corners=False: pixel i sits at
    # (2i + 1) / size - 1). Its "reflection" padding reflects about the
    # image's edge (d c b a | a b c d), Keras's "reflect"; "border" repeats
    # the edge, Keras's "nearest"; "zeros" plus fill * (1 - the same sampling
    # of ones) is Keras's "constant", the fill weighted as the outside pixels.
    for mode, pad_mode, fill, hf, wf, seed, stream in (("reflect", "reflection", 0.0, 0.4, 0.3, 21, 4),
                                                       ("nearest", "border", 0.0, 0.5, 0.5, 3, 1),
                                                       ("constant", "zeros", 0.75, 0.3, 0.6, 8, 5)):
        u = uniform(seed, stream, 2 * n)

        def translate(x, hf=hf, wf=wf, u=u, pad_mode=pad_mode, fill=fill):
            b, h, w = x.shape[0], x.shape[1], x.shape[2]
            dy = torch.tensor([(-hf + 2 * hf * u[2 * s]) * h for s in range(b)], dtype=F64).reshape(b, 1, 1)
            dx = torch.tensor([(-wf + 2 * wf * u[2 * s + 1]) * w for s in range(b)], dtype=F64).reshape(b, 1, 1)
            ys = torch.arange(h, dtype=F64).reshape(1, h, 1)
            xs = torch.arange(w, dtype=F64).reshape(1, 1, w)
            gy = (2 * (ys - dy) + 1) / h - 1
            gx = (2 * (xs - dx) + 1) / w - 1
            grid = torch.stack([gx.expand(b, h, w), gy.expand(b, h, w)], dim=-1)
            y = F.grid_sample(cf(x), grid, mode="bilinear", padding_mode=pad_mode, align_corners=False)
            if fill:
                ones = torch.ones_like(cf(x))
                y = y + fill * (1 - F.grid_sample(ones, grid, mode="bilinear", padding_mode="zeros", align_corners=False))
            return cl(y)
        case("random_translation_training_" + mode, "RandomTranslation",
             {"height_factor": hf, "width_factor": wf, "fill_mode": mode, "fill_value": fill}, (n, 4, 5, 2), translate,
             training=True, seed=seed, stream=stream, draws=u)

    for (h, w), (th, tw), seed, stream in (((6, 7), (3, 4), 3, 4), ((5, 5), (5, 2), 8, 1), ((3, 4), (4, 4), 2, 6)):
        u = uniform(seed, stream, 2)

        def crop(x, th=th, tw=tw, u=u):
            hh, ww = x.shape[1], x.shape[2]
            if hh < th or ww < tw:
                return centre_crop(x, th, tw)

            def start(v, rest):
                return min(int(math.floor(np.float32(v) * np.float32(rest + 1))), rest)
            a, b = start(u[0], hh - th), start(u[1], ww - tw)
            return x[:, a:a + th, b:b + tw, :]
        case("random_crop_training_%dx%d_to_%dx%d" % (h, w, th, tw), "RandomCrop", {"height": th, "width": tw},
             (2, h, w, 2), crop, training=True, seed=seed, stream=stream, draws=u)


def same_conv_pads(n, k, stride, dilation):
    return same_pads(n, (k - 1) * dilation + 1, stride)


def activation(name, y):
    return {"linear": lambda v: v, "tanh": torch.tanh, "sigmoid": torch.sigmoid}[name](y)


def conv1d(x, w, k, stride, padding, dilation, groups, act):
    """Keras Conv1D: kernel (k, channels/groups, filters), torch (filters, channels/groups, k)."""
    t = cf(x)
    if padding == "same":
        t = F.pad(t, same_conv_pads(t.shape[2], k, stride, dilation))
    y = F.conv1d(t, w["kernel"].permute(2, 1, 0), w.get("bias"), stride=stride, dilation=dilation, groups=groups)
    return activation(act, cl(y))


def conv2d(x, w, k, stride, padding, dilation, groups, act, depthwise=False):
    """Keras Conv2D, kernel (kh, kw, channels/groups, filters), torch (filters,
    channels/groups, kh, kw); DepthwiseConv2D, kernel (kh, kw, channels,
    multiplier), torch (channels*multiplier, 1, kh, kw) with groups = channels
    (output channel c*multiplier + j, as Keras orders them)."""
    t = cf(x)
    if padding == "same":
        (tp, bp), (lp, rp) = same_conv_pads(t.shape[2], k[0], stride[0], dilation[0]), same_conv_pads(t.shape[3], k[1], stride[1], dilation[1])
        t = F.pad(t, (lp, rp, tp, bp))
    if depthwise:
        kh, kw, c, m = w["kernel"].shape
        kern, groups = w["kernel"].permute(2, 3, 0, 1).reshape(c * m, 1, kh, kw), c
    else:
        kern = w["kernel"].permute(3, 2, 0, 1)
    y = F.conv2d(t, kern, w.get("bias"), stride=tuple(stride), dilation=tuple(dilation), groups=groups)
    return activation(act, cl(y))


def weighted_cases():
    # Conv1D: (name, channels, filters, k, strides, padding, dilation, groups, use_bias, activation)
    for nm, ch, fl, k, st, pad, dil, gr, bias, act, steps in (
            ("k3_valid", 3, 4, 3, 1, "valid", 1, 1, True, "linear", 7),
            ("k3_s2_same_tanh", 3, 2, 3, 2, "same", 1, 1, True, "tanh", 8),
            ("k4_d2_same", 2, 3, 4, 1, "same", 2, 1, True, "linear", 9),
            ("k2_s3_same_nobias", 2, 3, 2, 3, "same", 1, 1, False, "linear", 7),
            ("k3_groups2_same", 4, 6, 3, 1, "same", 1, 2, True, "sigmoid", 6)):
        ws = {"kernel": ((k, ch // gr, fl), 0.5)}
        if bias:
            ws["bias"] = ((fl,), 0.5)
        opts = {"filters": fl, "kernel_size": k, "strides": st, "padding": pad, "dilation_rate": dil, "groups": gr,
                "use_bias": bias, "activation": act}
        case("conv1d_" + nm, "Conv1D", opts, (2, steps, ch),
             lambda x, w, k=k, st=st, pad=pad, dil=dil, gr=gr, act=act: conv1d(x, w, k, st, pad, dil, gr, act),
             weights=ws)
    # Conv2D: kernel (kh, kw)
    for nm, ch, fl, k, st, pad, dil, gr, bias, act, hw in (
            ("k3x2_s2_same", 2, 3, (3, 2), (2, 2), "same", (1, 1), 1, True, "linear", (5, 6)),
            ("k3_d2_valid_tanh", 2, 2, (3, 3), (1, 1), "valid", (2, 2), 1, True, "tanh", (6, 7)),
            ("k3_d2x1_same", 3, 2, (3, 3), (1, 1), "same", (2, 1), 1, True, "linear", (5, 5)),
            ("k3_groups3_same", 3, 6, (3, 3), (1, 1), "same", (1, 1), 3, True, "linear", (4, 5)),
            ("k2_s1x2_same_nobias", 2, 4, (2, 2), (1, 2), "same", (1, 1), 2, False, "linear", (4, 5))):
        ws = {"kernel": (k + (ch // gr, fl), 0.5)}
        if bias:
            ws["bias"] = ((fl,), 0.5)
        opts = {"filters": fl, "kernel_size": list(k), "strides": list(st), "padding": pad, "dilation_rate": list(dil),
                "groups": gr, "use_bias": bias, "activation": act}
        case("conv2d_" + nm, "Conv2D", opts, (2,) + hw + (ch,),
             lambda x, w, k=k, st=st, pad=pad, dil=dil, gr=gr, act=act: conv2d(x, w, k, st, pad, dil, gr, act),
             weights=ws)
    # DepthwiseConv2D
    for nm, ch, m, k, st, pad, dil, bias, act, hw in (
            ("k3_m2_same", 3, 2, (3, 3), (1, 1), "same", (1, 1), True, "linear", (4, 5)),
            ("k3_s2_valid", 2, 1, (3, 3), (2, 2), "valid", (1, 1), True, "tanh", (7, 6)),
            ("k2x3_d2_same_m3_nobias", 2, 3, (2, 3), (1, 1), "same", (2, 2), False, "linear", (5, 6)),
            ("k3_s2_same", 2, 2, (3, 3), (2, 2), "same", (1, 1), True, "linear", (6, 5))):
        ws = {"kernel": (k + (ch, m), 0.5)}
        if bias:
            ws["bias"] = ((ch * m,), 0.5)
        opts = {"kernel_size": list(k), "strides": list(st), "padding": pad, "dilation_rate": list(dil),
                "depth_multiplier": m, "use_bias": bias, "activation": act}
        case("depthwise_conv2d_" + nm, "DepthwiseConv2D", opts, (2,) + hw + (ch,),
             lambda x, w, k=k, st=st, pad=pad, dil=dil, act=act: conv2d(x, w, k, st, pad, dil, 1, act, depthwise=True),
             weights=ws)
    # Embedding: float32 indices (as nn's models feed them), no input gradient.
    for nm, shape, dim, out in (("5x3", (2, 4), 5, 3), ("rank3", (2, 3, 2), 7, 4)):
        case("embedding_" + nm, "Embedding", {"input_dim": dim, "output_dim": out}, shape,
             lambda x, w: F.embedding(x.long(), w["embeddings"]), weights={"embeddings": ((dim, out), 1.0)}, indices=dim)
    # Dense over the last axis of a rank-3 input.
    case("dense_rank3_tanh", "Dense", {"units": 3, "activation": "tanh"}, (2, 4, 5),
         lambda x, w: torch.tanh(x @ w["kernel"] + w["bias"]), weights={"kernel": ((5, 3), 0.5), "bias": ((3,), 0.5)})
    # LayerNormalization over the last axis (Keras's epsilon 1e-3 by default).
    for nm, shape, eps in (("default", (3, 4, 5), 1e-3), ("eps0.1", (2, 3, 2, 4), 0.1)):
        c = shape[-1]
        case("layer_normalization_" + nm, "LayerNormalization", {"axis": -1, "epsilon": eps}, shape,
             lambda x, w, c=c, eps=eps: F.layer_norm(x, (c,), w["gamma"], w["beta"], eps=eps),
             weights={"gamma": ((c,), 1.0), "beta": ((c,), 1.0)})
    # BatchNormalization over the last axis: inference with the moving
    # statistics, training with the batch's (biased variance).
    for training in (False, True):
        c = 3
        ws = {"gamma": ((c,), 1.0), "beta": ((c,), 1.0), "moving_mean": ((c,), 1.0), "moving_variance": ((c,), 1.0, "positive")}

        def bn(x, w, training=training):
            if training:   # the batch's statistics; the moving ones are not read
                return cl(F.batch_norm(cf(x), None, None, w["gamma"], w["beta"], training=True, eps=1e-3))
            # torch's batch_norm does not differentiate its running statistics:
            # the formula gives those gradients, and must equal it.
            y = (x - w["moving_mean"]) / torch.sqrt(w["moving_variance"] + 1e-3) * w["gamma"] + w["beta"]
            ref = cl(F.batch_norm(cf(x), w["moving_mean"].detach(), w["moving_variance"].detach(), w["gamma"], w["beta"],
                                  training=False, eps=1e-3))
            assert torch.allclose(y, ref, rtol=0, atol=1e-12)
            return y
        nm = "training" if training else "inference"
        case("batch_normalization_" + nm, "BatchNormalization", {"epsilon": 1e-3}, (4, 2, 3, c), bn,
             weights=ws, training=training, seed=0, stream=0, draws=[])
        if training:
            # Keras's moving statistics after the step, momentum 0.99: the
            # batch's mean and biased variance over every axis but the last.
            cs = CASES[-1]
            x = torch.tensor(cs["x"]["data"], dtype=F64).reshape(cs["x"]["shape"])
            mm = torch.tensor(cs["weights"]["moving_mean"]["data"], dtype=F64)
            mv = torch.tensor(cs["weights"]["moving_variance"]["data"], dtype=F64)
            bm, bv = x.mean((0, 1, 2)), x.var((0, 1, 2), unbiased=False)
            cs["updates"] = {"moving_mean": enc((mm * 0.99 + bm * 0.01).numpy()),
                             "moving_variance": enc((mv * 0.99 + bv * 0.01).numpy())}

def transpose_cases():
    """Conv1DTranspose and Conv2DTranspose, kernel (k..., filters, channels),
    torch weight (channels, filters, k...). Keras's "same" output is
    input * strides; where its padding is symmetric (kernel 4, strides 2:
    one each side; kernel 3, strides 1) the torch op gets it, and where it is
    not (kernel 3, strides 2: nothing before, one after) the op runs with
    padding 0 and the last row (and column) is cut off, as gen_layers.py
    does. SeparableConv2D: depthwise_kernel (kh, kw, channels, multiplier),
    pointwise_kernel (1, 1, channels*multiplier, filters)."""
    def t2(x, w, stride, pad, op, crop, act, dilation=1):
        y = F.conv_transpose2d(cf(x), w["kernel"].permute(3, 2, 0, 1), w.get("bias"), stride=stride, padding=pad,
                               output_padding=op, dilation=dilation)
        if crop:
            y = y[:, :, :crop[0], :crop[1]]
        return activation(act, cl(y))

    for nm, ch, fl, k, st, pad, op, crop, bias, act, dil, hw, opts in (
            ("same_k4_s2_tanh", 3, 4, 4, 2, 1, 0, None, True, "tanh", 1, (3, 3), {"padding": "same"}),
            ("valid_k3_s2_op1", 2, 2, 3, 2, 0, 1, None, True, "linear", 1, (3, 4), {"padding": "valid", "output_padding": 1}),
            ("same_k3_s1_nobias", 2, 3, 3, 1, 1, 0, None, False, "linear", 1, (4, 3), {"padding": "same"}),
            ("same_k3_s2", 2, 2, 3, 2, 0, 0, (6, 4), True, "linear", 1, (3, 2), {"padding": "same"}),
            ("valid_k3_d2", 2, 3, 3, 1, 0, 0, None, True, "linear", 2, (3, 4), {"padding": "valid"})):
        ws = {"kernel": ((k, k, fl, ch), 0.5)}
        if bias:
            ws["bias"] = ((fl,), 0.5)
        o = {"filters": fl, "kernel_size": k, "strides": st, "dilation_rate": dil, "use_bias": bias, "activation": act}
        o.update(opts)
        case("conv2d_transpose_" + nm, "Conv2DTranspose", o, (2,) + hw + (ch,),
             lambda x, w, st=st, pad=pad, op=op, crop=crop, act=act, dil=dil: t2(x, w, st, pad, op, crop, act, dil),
             weights=ws)

    def t1(x, w, stride, pad, op, crop, act):
        y = F.conv_transpose1d(cf(x), w["kernel"].permute(2, 1, 0), w.get("bias"), stride=stride, padding=pad,
                               output_padding=op)
        if crop:
            y = y[:, :, :crop]
        return activation(act, cl(y))

    for nm, ch, fl, k, st, pad, op, crop, act, n, opts in (
            ("valid_k4_s2_op1_tanh", 3, 2, 4, 2, 0, 1, None, "tanh", 5, {"padding": "valid", "output_padding": 1}),
            ("same_k3_s2", 2, 3, 3, 2, 0, 0, 10, "linear", 5, {"padding": "same"}),
            ("same_k4_s2", 2, 2, 4, 2, 1, 0, None, "linear", 4, {"padding": "same"})):
        o = {"filters": fl, "kernel_size": k, "strides": st, "use_bias": True, "activation": act}
        o.update(opts)
        case("conv1d_transpose_" + nm, "Conv1DTranspose", o, (2, n, ch),
             lambda x, w, st=st, pad=pad, op=op, crop=crop, act=act: t1(x, w, st, pad, op, crop, act),
             weights={"kernel": ((k, fl, ch), 0.5), "bias": ((fl,), 0.5)})

    def sep(x, w, k, stride, padding, act):
        t = cf(x)
        if padding == "same":
            (tp, bp), (lp, rp) = same_conv_pads(t.shape[2], k, stride, 1), same_conv_pads(t.shape[3], k, stride, 1)
            t = F.pad(t, (lp, rp, tp, bp))
        kh, kw, c, m = w["depthwise_kernel"].shape
        y = F.conv2d(t, w["depthwise_kernel"].permute(2, 3, 0, 1).reshape(c * m, 1, kh, kw), stride=stride, groups=c)
        y = F.conv2d(y, w["pointwise_kernel"].permute(3, 2, 0, 1), w["bias"])
        return activation(act, cl(y))

    for nm, ch, m, fl, k, st, pad, act, hw in (("same_k3_m2", 3, 2, 4, 3, 1, "same", "linear", (4, 5)),
                                              ("same_k3_s2_tanh", 2, 1, 3, 3, 2, "same", "tanh", (5, 6)),
                                              ("valid_k2_m3", 2, 3, 2, 2, 1, "valid", "linear", (3, 4))):
        case("separable_conv2d_" + nm, "SeparableConv2D",
             {"filters": fl, "kernel_size": k, "strides": st, "padding": pad, "depth_multiplier": m, "activation": act},
             (2,) + hw + (ch,), lambda x, w, k=k, st=st, pad=pad, act=act: sep(x, w, k, st, pad, act),
             weights={"depthwise_kernel": ((k, k, ch, m), 0.5), "pointwise_kernel": ((1, 1, ch * m, fl), 0.5),
                      "bias": ((fl,), 0.5)})


def main():
    torch.set_num_threads(1)
    padding_cases()
    upsampling_cases()
    rescaling_cases()
    activation_cases()
    pooling_cases()
    augmentation_cases()
    weighted_cases()
    transpose_cases()
    doc = {"generator": "gen_layers_more.py", "torch_version": torch.__version__, "cases": CASES}
    with open(OUT_PATH, "w") as f:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print("wrote %s: %d cases, %d bytes" % (OUT_PATH, len(CASES), os.path.getsize(OUT_PATH)))


if __name__ == "__main__":
    main()
