#!/usr/bin/python3
"""Generate recurrent.json: golden values for nn's SimpleRNN, LSTM, GRU,
Bidirectional and Masking layers, computed with PyTorch (nn.RNN, nn.LSTM,
nn.GRU, bidirectional ones, and nn.LSTMCell stepped by hand for masking) in
float64 from float32 inputs and weights.

Each case is a batch x (batch, time, features), weights in Keras's layout and
names, the layer's output, and for the loss mean((output - target)^2) its
value, the gradient with respect to x and the gradient of every weight.

Keras layout and the PyTorch mapping (U units, F features):
  LSTM  kernel (F, 4U), recurrent_kernel (U, 4U), bias (4U), gates i, f, c, o.
        PyTorch's order i, f, g, o is the same: weight_ih = kernel.T,
        weight_hh = recurrent_kernel.T, bias_ih = bias, bias_hh = 0.
  GRU   (reset_after) kernel (F, 3U), recurrent_kernel (U, 3U), bias (2, 3U),
        gates z, r, h. PyTorch's order is r, z, n: its blocks are Keras's
        blocks 1, 0, 2; bias_ih = bias[0], bias_hh = bias[1] (reordered).
  GRU   (reset_after false): no PyTorch module; written in torch ops from
        Keras's formula, candidate tanh(x_h + (r*h) U_h), bias (3U).
  SimpleRNN kernel (F, U), recurrent_kernel (U, U), bias (U): nn.RNN(tanh).
Bidirectional: PyTorch's bidirectional module's *_reverse weights are the
backward layer's; its sequence output is [forward, backward] per step in the
input's order of time, which is Keras's concat merge; its last states h_n[0],
h_n[1] are Keras's last outputs of the two layers. go_backwards alone is the
module run on the time-reversed input, its sequence output left in that order.
Masking(0): a step whose features are all 0 leaves the state unchanged and
repeats the previous output (zeros before the first step that counts); under
Bidirectional with return_sequences its output is zero instead, as Keras's
Bidirectional sets zero_output_for_mask then.

Regenerate (from the repository root):
    /usr/bin/python3 nn/testdata/torch/gen_recurrent.py
"""

import json
import os
import zlib

import numpy as np
import torch
import torch.nn as tnn

