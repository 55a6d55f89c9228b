"""Pinning on the main thread per batch, then copying non_blocking."""
import torch


def move_batches(batches, device):
    out = []
    for batch in batches:
        out.append(batch.pin_memory().to(device, non_blocking=True))  # expect: XB108
    return out


def two_steps(batches, device):
    for batch in batches:
        pinned = batch.pin_memory()
        yield pinned.cuda(non_blocking=True)  # expect: XB108


def comprehension(tensors, device):
    return [t.pin_memory().to(device, non_blocking=True) for t in tensors]  # expect: XB108


def pinned_once(batches, device):
    staging = torch.empty(1 << 20, pin_memory=True)
    for batch in batches:
        staging.copy_(batch)
        yield staging.to(device, non_blocking=True)  # ok: pinned once, outside the loop


def once(tensor, device):
    return tensor.pin_memory().to(device, non_blocking=True)  # ok: not per batch
