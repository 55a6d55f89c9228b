"""``xferbench run --devices all|0,2,...``: the devices a run measures, one series each.

The text is checked before torch is imported (``parse_devices``); the devices are resolved
once the accelerator is known (``resolve_devices``). Without ``--devices`` a run measures the
best device alone, as before."""

from __future__ import annotations

from ...devices import Device, device_count, resolve_device
from ...errors import XferbenchError

USE = "give all, or device indices such as 0,2"


def parse_devices(text: str | None) -> tuple[str, ...] | None:
    """``--devices`` as given: None (not given), ("all",), or the indices in order. One
    sentence for an empty list, an index that is not one, or a device named twice."""
    if text is None:
        return None
    if text.strip().lower() == "all":
        return ("all",)
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or not all(items):
        raise XferbenchError(f"--devices {text!r} names an empty device: {USE}")
    bad = [item for item in items if not item.isdigit()]
    if bad:
        raise XferbenchError(f"--devices {text!r}: {bad[0]!r} is not a device index: {USE}")
    indices = [int(item) for item in items]
    twice = [i for n, i in enumerate(indices) if i in indices[:n]]
    if twice:
        raise XferbenchError(f"--devices {text!r} names device {twice[0]} twice: name each once")
    return tuple(str(i) for i in indices)


def resolve_devices(chosen: tuple[str, ...], device: str = "auto") -> list[Device]:
    """The devices ``chosen`` names, of the accelerator ``device`` names ("auto": the one
    PyTorch reports). One sentence where there is no accelerator, ``device`` names one device
    already, or an index is not here."""
    words = "all" if chosen == ("all",) else ",".join(chosen)
    if ":" in device:
        raise XferbenchError(f"--device {device} names one device and --devices {words} "
                             "several: give --devices alone, or --device TYPE with it")
    dev = resolve_device(device)
    if not dev.is_accelerator or dev.index is None:
        raise XferbenchError(f"--devices {words} needs an accelerator with device indices: "
                             f"this run's device is {dev}")
    if chosen == ("all",):
        return [Device(dev.type, i) for i in range(device_count(dev.type))]
    out = []
    for index in chosen:
        try:
            out.append(resolve_device(f"{dev.type}:{index}"))
        except XferbenchError as exc:
            raise XferbenchError(f"--devices {words}: {exc}") from None
    return out
