"""``[tool.xferbench.lint]`` in ``pyproject.toml``: ``select``, ``ignore``, ``fail-on``,
``exclude`` and ``intended-reads``, read from the nearest pyproject.toml above the linted
paths (the first one found walking up from their common folder). Python 3.11+ reads TOML
with tomllib; on 3.10 the ``tomli`` package does it (installed with xferbench there)."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from ..errors import XferbenchError
from .rules import SEVERITIES, expand

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

KEYS = ("select", "ignore", "fail-on", "exclude", "intended-reads")


@dataclass(frozen=True)
class Config:
    path: str | None = None  # the pyproject.toml read, None if none was
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str | None = None
    exclude: tuple[str, ...] = ()
    base: str = field(default=".")  # the folder exclude patterns are relative to
    # functions whose host reads are meant (XB101 not reported inside them): names or
    # Class.method, fnmatch patterns ("log_metrics", "Trainer.validate*", "*_report")
    intended_reads: tuple[str, ...] = ()


def find_pyproject(paths: list[str]) -> str | None:
    """The nearest pyproject.toml above the common folder of ``paths``."""
    existing = [os.path.abspath(p) for p in paths if os.path.exists(p)] or [os.getcwd()]
    try:
        here = os.path.commonpath(existing)
    except ValueError:  # paths on different drives
        here = os.getcwd()
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    while True:
        candidate = os.path.join(here, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _strings(value: Any, key: str, path: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise XferbenchError(f"{path}: [tool.xferbench.lint] {key} must be a list of strings, "
                             f"not {value!r}")
    return tuple(value)


def load_config(path: str | None) -> Config:
    """The lint section of ``path`` (a pyproject.toml); raises XferbenchError, one sentence,
    for unreadable TOML, an unknown key, a wrong type or an unknown rule code."""
    if path is None:
        return Config()
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise XferbenchError(f"{path} cannot be read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise XferbenchError(f"{path} is not valid TOML ({exc})") from None
    section = data.get("tool", {}).get("xferbench", {}).get("lint")
    if section is None:
        return Config(path=path, base=os.path.dirname(os.path.abspath(path)))
    if not isinstance(section, dict):
        raise XferbenchError(f"{path}: [tool.xferbench.lint] must be a table")
    unknown = sorted(set(section) - set(KEYS))
    if unknown:
        raise XferbenchError(f"{path}: [tool.xferbench.lint] has no key {unknown[0]!r}: it "
                             f"takes {', '.join(KEYS)}")
    where = f"{path} [tool.xferbench.lint]"
    select = _strings(section.get("select", []), "select", path)
    ignore = _strings(section.get("ignore", []), "ignore", path)
    expand(list(select), f"{where} select")
    expand(list(ignore), f"{where} ignore")
    fail_on = section.get("fail-on")
    if fail_on is not None and fail_on not in (*SEVERITIES, "never"):
        raise XferbenchError(f"{where} fail-on {fail_on!r} is not a severity: use "
                             f"{', '.join(SEVERITIES)} or never")
    intended = _strings(section.get("intended-reads", []), "intended-reads", path)
    for pattern in intended:
        if not re.fullmatch(r"[\w.*?\[\]!]+", pattern):
            raise XferbenchError(f"{where} intended-reads {pattern!r} is not a function name: "
                                 "give a name or Class.method, with * and ? as wildcards")
    return Config(path=path, select=select, ignore=ignore, fail_on=fail_on,
                  exclude=_strings(section.get("exclude", []), "exclude", path),
                  base=os.path.dirname(os.path.abspath(path)), intended_reads=intended)