F64 = torch.float64
OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recurrent.json")
N, T, F, U = 2, 5, 4, 3


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def f32(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def enc(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


def t64(a, grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=F64, requires_grad=grad)


def blocks(a, order, axis):
    """Reorders the gate blocks of a along axis."""
    parts = np.split(a, len(order), axis=axis)
    return np.concatenate([parts[i] for i in order], axis=axis)


GRU_ORDER = [1, 0, 2]  # PyTorch's r, z, n from Keras's z, r, h (and back)


def keras_weights(rng, kind, reset_after=True):
    g = {"lstm": 4, "gru": 3, "simple_rnn": 1}[kind]
    w = {"kernel": f32(rng, (F, g * U), 0.5), "recurrent_kernel": f32(rng, (U, g * U), 0.5)}
    w["bias"] = f32(rng, (2, g * U) if kind == "gru" and reset_after else (g * U,), 0.3)
    return w


def module_for(kind, bidirectional=False):
    cls = {"lstm": tnn.LSTM, "gru": tnn.GRU, "simple_rnn": tnn.RNN}[kind]
    return cls(F, U, batch_first=True, bidirectional=bidirectional).double()


def set_direction(m, kind, w, suffix=""):
    """Sets one direction of module m from Keras weights w."""
    k, r, b = w["kernel"], w["recurrent_kernel"], w["bias"]
    if kind == "gru":
        k, r = blocks(k, GRU_ORDER, 1), blocks(r, GRU_ORDER, 1)
        bih, bhh = blocks(b[0], GRU_ORDER, 0), blocks(b[1], GRU_ORDER, 0)
    else:
        bih, bhh = b, np.zeros_like(b)
    with torch.no_grad():
        getattr(m, "weight_ih_l0" + suffix).copy_(t64(k.T))
        getattr(m, "weight_hh_l0" + suffix).copy_(t64(r.T))
        getattr(m, "bias_ih_l0" + suffix).copy_(t64(bih))
        getattr(m, "bias_hh_l0" + suffix).copy_(t64(bhh))


def direction_grads(m, kind, suffix=""):
    """Returns the gradients of one direction of m in Keras's layout."""
    gk = getattr(m, "weight_ih_l0" + suffix).grad.numpy().T
    gr = getattr(m, "weight_hh_l0" + suffix).grad.numpy().T
    gb = getattr(m, "bias_ih_l0" + suffix).grad.numpy()
    if kind == "gru":
        gk, gr = blocks(gk, GRU_ORDER, 1), blocks(gr, GRU_ORDER, 1)
        gbh = getattr(m, "bias_hh_l0" + suffix).grad.numpy()
        gb = np.stack([blocks(gb, GRU_ORDER, 0), blocks(gbh, GRU_ORDER, 0)])
    return {"kernel": gk, "recurrent_kernel": gr, "bias": gb}


def finish(name, x, xt, out, target, weights, grads_of):
    """Computes the loss and its gradients and assembles a case."""
    loss = torch.mean((out - t64(target)) ** 2)
    loss.backward()
    return {"name": name, "x": enc(x), "target": enc(target), "output": enc(out.detach().numpy()),
            "loss": float(loss), "input_grad": enc(xt.grad.numpy()),
            "weights": {n: enc(v) for n, v in weights.items()},
            "weight_grads": {n: enc(v) for n, v in grads_of().items()}}


def module_case(name, kind, sequences, backwards=False):
    rng = rng_for(name)
    x = f32(rng, (N, T, F))
    w = keras_weights(rng, kind)
    m = module_for(kind)
    set_direction(m, kind, w)
    xt = t64(x, True)
    seq, _ = m(torch.flip(xt, [1]) if backwards else xt)
    out = seq if sequences else seq[:, -1]
    target = f32(rng, tuple(out.shape))
    return finish(name, x, xt, out, target, {kind + "/" + n: v for n, v in w.items()},
                  lambda: {kind + "/" + n: v for n, v in direction_grads(m, kind).items()})


def bidirectional_case(name, kind, sequences, merge):
    rng = rng_for(name)
    x = f32(rng, (N, T, F))
    wf, wb = keras_weights(rng, kind), keras_weights(rng, kind)
    m = module_for(kind, bidirectional=True)
    set_direction(m, kind, wf)
    set_direction(m, kind, wb, "_reverse")
    xt = t64(x, True)
    seq, state = m(xt)
    hn = state[0] if kind == "lstm" else state
    if sequences:
        a, b = seq[..., :U], seq[..., U:]
    else:
        a, b = hn[0], hn[1]
    out = {"concat": lambda: torch.cat([a, b], -1), "sum": lambda: a + b,
           "mul": lambda: a * b, "ave": lambda: (a + b) / 2}[merge]()
    target = f32(rng, tuple(out.shape))
    pre = {"f": "bidirectional/forward_" + kind + "/", "b": "bidirectional/backward_" + kind + "/"}
    weights = {pre["f"] + n: v for n, v in wf.items()}
    weights.update({pre["b"] + n: v for n, v in wb.items()})

    def grads():
        g = {pre["f"] + n: v for n, v in direction_grads(m, kind).items()}
        g.update({pre["b"] + n: v for n, v in direction_grads(m, kind, "_reverse").items()})
        return g
    return finish(name, x, xt, out, target, weights, grads)


def gru_reset_before_case(name):
    """Keras's GRU with reset_after false, from its formula."""
    rng = rng_for(name)
    x = f32(rng, (N, T, F))
    w = keras_weights(rng, "gru", reset_after=False)
    k, r, b = (t64(w[n], True) for n in ("kernel", "recurrent_kernel", "bias"))
    xt = t64(x, True)
    h = torch.zeros(N, U, dtype=F64)
    outs = []
    for t in range(T):
        xw = xt[:, t] @ k + b
        hz = h @ r[:, :2 * U]
        z = torch.sigmoid(xw[:, :U] + hz[:, :U])
        rr = torch.sigmoid(xw[:, U:2 * U] + hz[:, U:])
        hh = torch.tanh(xw[:, 2 * U:] + (rr * h) @ r[:, 2 * U:])
        h = z * h + (1 - z) * hh
        outs.append(h)
    out = torch.stack(outs, 1)
    target = f32(rng, tuple(out.shape))
    return finish(name, x, xt, out, target, {"gru/" + n: v for n, v in w.items()},
                  lambda: {"gru/kernel": k.grad.numpy(), "gru/recurrent_kernel": r.grad.numpy(), "gru/bias": b.grad.numpy()})


def masked_lstm_case(name):
    """Masking(0) before LSTM(return_sequences): steps of zeros are skipped."""
    rng = rng_for(name)
    x = f32(rng, (N, T, F))
    x[0, 3:] = 0  # padded at the end
    x[1, 0] = 0   # and at the start and in the middle
    x[1, 2] = 0
    w = keras_weights(rng, "lstm")
    cell = tnn.LSTMCell(F, U).double()
    with torch.no_grad():
        cell.weight_ih.copy_(t64(w["kernel"].T))
        cell.weight_hh.copy_(t64(w["recurrent_kernel"].T))
        cell.bias_ih.copy_(t64(w["bias"]))
        cell.bias_hh.zero_()
    xt = t64(x, True)
    keep = (xt != 0).any(-1, keepdim=True)
    xm = xt * keep.to(F64)
    h = torch.zeros(N, U, dtype=F64)
    c = torch.zeros(N, U, dtype=F64)
    outs = []
    for t in range(T):
        hn, cn = cell(xm[:, t], (h, c))
        h = torch.where(keep[:, t], hn, h)
        c = torch.where(keep[:, t], cn, c)
        outs.append(h)
    out = torch.stack(outs, 1)
    target = f32(rng, tuple(out.shape))

    def grads():
        return {"lstm/kernel": cell.weight_ih.grad.numpy().T, "lstm/recurrent_kernel": cell.weight_hh.grad.numpy().T,
                "lstm/bias": cell.bias_ih.grad.numpy()}
    return finish(name, x, xt, out, target, {"lstm/" + n: v for n, v in w.items()}, grads)


def masked_bidirectional_gru_case(name):
    """Masking(0) before Bidirectional(GRU(return_sequences)): both directions
    skip the steps of zeros, and their outputs there are zeros, as Keras's
    Bidirectional sets zero_output_for_mask when returning sequences."""
    rng = rng_for(name)
    x = f32(rng, (N, T, F))
    x[0, 4] = 0
    x[1, 1] = 0
    x[1, 2] = 0
    ws = {"forward": keras_weights(rng, "gru"), "backward": keras_weights(rng, "gru")}
    cells = {}
    for d, w in ws.items():
        cell = tnn.GRUCell(F, U).double()
        with torch.no_grad():
            cell.weight_ih.copy_(t64(blocks(w["kernel"], GRU_ORDER, 1).T))
            cell.weight_hh.copy_(t64(blocks(w["recurrent_kernel"], GRU_ORDER, 1).T))
            cell.bias_ih.copy_(t64(blocks(w["bias"][0], GRU_ORDER, 0)))
            cell.bias_hh.copy_(t64(blocks(w["bias"][1], GRU_ORDER, 0)))
        cells[d] = cell
    xt = t64(x, True)
    keep = (xt != 0).any(-1, keepdim=True)
    xm = xt * keep.to(F64)
    seqs = {}
    for d, order in (("forward", range(T)), ("backward", reversed(range(T)))):
        h = torch.zeros(N, U, dtype=F64)
        outs = [None] * T
        for t in order:
            h = torch.where(keep[:, t], cells[d](xm[:, t], h), h)
            outs[t] = torch.where(keep[:, t], h, torch.zeros_like(h))
        seqs[d] = torch.stack(outs, 1)
    out = torch.cat([seqs["forward"], seqs["backward"]], -1)
    target = f32(rng, tuple(out.shape))
    weights = {}
    for d, w in ws.items():
        weights.update({"bidirectional/%s_gru/%s" % (d, n): v for n, v in w.items()})

    def grads():
        g = {}
        for d, c in cells.items():
            p = "bidirectional/%s_gru/" % d
            g[p + "kernel"] = blocks(c.weight_ih.grad.numpy().T, GRU_ORDER, 1)
            g[p + "recurrent_kernel"] = blocks(c.weight_hh.grad.numpy().T, GRU_ORDER, 1)
            g[p + "bias"] = np.stack([blocks(c.bias_ih.grad.numpy(), GRU_ORDER, 0),
                                      blocks(c.bias_hh.grad.numpy(), GRU_ORDER, 0)])
        return g
    return finish(name, x, xt, out, target, weights, grads)


def main():
    torch.set_num_threads(1)
    cases = [
        module_case("lstm_last", "lstm", False),
        module_case("lstm_sequences_backwards", "lstm", True, backwards=True),
        module_case("gru_sequences", "gru", True),
        module_case("gru_last_backwards", "gru", False, backwards=True),
        gru_reset_before_case("gru_reset_before_sequences"),
        module_case("simple_rnn_sequences", "simple_rnn", True),
        module_case("simple_rnn_last", "simple_rnn", False),
        bidirectional_case("bidirectional_lstm_concat_sequences", "lstm", True, "concat"),
        bidirectional_case("bidirectional_gru_sum_last", "gru", False, "sum"),
        bidirectional_case("bidirectional_simple_rnn_ave_sequences", "simple_rnn", True, "ave"),
        bidirectional_case("bidirectional_lstm_mul_last", "lstm", False, "mul"),
        masked_lstm_case("masking_lstm_sequences"),
        masked_bidirectional_gru_case("masking_bidirectional_gru_sequences"),
    ]
    doc = {"generator": "gen_recurrent.py", "torch_version": torch.__version__, "cases": cases}
    with open(OUT_PATH, "w") as f:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print("wrote %s: %d bytes" % (OUT_PATH, os.path.getsize(OUT_PATH)))


if __name__ == "__main__":
    main()
