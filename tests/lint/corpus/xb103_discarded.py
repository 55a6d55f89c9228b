"""Moves whose result is dropped: tensors are not moved in place, modules are."""
import torch
from torch import nn


def prepare(batch_size, device):
    x = torch.randn(batch_size, 3)
    x.to(device)  # expect: XB103
    y = torch.zeros(batch_size).long()
    y.cuda()  # expect: XB103
    w = nn.Parameter(torch.randn(3, 3))
    w.to(torch.float16)  # expect: XB103
    return x, y, w


def back_to_host(t: torch.Tensor):
    t.cpu()  # expect: XB103
    return t


def modules_move_in_place(device, tokenizer, texts):
    model = nn.Linear(3, 3)
    model.to(device)  # ok: a module moves in place
    net = nn.Sequential(nn.ReLU())
    net.cuda()  # ok
    encoded = tokenizer(texts, return_tensors="pt")
    encoded.to(device)  # ok: a BatchEncoding, not known to be a tensor
    return model, net, encoded


def unknown(thing, device):
    thing.to(device)  # ok: nobody here knows what thing is
    return thing


def assigned(device):
    t = torch.ones(2)  # expect: XB102
    t = t.to(device)  # ok for XB103: assigned (XB102 above: made on the host for this move)
    return t
