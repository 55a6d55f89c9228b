"""non_blocking=True from pageable memory, and from pinned memory (a DataLoader without
pin_memory=True is XB110's, at the loader)."""
import torch
from torch.utils.data import DataLoader

train_loader = DataLoader(range(10), batch_size=2)  # expect: XB110
pinned_loader = DataLoader(range(10), batch_size=2, pin_memory=True)


def train(model, optimizer, device):
    for x in train_loader:
        x = x.to(device, non_blocking=True)  # XB110 at the loader, not here
        model(x).sum().backward()
        optimizer.step()
    for x in pinned_loader:
        x = x.to(device, non_blocking=True)  # ok: pinned by the DataLoader
        model(x).sum().backward()
        optimizer.step()


def staged(device):
    host = torch.randn(1024, 1024)  # expect: XB102
    dev = host.to(device, non_blocking=True)  # expect: XB105
    pinned = torch.randn(1024, 1024).pin_memory()
    dev2 = pinned.to(device, non_blocking=True)  # ok: pinned
    buffer = torch.empty(1024, pin_memory=True)
    dev3 = buffer.to(device, non_blocking=True)  # ok: pinned
    return dev, dev2, dev3


def unknown_source(batch, device):
    return batch.to(device, non_blocking=True)  # ok: nobody here knows if it is pinned


class Module:
    def setup(self, ds, workers):
        self.loader = DataLoader(ds, num_workers=workers, pin_memory=torch.cuda.is_available())

    def run(self, device):
        for batch in self.loader:
            batch.to(device, non_blocking=True)  # ok: pin_memory decided at run time


def from_numpy(array, device):
    host = torch.from_numpy(array)  # pageable: numpy's own memory
    return host.to(device, non_blocking=True)  # expect: XB105
