"""Tensors generated on the host, then copied to the device."""
import torch
from torch import nn

DEVICE = "cuda"


def buffers(n, device):
    zeros = torch.zeros(n).to(device)  # expect: XB102
    ones = torch.ones(n, 4, dtype=torch.float16).cuda()  # expect: XB102
    steps = torch.arange(0, n, 2).to(device=device)  # expect: XB102
    grid = torch.linspace(0, 1, n).to(DEVICE, non_blocking=True)  # expect: XB102
    eye = torch.eye(n).to(device, dtype=torch.float64)  # expect: XB102
    noise = torch.randn(n).to(device)  # expect: XB102
    mask = torch.full((n, n), float("-inf")).to(device)  # expect: XB102
    causal = torch.ones(n, n, dtype=torch.bool).triu(1).to(device)  # expect: XB102
    return zeros, ones, steps, grid, eye, noise, mask, causal


def through_a_name(n, device):
    scratch = torch.empty(n, n)  # expect: XB102
    scratch = scratch.to(device)
    return scratch


def not_these(n, device, data, array):
    a = torch.tensor(data).to(device)  # ok: data on the host already
    b = torch.as_tensor(data).to(device)  # ok
    c = torch.from_numpy(array).to(device)  # ok
    d = torch.zeros(n, device=device)  # ok: made on the device
    e = torch.zeros(n).to(torch.float16)  # ok: a dtype, not a move
    f = torch.zeros(n).to("cpu")  # ok: stays on the host
    g = torch.ones(n)  # ok: used for more than the move
    g_dev = g.to(device)
    print(g.sum())
    h = torch.rand(n, generator=torch.Generator().manual_seed(0)).to(device)  # ok: a host generator
    return a, b, c, d, e, f, g_dev, h


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(4))  # ok: a buffer moves with the module

    def forward(self, x):
        return x * torch.arange(4).to(x.device)  # expect: XB102
