"""DataLoaders feeding non_blocking copies: without pin_memory=True (one finding per loader,
where the fix goes), with it, and loaders whose pinning nobody here can know."""
import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, device):
    loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4)  # expect: XB110
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def explicit_false(model, dataset, device):
    loader = DataLoader(dataset, batch_size=64, pin_memory=False)  # expect: XB110
    return [model(x.cuda(non_blocking=True)) for x in loader]


def pinned(model, dataset, device):
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)  # ok: pinned by its thread
    return [model(x.to(device, non_blocking=True)) for x in loader]


def blocking(model, dataset, device):
    loader = DataLoader(dataset, batch_size=64)  # ok: the copies are blocking, nothing to lose
    return [model(x.to(device)) for x in loader]


def configured(model, dataset, device, cfg):
    loader = DataLoader(dataset, batch_size=64, **cfg)  # ok: pin_memory may be in cfg
    return [model(x.to(device, non_blocking=True)) for x in loader]


def handed(model, loader, device):
    return [model(x.to(device, non_blocking=True)) for x in loader]  # ok: built elsewhere


val_loader = DataLoader(range(8), batch_size=4)  # expect: XB110


def evaluate(model, device):
    with torch.no_grad():
        return [model(x.to(device, non_blocking=True)) for x in val_loader]
