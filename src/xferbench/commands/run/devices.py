"""``xferbench run --devices all|0,2,...``: the devices a run measures, one series each. The
option is shared (``xferbench check`` takes it too): declared once, in ``commands/options``."""

from __future__ import annotations

from ..options import parse_devices, resolve_devices

__all__ = ["parse_devices", "resolve_devices"]
