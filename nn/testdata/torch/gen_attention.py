#!/usr/bin/python3
"""Generate attention.json: golden values for nn's MultiHeadAttention layer,
its output and its gradients, computed with PyTorch's own
torch.nn.MultiheadAttention module (batch_first) in float64 from float32 inputs
and weights.

Each case gives the layer's inputs (query, value, key and the attention mask,
as nn takes them: (batch, steps, features), the mask (batch, T, S) with 1 for
"attend" and 0 for "masked"), its weights in Keras's layouts, the output, and
the gradients of sum(output * cotangent) with respect to every input tensor and
weight, for a fixed random cotangent. A case whose key is the value passes one
tensor for both ("key" absent), and a self-attention case passes one tensor
for query, value and key ("value" absent too), so their gradients are the sums
PyTorch's autograd forms.

Keras's layouts against the module's parameters, E = heads * key_dim:
  query/kernel (Dq, H, K)            q_proj_weight (E, Dq) = kernel.reshape(Dq, E).T
  key/kernel (Dk, H, K), value/kernel (Dv, H, K) likewise (k_proj_weight, v_proj_weight;
      in_proj_weight stacks the three when Dq = Dk = Dv = E)
  query/bias, key/bias, value/bias (H, K)   in_proj_bias (3E) = concat of the three, flattened
  attention_output/kernel (H, K, E)  out_proj.weight (E, E) = kernel.reshape(E, E).T
  attention_output/bias (E)          out_proj.bias
The module's attn_mask (batch * heads, T, S) is True where attention is NOT
allowed: the negation of nn's mask, combined with the causal mask (key j after
query i) for the causal cases. Every query keeps at least one key, since the
module gives NaN for a row masked throughout (nn attends to all its keys).

Regenerate (from the repository root):
    /usr/bin/python3 nn/testdata/torch/gen_attention.py
"""

import json
import os
import zlib

import numpy as np
import torch
import torch.nn as tnn

