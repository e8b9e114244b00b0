#!/usr/bin/python3
"""Generate losses/losses.json: Keras-semantics losses and their gradients.

For each case, a batch of targets y and predictions p (float32 values, fixed
below), the loss (mean over the batch of the per-sample loss, Keras's
sum_over_batch_size) and its gradient with respect to p are computed in
float64 with PyTorch's autograd, from PyTorch's own functions where one has
Keras's semantics (huber_loss, kl_div, cross_entropy with label_smoothing,
binary_cross_entropy, cosine_similarity) and by the formula otherwise.

Regenerate (from the repository root):
    /usr/bin/python3 nn/testdata/torch/gen_losses.py
"""

import json
import os

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
EPS = 1e-7  # Keras's backend epsilon

gen = torch.Generator().manual_seed(7)


def f32(t):
    """Rounds to float32 values, kept as float64."""
    return t.to(torch.float32).to(torch.float64)


def rand(*shape, lo=-2.0, hi=2.0):
    return f32(lo + (hi - lo) * torch.rand(*shape, generator=gen))


def probs(*shape):
    return f32(torch.softmax(rand(*shape, lo=-2, hi=2), dim=-1))


cases = []


def case(name, loss_go, y, p, fn):
    p = p.clone().requires_grad_(True)
    loss = fn(y, p)
    (g,) = torch.autograd.grad(loss, p)
    cases.append({
        "name": name, "loss_go": loss_go, "shape": list(p.shape),
        "y": y.flatten().tolist(), "p": p.detach().flatten().tolist(),
        "loss": loss.item(), "grad": g.flatten().tolist(),
    })


B, C = 4, 5
y_reg, p_reg = rand(B, C), rand(B, C)

for delta in (1.0, 0.5, 2.5):
    case(f"huber delta {delta}", f"huber:{delta}", y_reg, p_reg,
         # PyTorch's huber_loss is Keras's Huber; mean over every element is
         # the mean over samples of the mean over the last axis.
         lambda y, p, d=delta: F.huber_loss(p, y, delta=d, reduction="mean"))

yk, pk = probs(B, C), probs(B, C)
pk[0, 1] = 0.0  # clipped to 1e-7: log of a clipped prediction
pk = f32(pk)
case("kl_divergence", "kl_divergence", yk, pk,
     lambda y, p: F.kl_div(torch.log(torch.clamp(p, EPS, 1)), torch.clamp(y, EPS, 1),
                           reduction="sum") / y.shape[0])

case("log_cosh", "log_cosh", y_reg, p_reg, lambda y, p: torch.log(torch.cosh(p - y)).mean())

yp, pp = f32(torch.randint(0, 5, (B, C), generator=gen).double()), rand(B, C, lo=0.05, hi=3)
case("poisson", "poisson", yp, pp, lambda y, p: (p - y * torch.log(p + EPS)).mean())

case("cosine_similarity", "cosine_similarity", y_reg, p_reg,
     lambda y, p: -F.cosine_similarity(p, y, dim=-1, eps=1e-30).mean())

yh = f32(torch.randint(0, 2, (B, C), generator=gen).double())
case("hinge 0/1 targets", "hinge", yh, p_reg,
     lambda y, p: torch.clamp(1 - (2 * y - 1) * p, min=0).mean())
ys = 2 * yh - 1
case("hinge -1/1 targets", "hinge", ys, p_reg, lambda y, p: torch.clamp(1 - y * p, min=0).mean())

onehot = F.one_hot(torch.tensor([0, 3, 4, 1]), C).double()
logits = rand(B, C, lo=-3, hi=3)
for ls in (0.0, 0.1, 0.35):
    case(f"categorical from logits smoothing {ls}", f"categorical_crossentropy:logits:{ls}", onehot, logits,
         lambda y, p, s=ls: F.cross_entropy(p, y, label_smoothing=s))
    pc = probs(B, C)
    case(f"categorical from probabilities smoothing {ls}", f"categorical_crossentropy:probs:{ls}", onehot, pc,
         lambda y, p, s=ls: -(((1 - s) * y + s / C) * torch.log(torch.clamp(p / p.sum(-1, keepdim=True), EPS, 1 - EPS))).sum(-1).mean())

yb = f32(torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]]))
pb = f32(torch.rand(B, 3, generator=gen) * 0.9 + 0.05)
lb = rand(B, 3, lo=-4, hi=4)
for ls in (0.0, 0.2):
    case(f"binary from probabilities smoothing {ls}", f"binary_crossentropy:probs:{ls}", yb, pb,
         lambda y, p, s=ls: F.binary_cross_entropy(p, y * (1 - s) + s / 2))
    case(f"binary from logits smoothing {ls}", f"binary_crossentropy:logits:{ls}", yb, lb,
         lambda y, p, s=ls: F.binary_cross_entropy_with_logits(p, y * (1 - s) + s / 2))

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "losses", "losses.json")
with open(out, "w") as f:
    json.dump({"torch": torch.__version__, "cases": cases}, f, indent=1)
    f.write("\n")
print(f"wrote {len(cases)} cases to {out}")
