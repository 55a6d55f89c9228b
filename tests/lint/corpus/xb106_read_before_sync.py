"""Device-to-host copies made with non_blocking=True, read before and after a synchronise."""
import torch


def unsafe(x):
    host = x.to("cpu", non_blocking=True)
    print(host)  # expect: XB106
    return host


def unsafe_numpy(x):
    host = x.cuda().to("cpu", non_blocking=True)
    return host.numpy()  # expect: XB106


def unsafe_index(x, device):
    y = x.to(device)
    out = y.to(torch.device("cpu"), non_blocking=True)
    first = out[0]  # expect: XB106
    return first


def unsafe_return(x):
    return x.cuda().to("cpu", non_blocking=True)  # expect: XB106


def safe(x):
    host = x.to("cpu", non_blocking=True)
    torch.cuda.synchronize()
    print(host)  # ok: synchronised
    return host


def safe_event(x):
    host = x.to("cpu", non_blocking=True)
    done = torch.cuda.Event()
    done.record()
    done.synchronize()
    return host.numpy()  # ok: the event waited for the copy


def safe_accelerator(x):
    host = x.to("cpu", non_blocking=True)
    torch.accelerator.synchronize()
    return host.tolist()  # ok


def blocking(x):
    host = x.to("cpu")
    return host.numpy()  # ok: a blocking copy
