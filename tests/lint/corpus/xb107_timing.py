"""Wall-clock intervals around device work: with and without a synchronise."""
import time
from time import perf_counter

import torch


def time_forward(model, x, device):
    x = x.to(device)
    start = time.time()
    out = model(x)
    elapsed = time.time() - start  # expect: XB107
    return out, elapsed


def time_steps(model, batches, optimizer, device):
    t0 = perf_counter()
    for batch in batches:
        loss = model(batch.to(device, non_blocking=True)).sum()
        loss.backward()
        optimizer.step()
    t1 = perf_counter()  # expect: XB107
    return t1 - t0


def time_right(model, x, device):
    x = x.to(device)
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = model(x)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start  # ok: synchronised first
    return out, elapsed


def time_with_item(model, x, device):
    x = x.to(device)
    start = time.monotonic()
    loss = model(x).sum()
    value = loss.item()
    return value, time.monotonic() - start  # ok: .item() waited for the device


def host_work(data):
    start = time.time()
    total = sum(data)
    return total, time.time() - start  # ok: no device work


def time_with_an_unknown_item(model, loader, optimizer, loss_step, device):
    t0 = time.perf_counter()
    for batch in loader:
        model(batch.to(device)).sum().backward()
        optimizer.step()
        loss = loss_step(batch)
        print(loss.item())  # an unknown value's .item() may wait for the device
    return time.perf_counter() - t0  # ok: that .item() may have synchronised
