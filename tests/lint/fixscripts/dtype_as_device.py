"""A move whose argument is a dtype, in a variable with a device's name."""
import torch


def load(setting):
    return setting


dev = load(torch.float64)
t = torch.zeros(3).to(dev)


def make(n, device):
    return torch.ones(n).to(device)


print(t.dtype, make(2, torch.float16).dtype)
