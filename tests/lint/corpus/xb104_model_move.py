"""The model moved inside the batch loop, and the moves that are not per batch."""
import torch
from torch import nn


def train(model, loader, optimizer, device):
    model.to(device)  # ok: once, before the loop
    for x, y in loader:
        model.to(device)  # expect: XB104
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


def per_epoch(model, loader, optimizer, device, epochs):
    for _ in range(epochs):
        model.cuda()  # ok: once per epoch, the batch loop is below
        for x, y in loader:
            out = model(x.cuda())
            out.sum().backward()
            optimizer.step()


def ensemble(models, batch, device):
    outs = []
    for model in models:  # a different model each time
        model.to(device)  # ok: the loop variable
        outs.append(model(batch))
    return outs


class Trainer:
    def __init__(self, model, device):
        self.model = model
        self.device = device

    def fit(self, loader, optimizer):
        for batch in loader:
            self.model = self.model.to(self.device)  # expect: XB104
            loss = self.model(batch.to(self.device)).mean()
            loss.backward()
            optimizer.step()


def first_step_only(model, loader, optimizer, device):
    for step, (x, y) in enumerate(loader):
        if step == 0:
            model.to(device)  # ok: on the first step only
        loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
