"""Shared asv plumbing: the device under test, its capability probe and skip lists.

Nothing here imports torch when ``xferbench run`` has set XFERBENCH_PROBE, so the process
asv spawns for a combination skipped at discovery costs no torch import.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from xferbench.devices import Capabilities, DoesNotFit


def _probe() -> tuple[str, Capabilities]:
    raw = os.environ.get("XFERBENCH_PROBE")
    if raw:
        data = json.loads(raw)
        return data["device"], Capabilities(**data["capabilities"])
    from xferbench.devices import capabilities, resolve_device

    dev = resolve_device(os.environ.get("XFERBENCH_DEVICE", "auto"))
    return dev.name, capabilities(dev)


#: The device every benchmark runs on (XFERBENCH_DEVICE, default "auto") and what it can do.
DEVICE, CAPS = _probe()


def skipped(params: Sequence[Sequence[Any]], reason: Callable[..., str | None]) -> list[tuple]:
    """The parameter combinations for which ``reason(*combo)`` gives a reason to skip."""
    return [combo for combo in itertools.product(*params) if reason(*combo)]


def asv_samples(samples: Sequence[float], number: int = 1) -> dict[str, Any]:
    """A track_ value asv stores like a timing: median, quartiles and, with
    --record-samples, the samples themselves (asv parses {"samples", "number"} this way)."""
    return {"samples": [float(x) for x in samples], "number": int(number)}


def skip_if_too_big(fn: Callable[[], Any]) -> Any:
    """Run a setup step; a DoesNotFit becomes asv's skip (NotImplementedError) with its reason."""
    try:
        return fn()
    except DoesNotFit as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        raise NotImplementedError(str(exc)) from None
