"""Values a training step hands on: host floats returned by a step, a count beside a loss, a
host weight, another module's sizes and strings, logging guards of other forms, a timer after
a synchronise in a helper called sync(), a meter updated after a synchronise."""
import time

import torch
from utils import format_loss, get_batch_size, timer


def train_step(model, x, y, optimizer, criterion):
    out = model(x)
    loss = criterion(out, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    acc = (out.argmax(1) == y).float().mean()
    return loss.item(), acc.item()  # expect: XB101, XB101


def train(model, loader, optimizer, criterion, device, step):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss_value, acc = train_step(model, x, y, optimizer, criterion)
        print(f"{loss_value:.3f} {acc:.3f}")  # ok: host floats the step returned


def scaled(model, loader, optimizer, device, step):
    for x, _ in loader:
        warm_up = min(1.0, step / 1000)
        loss = model(x.to(device)).mean()
        loss = loss * warm_up
        loss.backward()
        optimizer.step()
        n = get_batch_size(x)
        print(warm_up, n, format_loss(loss))  # ok: a host weight, a size, a string
        print(loss.item())  # expect: XB101


def with_count(model, x):
    return model(x).mean(), 3


def counted(model, loader, optimizer, device, start):
    for x in loader:
        loss, i = with_count(model, x.to(device))
        loss.backward()
        optimizer.step()
        if i == start:  # ok: the count returned beside the loss is a host int
            print("first")


def log_stats(loss, should_log):
    if not should_log:
        return
    print(loss.item())  # expect: XB101/info


def logged(model, loader, optimizer, device, log_every):
    for step, x in enumerate(loader):
        loss = model(x.to(device)).mean()
        loss.backward()
        optimizer.step()
        log_stats(loss, step % log_every == 0)
        if step % log_every != 0:
            continue
        print(loss.item())  # expect: XB101/info


def timed(model, loader, optimizer, device, losses, batch_time):
    end = time.time()
    for x in loader:
        loss = model(x.to(device)).mean()
        loss.backward()
        optimizer.step()
        timer.sync()
        losses.update(loss.detach(), x.size(0))
        batch_time.update(time.time() - end)  # ok: sync() waited, the meter keeps a view
        end = time.time()


def setup(device):
    t0 = time.time()
    model = torch.nn.Linear(4, 4).to(device)
    buffer = torch.zeros(1024, device=device)
    print("setup took", time.time() - t0)  # ok: a setup's fill and move among host work
    return model, buffer
