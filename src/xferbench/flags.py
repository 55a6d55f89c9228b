"""Boolean environment variables, read one way everywhere (XFERBENCH_QUICK, XFERBENCH_EMU...)."""

from __future__ import annotations

import os

from .errors import XferbenchError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def parse_flag(name: str, value: str) -> bool:
    """``value`` of variable ``name`` as a boolean: 1/true/yes/on or 0/false/no/off/empty (any
    case); anything else raises XferbenchError saying what would be accepted."""
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise XferbenchError(
        f"{name}={value!r} is not a yes or no: use 1, true, yes or on, or 0, false, no or off")


def env_flag(name: str) -> bool:
    """The boolean environment variable ``name`` (unset: False); see parse_flag."""
    return parse_flag(name, os.environ.get(name, ""))
