"""The user's line: the first Python frame, walking out from an event, that is not in torch,
in xferbench or in the standard library (contextlib, functools, runpy...)."""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
from types import FrameType

from .events import UNKNOWN_SITE, CallSite

#: Packages whose frames are never the user's line (besides the standard library).
INTERNAL_PACKAGES = ("torch", "functorch", "torchgen", "xferbench")
#: The frame nn.Module.to() / .cuda() moves each parameter from.
_MODULE_APPLY = ("_apply", os.path.join("nn", "modules", "module.py"))

_internal: dict[str, bool] = {}
_roots: tuple[str, ...] | None = None


def _internal_roots() -> tuple[str, ...]:
    global _roots
    if _roots is None:
        found = []
        for name in INTERNAL_PACKAGES:
            module = sys.modules.get(name)
            path = getattr(module, "__file__", None)
            if path:
                found.append(os.path.dirname(os.path.abspath(path)) + os.sep)
        _roots = tuple(found)
    return _roots


def _stdlib_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(sorted({os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib")
                         if paths.get(k)}))


def is_internal(filename: str) -> bool:
    """Whether a frame in ``filename`` belongs to torch, xferbench or the standard library
    (third-party packages under site-packages are the user's, as far as the audit goes)."""
    known = _internal.get(filename)
    if known is not None:
        return known
    if filename.startswith("<frozen"):
        result = True
    elif filename.startswith("<"):
        result = False  # exec'd or interactive code is the user's
    else:
        path = os.path.abspath(filename)
        in_site = "site-packages" in path or "dist-packages" in path
        result = path.startswith(_internal_roots()) or (
            not in_site and path.startswith(_stdlib_roots()))
    _internal[filename] = result
    return result


def user_frame(frame: FrameType | None) -> tuple[FrameType | None, bool]:
    """The first frame from ``frame`` outwards that is the user's (None if there is none),
    and whether the walk passed through ``nn.Module._apply`` (a module moving its tensors)."""
    module_move = False
    while frame is not None:
        code = frame.f_code
        if not is_internal(code.co_filename):
            return frame, module_move
        if code.co_name == _MODULE_APPLY[0] and code.co_filename.endswith(_MODULE_APPLY[1]):
            module_move = True
        frame = frame.f_back
    return None, module_move


def site_of(frame: FrameType | None) -> CallSite:
    """The ``CallSite`` of a frame (its file, current line, function and source text)."""
    if frame is None:
        return UNKNOWN_SITE
    code = frame.f_code
    line = frame.f_lineno or 0
    text = linecache.getline(code.co_filename, line).strip()
    return CallSite(code.co_filename, line, code.co_name, text)
