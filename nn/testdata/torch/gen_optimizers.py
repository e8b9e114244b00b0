#!/usr/bin/python3
"""Generate optimizers.json: five full-batch steps of Adagrad, Nadam and Adamax,
with and without gradient clipping, run by PyTorch in float64 (torch.optim's
Adagrad and Adamax; Nadam in torch tensor ops, see below).

The problem: Dense(2) on inputs of 3 features (kernel (3,2), Keras layout
(in, out); bias (2)), 4 samples, mean squared error over all 8 outputs (Keras's
MSE: mean over the last axis, then over the batch). Every step uses the whole
batch. torch.optim's update is chosen to equal Keras's:

  adagrad: torch Adagrad with initial_accumulator_value as given and eps=0
           equals Keras's w -= lr*g/sqrt(acc + epsilon) with epsilon 0.
  nadam:   torch 1.13's NAdam cannot serve: its next product of momentum
           factors is mu_product * mu * mu_next, counting mu twice (Keras, and
           later torch releases, use mu_product * mu_next). KerasNadam below is
           a torch.optim.Optimizer that applies Keras's update with torch
           tensor ops (momentum factors u_t = beta1*(1 - 0.5*0.96^t), their
           running product, eps outside the square root).
  adamax:  torch Adamax with eps=0 equals Keras's update with epsilon 0.

Clipping is applied to the gradients before each step, with Keras's rules:
  clipnorm c:        each weight's gradient g becomes g*c/max(|g|, c)
  global_clipnorm c: all gradients times c/max(n, c), n the norm of all of them
  clipvalue v:       torch.nn.utils.clip_grad_value_(v)

The output lists, per case, the loss before each step and the weights after
the five steps. Regenerate from the repository root:
    /usr/bin/python3 nn/testdata/torch/gen_optimizers.py
"""

import json
import os

import torch

torch.set_default_dtype(torch.float64)

X = [[1.0, 2.0, -1.0], [0.5, -1.5, 2.0], [-2.0, 0.25, 1.0], [1.5, 1.0, 0.5]]
Y = [[1.0, -1.0], [0.0, 2.0], [-1.5, 0.5], [2.0, 1.0]]
KERNEL = [[0.5, -0.25], [0.1, 0.3], [-0.4, 0.2]]
BIAS = [0.05, -0.1]
STEPS = 5

class KerasNadam(torch.optim.Optimizer):
    """Keras's Nadam: at step t, with u_t = beta1*(1 - 0.5*0.96^t) and
    P_t = u_1*...*u_t,
        m = m + (g - m)*(1 - beta1);  v = v + (g^2 - v)*(1 - beta2)
        m_hat = u_{t+1}*m/(1 - P_t*u_{t+1}) + (1 - u_t)*g/(1 - P_t)
        w = w - lr*m_hat/(sqrt(v/(1 - beta2^t)) + eps)
    """

    def __init__(self, params, lr, betas=(0.9, 0.999), eps=1e-7):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))
        self.t = 0
        self.u_product = 1.0

    @torch.no_grad()
    def step(self):
        self.t += 1
        t = self.t
        for group in self.param_groups:
            b1, b2 = group["betas"]
            u = lambda s: b1 * (1 - 0.5 * 0.96 ** s)
            if group is self.param_groups[0]:
                self.u_product *= u(t)
            p_t = self.u_product
            for p in group["params"]:
                st = self.state[p]
                if not st:
                    st["m"] = torch.zeros_like(p)
                    st["v"] = torch.zeros_like(p)
                g, m, v = p.grad, st["m"], st["v"]
                m.add_((g - m) * (1 - b1))
                v.add_((g * g - v) * (1 - b2))
                m_hat = u(t + 1) * m / (1 - p_t * u(t + 1)) + (1 - u(t)) * g / (1 - p_t)
                v_hat = v / (1 - b2 ** t)
                p.sub_(group["lr"] * m_hat / (v_hat.sqrt() + group["eps"]))


CASES = [
    ("adagrad", lambda p: torch.optim.Adagrad(p, lr=0.1, initial_accumulator_value=0.1, eps=0), None),
    ("adagrad initial 0.5", lambda p: torch.optim.Adagrad(p, lr=0.1, initial_accumulator_value=0.5, eps=0), None),
    ("nadam", lambda p: KerasNadam(p, lr=0.01), None),
    ("nadam beta", lambda p: KerasNadam(p, lr=0.05, betas=(0.8, 0.99)), None),
    ("adamax", lambda p: torch.optim.Adamax(p, lr=0.01, betas=(0.9, 0.999), eps=0), None),
    ("adamax clipnorm", lambda p: torch.optim.Adamax(p, lr=0.01, betas=(0.9, 0.999), eps=0), ("clipnorm", 1.0)),
    ("nadam global_clipnorm", lambda p: KerasNadam(p, lr=0.01), ("global_clipnorm", 2.0)),
    ("adagrad clipvalue", lambda p: torch.optim.Adagrad(p, lr=0.1, initial_accumulator_value=0.1, eps=0), ("clipvalue", 0.5)),
]


def clip(params, how):
    if how is None:
        return
    kind, c = how
    if kind == "clipnorm":
        for p in params:
            n = p.grad.norm()
            p.grad.mul_(c / max(n.item(), c))
    elif kind == "global_clipnorm":
        n = torch.sqrt(sum((p.grad * p.grad).sum() for p in params)).item()
        for p in params:
            p.grad.mul_(c / max(n, c))
    else:
        torch.nn.utils.clip_grad_value_(params, c)


def run(make, how):
    x, y = torch.tensor(X), torch.tensor(Y)
    k = torch.tensor(KERNEL, requires_grad=True)
    b = torch.tensor(BIAS, requires_grad=True)
    opt = make([k, b])
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = ((x @ k + b - y) ** 2).mean()
        loss.backward()
        losses.append(loss.item())
        clip([k, b], how)
        opt.step()
    return {"losses": losses, "kernel": k.detach().flatten().tolist(), "bias": b.detach().tolist()}


def main():
    out = {
        "note": "torch " + torch.__version__ + ", float64; see gen_optimizers.py",
        "x": X, "y": Y, "kernel": KERNEL, "bias": BIAS, "steps": STEPS,
        "cases": {name: run(make, how) for name, make, how in CASES},
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizers.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