F64 = torch.float64
OUT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attention.json")


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def f32(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def enc(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "data": [float(v) for v in a.reshape(-1)]}


def t64(a):
    return torch.tensor(a, dtype=F64, requires_grad=True)


def make_case(name, b, t, s, heads, key_dim, dq, dk, dv, use_bias=True, self_attention=False,
              separate_key=True, masked=False, causal=False):
    r = rng_for(name)
    e = heads * key_dim
    assert dq == e, "the module projects back to the query's features"
    query = f32(r, (b, t, dq))
    value = query if self_attention else f32(r, (b, s, dv))
    key = value if (self_attention or not separate_key) else f32(r, (b, s, dk))
    w = {
        "query/kernel": f32(r, (dq, heads, key_dim), 0.5),
        "key/kernel": f32(r, (dk, heads, key_dim), 0.5),
        "value/kernel": f32(r, (dv, heads, key_dim), 0.5),
        "attention_output/kernel": f32(r, (heads, key_dim, e), 0.5),
    }
    if use_bias:
        for p in ("query", "key", "value"):
            w[p + "/bias"] = f32(r, (heads, key_dim), 0.5)
        w["attention_output/bias"] = f32(r, (e,), 0.5)
    mask = None
    if masked:
        mask = (r.random((b, t, s)) < 0.6).astype(np.float32)
        mask[:, :, 0] = 1  # every query keeps key 0, which causal masks keep too
    cot = f32(r, (b, t, e))

    m = tnn.MultiheadAttention(e, heads, bias=use_bias, kdim=dk, vdim=dv, batch_first=True).double()
    wt = {n: t64(v) for n, v in w.items()}
    qw = wt["query/kernel"].reshape(dq, e).t()
    kw = wt["key/kernel"].reshape(dk, e).t()
    vw = wt["value/kernel"].reshape(dv, e).t()
    params = {}
    if m._qkv_same_embed_dim:
        params["in_proj_weight"] = torch.cat([qw, kw, vw], 0)
    else:
        params["q_proj_weight"], params["k_proj_weight"], params["v_proj_weight"] = qw, kw, vw
    if use_bias:
        params["in_proj_bias"] = torch.cat([wt[p + "/bias"].reshape(e) for p in ("query", "key", "value")])
    for n, v in params.items():
        delattr(m, n)
        setattr(m, n, v)
    out_w = wt["attention_output/kernel"].reshape(e, e).t()
    out_b = wt["attention_output/bias"] if use_bias else None

    xq = t64(query)
    xv = xq if self_attention else t64(value)
    xk = xv if (self_attention or not separate_key) else t64(key)
    blocked = torch.zeros((b, t, s), dtype=torch.bool)
    if mask is not None:
        blocked |= torch.tensor(mask == 0)
    if causal:
        blocked |= torch.triu(torch.ones((t, s), dtype=torch.bool), diagonal=1)
    attn_mask = blocked.repeat_interleave(heads, dim=0) if (masked or causal) else None
    # The module's own projection runs with out_proj replaced by the Keras kernel:
    # F.linear through out_proj's parameters, which are set to the kernel's values.
    del m.out_proj.weight
    m.out_proj.weight = out_w
    if use_bias:
        del m.out_proj.bias
        m.out_proj.bias = out_b
    y, _ = m(xq, xk, xv, attn_mask=attn_mask, need_weights=False)
    loss = (y * torch.tensor(cot, dtype=F64)).sum()
    names = ["query"] + ([] if self_attention else ["value"]) + ([] if (self_attention or not separate_key) else ["key"])
    tensors = {"query": xq, "value": xv, "key": xk}
    wrt = [tensors[n] for n in names] + [wt[n] for n in w]
    grads = torch.autograd.grad(loss, wrt)
    ig = {n: enc(g.numpy()) for n, g in zip(names, grads[:len(names)])}
    wg = {n: enc(g.numpy()) for n, g in zip(w, grads[len(names):])}
    inputs = {"query": enc(query)}
    if not self_attention:
        inputs["value"] = enc(value)
        if separate_key:
            inputs["key"] = enc(key)
    if mask is not None:
        inputs["mask"] = enc(mask)
    return {"name": name, "num_heads": heads, "key_dim": key_dim, "use_bias": use_bias, "causal": causal,
            "inputs": inputs, "weights": {n: enc(v) for n, v in w.items()}, "cotangent": enc(cot),
            "output": enc(y.detach().numpy()), "input_grads": ig, "weight_grads": wg}


def main():
    torch.set_num_threads(1)
    cases = [
        make_case("cross_attention_kdim_vdim", b=2, t=3, s=4, heads=2, key_dim=4, dq=8, dk=5, dv=6),
        make_case("cross_attention_key_is_value", b=2, t=2, s=3, heads=2, key_dim=3, dq=6, dk=5, dv=5,
                  separate_key=False),
        make_case("self_attention_masked", b=2, t=4, s=4, heads=3, key_dim=2, dq=6, dk=6, dv=6,
                  self_attention=True, masked=True),
        make_case("self_attention_causal_no_bias", b=2, t=5, s=5, heads=2, key_dim=2, dq=4, dk=4, dv=4,
                  use_bias=False, self_attention=True, causal=True),
        make_case("cross_attention_causal_masked", b=2, t=3, s=5, heads=2, key_dim=3, dq=6, dk=4, dv=3,
                  masked=True, causal=True),
    ]
    doc = {"generator": "gen_attention.py", "torch_version": torch.__version__, "cases": cases}
    with open(OUT_PATH, "w") as f:
        json.dump(doc, f, separators=(",", ":"), allow_nan=False)
        f.write("\n")
    print("wrote %s: %d bytes" % (OUT_PATH, os.path.getsize(OUT_PATH)))


if __name__ == "__main__":
    main()
