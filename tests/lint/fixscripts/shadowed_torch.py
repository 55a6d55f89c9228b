"""A module called torch inside a function is not PyTorch there."""
import types

import torch

fake = types.SimpleNamespace(zeros=lambda n: types.SimpleNamespace(to=lambda d: None, n=n))


def build(torch):
    t = torch.zeros(3)
    t.to("cpu")
    return t.n


print(build(fake), torch.zeros(1).shape[0])
