"""Explicit synchronises in a training step: a drain every step, and the ones a timer needs."""
import time

import torch


def train(model, loader, optimizer, device):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()  # expect: XB109


def train_step(model, batch, optimizer):
    loss = model(batch).mean()
    loss.backward()
    optimizer.step()
    torch.accelerator.synchronize()  # expect: XB109
    return loss


def train_timed(model, loader, optimizer, device, batch_time):
    end = time.time()
    for batch in loader:
        train_step(model, batch.to(device), optimizer)
        torch.cuda.synchronize()  # ok: the timer below needs it
        batch_time.update(time.time() - end)
        end = time.time()


def train_logged(model, loader, optimizer, device):
    for step, batch in enumerate(loader):
        train_step(model, batch.to(device), optimizer)
        if step % 100 == 0:
            torch.cuda.current_stream().synchronize()  # expect: XB109/info


def evaluate(model, loader, device):
    for batch in loader:
        model(batch.to(device))
        torch.cuda.synchronize()  # ok: no training step here
