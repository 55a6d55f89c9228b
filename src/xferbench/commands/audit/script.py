"""The user's script, run as ``python SCRIPT ARGS...`` runs it: checked and compiled first
(one sentence where it cannot be), then executed as a fresh ``__main__`` with what Python
gives a script: ``__file__`` absolute, ``__loader__`` a ``SourceFileLoader``, ``__spec__``
None, ``__builtins__`` the module, ``sys.argv``, ``sys.path[0]`` its real folder,
``sys.modules["__main__"]`` (so its classes pickle, for spawned workers too), the streams'
error handling as Python set it; its exit status as Python's, and its traceback without the
audit's frames."""

from __future__ import annotations

import builtins
import contextlib
import os
import sys
import traceback
import types
from collections.abc import Iterator
from importlib.machinery import SourceFileLoader
from types import CodeType
from typing import Any

from ...errors import STREAM_ERRORS, XferbenchError
from ...lint.files import Unreadable, decode_source
from ...results.safefiles import NotReadable, path_kind, read_regular

#: Frames of these folders are the audit's own, never shown in the script's traceback.
OURS = (os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        os.path.dirname(os.path.abspath(contextlib.__file__)) + os.sep + "runpy",
        "<frozen runpy>")
#: The wrappers torch puts around a dispatch mode's handler (torch._disable_dynamo): frames
#: that exist only because the audit's mode is on.
MODE_WRAPPERS = (os.path.join("torch", "_compile.py"),
                 os.path.join("torch", "_dynamo", "eval_frame.py"))


def compile_script(path: str) -> CodeType:
    """``path`` compiled as Python compiles a script; one sentence where it is no Python
    script ``python`` could run: not a file (a folder, a FIFO, a link to nothing...), a
    notebook, JSON, bytes Python cannot read as source (binary, UTF-16, an unknown coding
    cookie), or source its parser refuses."""
    kind = path_kind(path)
    if not kind.is_file:
        raise XferbenchError(kind.refusal(f"the script {path}", "a Python script"))
    if path.endswith(".ipynb"):
        raise XferbenchError(
            f"the script {path} is a Jupyter notebook, which audit does not run: export its "
            f"code with `jupyter nbconvert --to script {path}` and audit the .py it writes")
    if path.endswith(".json"):
        raise XferbenchError(f"the script {path} is a JSON file, not a Python script")
    try:
        raw = read_regular(path, "the script")
        decode_source(raw, path)
    except NotReadable as exc:
        raise XferbenchError(str(exc)) from None
    except Unreadable as exc:
        why = str(exc).removeprefix(f"{path}: ").removesuffix("; skipped")
        raise XferbenchError(f"the script {path} cannot be run as Python: {why}") from None
    try:
        return compile(raw, script_file(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise XferbenchError(f"the script {path} cannot be compiled: {exc.msg} (line "
                             f"{exc.lineno})") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise XferbenchError(f"the script {path} cannot be compiled: nested too deeply or too "
                             f"big for Python's parser ({type(exc).__name__})") from None


def script_file(path: str) -> str:
    """``__file__`` as Python sets it: joined to the working folder, not normalised
    (``work/../linked/train.py`` stays so)."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


def main_module(path: str) -> types.ModuleType:
    """A ``__main__`` as Python makes one for ``python path``."""
    full = script_file(path)
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=full, __cached__=None, __package__=None, __spec__=None,
                           __loader__=SourceFileLoader("__main__", full),
                           __builtins__=builtins, __annotations__={})
    return module


@contextlib.contextmanager
def as_python(path: str, argv: list[str], module: types.ModuleType) -> Iterator[None]:
    """Within the block, the interpreter as ``python path argv`` sets it up: ``sys.argv``,
    ``sys.path[0]`` the script's real folder (in place of the folder xferbench started
    from, unless xferbench itself is imported from there), ``sys.modules["__main__"]``,
    and the streams' error handling as Python set it."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    saved_main = sys.modules.get("__main__")
    sys.argv = [path, *argv]
    folder = os.path.dirname(os.path.realpath(path))
    package_home = os.path.dirname(OURS[0])
    if sys.path and os.path.realpath(sys.path[0] or ".") != package_home:
        sys.path[0] = folder
    else:
        sys.path.insert(0, folder)
    sys.modules["__main__"] = module
    _stream_errors(STREAM_ERRORS)
    try:
        yield
    finally:
        _stream_errors({name: "backslashreplace" for name in STREAM_ERRORS})
        sys.argv = saved_argv
        sys.path[:] = saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


def _stream_errors(errors: dict[str, str]) -> None:
    """The process's own standard streams (``sys.__stdout__``: a JSON report may have
    pointed ``sys.stdout`` elsewhere) with these error handlers."""
    for name, handler in errors.items():
        with contextlib.suppress(AttributeError, ValueError, OSError):
            getattr(sys, f"__{name}__").reconfigure(errors=handler)


def run_script(path: str, argv: list[str], code: CodeType, audit: Any) -> int:
    """Run ``code`` (``path`` compiled) as ``python path argv`` would, under ``audit``; its
    exit status (its traceback printed, as Python prints it, when it raised)."""
    module = main_module(path)
    try:
        with as_python(path, argv, module), audit:
            exec(code, module.__dict__)
        return 0
    except SystemExit as exc:
        return exit_status(exc.code)
    except KeyboardInterrupt as exc:
        print_script_traceback(exc)
        return 130
    except BaseException as exc:  # the script's own error: shown as Python shows it
        print_script_traceback(exc)
        return 1


def exit_status(code: Any) -> int:
    """What Python exits with for ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def print_script_traceback(exc: BaseException) -> None:
    """The traceback as Python prints it for the script, without the audit's frames: its
    own before the script's, and from its dispatch hook on (an op that raises inside the
    hook ends at the script's call, as it would without the audit)."""
    shown = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    seen: set[int] = set()
    todo = [shown]
    while todo:
        part = todo.pop()
        if id(part) in seen:
            continue
        seen.add(id(part))
        part.stack = traceback.StackSummary.from_list(_scripts_frames(list(part.stack)))
        todo += [p for p in (part.__cause__, part.__context__) if p is not None]
    sys.stderr.write("".join(shown.format()))


def _scripts_frames(frames: list[Any]) -> list[Any]:
    while frames and frames[0].filename.startswith(OURS):
        frames = frames[1:]
    cut = next((i for i, f in enumerate(frames) if f.filename.startswith(OURS)), len(frames))
    while cut > 0 and frames[cut - 1].filename.endswith(MODE_WRAPPERS):
        cut -= 1
    return frames[:cut]
