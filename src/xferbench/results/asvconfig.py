"""One series per PyTorch version: the interpreter wrapper asv is handed, whose path names
torch, CUDA and the options that change the numbers, and its check before every asv call."""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile

from ..errors import XferbenchError
from .machines import slug
from .safefiles import write_text_safely


def interpreter_wrapper(torch_version: str, cuda: str, series: str = "") -> str:
    """A stable path, naming torch and CUDA, that runs this interpreter and no other.

    asv names an existing environment after its interpreter's absolute path; this path makes
    each (torch, CUDA) pair a series of its own, and ``series`` ("-quick", "-threads2") each
    set of options that changes the numbers: a quick run never replaces a full run's figures.
    The folder is named after a hash of this
    interpreter's real path, so another checkout's or venv's run, even of the same torch
    version, gets a wrapper of its own and can never point this run at its interpreter; the
    content is checked (``check_wrapper``) before every asv call.
    """
    interpreter = os.path.abspath(sys.executable)  # a venv's own path: its python is a link
    key = hashlib.sha256(interpreter.encode()).hexdigest()[:10]
    folder = os.path.join(tempfile.gettempdir(), f"xferbench-{os.getuid()}", key,
                          slug(f"torch{torch_version}-cuda{cuda}{series}"))
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "python")
    if not _wrapper_ok(path):
        write_text_safely(path, _wrapper_body(), what="the interpreter wrapper", mode=0o755)
    return path


def _wrapper_body() -> str:
    return f'#!/bin/sh\nexec "{sys.executable}" "$@"\n'


def _wrapper_ok(path: str) -> bool:
    try:
        with open(path) as fh:
            return fh.read() == _wrapper_body() and os.access(path, os.X_OK)
    except OSError:
        return False


def check_wrapper(path: str) -> None:
    """Raise XferbenchError unless the wrapper at ``path`` still runs this interpreter."""
    if not _wrapper_ok(path):
        raise XferbenchError(
            f"the interpreter wrapper {path} no longer runs {sys.executable}: something "
            "rewrote it during the run; results of this run so far are kept")
