"""``--fix``: the two rewrites that keep a program's meaning, made with LibCST so the file
keeps its formatting and comments: create-then-move (XB102, ``torch.zeros(n).to(dev)`` ->
``torch.zeros(n, device=dev)``) and discarded-to (XB103, ``t.to(dev)`` -> ``t = t.to(dev)``).
A rewritten file is parsed before it is written, and written atomically (a temporary file in
the same folder, then a rename), with its permissions.

LibCST is imported inside the functions that use it: only --fix needs it, and it is an
optional extra (``pip install 'xferbench[lint]'``)."""

from __future__ import annotations

import ast
import os
import tempfile
from typing import Any

from ..errors import XferbenchError
from ..results.filesystem import read_regular
from .rules import Finding

MOVES = ("to", "cuda", "xpu", "mps")


def _libcst() -> Any:
    try:
        import libcst
        import libcst.metadata
    except ImportError:
        raise XferbenchError("--fix needs LibCST, which is not installed: pip install "
                             "'xferbench[lint]' (or libcst)") from None
    return libcst


def _device_arg(cst: Any, move: Any) -> Any:
    """The device expression of the move ``x.to(dev)`` / ``x.cuda()``."""
    attr = move.func.attr.value
    if attr != "to":
        return cst.SimpleString(f'"{attr}"')
    for arg in move.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            return arg.value
    return next(a.value for a in move.args if a.keyword is None)


def _with_device(cst: Any, factory: Any, device: Any) -> Any:
    args = list(factory.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "device":
            args[i] = arg.with_changes(value=device)
            return factory.with_changes(args=args)
    equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                            whitespace_after=cst.SimpleWhitespace(""))
    new = cst.Arg(value=device, keyword=cst.Name("device"), equal=equal)
    if not args:
        return factory.with_changes(args=[new])
    last = args[-1]
    if isinstance(last.comma, cst.Comma):  # a trailing comma: the new argument takes it
        inner = factory.whitespace_before_args
        space = inner if isinstance(inner, cst.ParenthesizedWhitespace) else \
            cst.SimpleWhitespace(" ")
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=space))
        new = new.with_changes(comma=last.comma)
    else:
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return factory.with_changes(args=[*args, new])


def _transformer(cst: Any, created: set[tuple[int, int]], dropped: set[tuple[int, int]]) -> Any:
    positions = cst.metadata.PositionProvider

    class Fixer(cst.CSTTransformer):
        METADATA_DEPENDENCIES = (positions,)

        def at(self, node: Any) -> tuple[int, int]:
            start = self.get_metadata(positions, node).start
            return (start.line, start.column)

        def leave_Call(self, original: Any, updated: Any) -> Any:
            func = original.func
            if not (isinstance(func, cst.Attribute) and func.attr.value in MOVES
                    and isinstance(func.value, cst.Call)):
                return updated
            if self.at(func.value) not in created and self.at(original) not in created:
                return updated
            fixed = _with_device(cst, updated.func.value, _device_arg(cst, updated))
            return fixed.with_changes(lpar=updated.lpar, rpar=updated.rpar)

        def leave_Expr(self, original: Any, updated: Any) -> Any:
            call = updated.value
            if self.at(original) not in dropped or not (
                    isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                    and isinstance(call.func.value, cst.Name)):
                return updated
            target = cst.AssignTarget(target=cst.Name(call.func.value.value))
            return cst.Assign(targets=[target], value=call, semicolon=updated.semicolon)

    return Fixer()


def fix_source(raw: bytes, findings: list[Finding]) -> bytes:
    """``raw`` with every fixable finding of ``findings`` rewritten (columns in characters)."""
    cst = _libcst()
    created = {(f.line, f.col) for f in findings if f.code == "XB102" and f.fix}
    dropped = {(f.line, f.col) for f in findings if f.code == "XB103" and f.fix}
    if not created and not dropped:
        return raw
    module = cst.parse_module(raw)
    wrapper = cst.metadata.MetadataWrapper(module)
    fixed = wrapper.visit(_transformer(cst, created, dropped))
    return fixed.bytes


class Changed(Exception):
    """The file changed while lint worked on it: one sentence, the file left as it is."""


def stamp(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def write_fixed(path: str, expected: bytes, seen: tuple[int, int, int], data: bytes) -> None:
    """Replace the bytes of the file ``path`` names (through a symbolic link: the target,
    the link kept) with ``data``, keeping its permissions; raises Changed, writing nothing,
    when the file no longer holds ``expected`` (read at ``seen``: an edit saved meanwhile).
    A file with other hard links is rewritten in place, so they stay one file; any other is
    replaced atomically (a temporary file beside it, fsync, a rename): on any error the
    original stays as it was."""
    target = os.path.realpath(path)
    st = os.stat(target)
    if (st.st_size, st.st_mtime_ns, st.st_ino) != seen or _read(target) != expected:
        raise Changed(f"{path}: changed while xferbench lint --fix worked on it; not fixed "
                      "(run it again)")
    if st.st_nlink > 1:
        with open(target, "r+b") as fh:
            fh.write(data)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
        return
    write_atomically(target, data)


def _read(path: str) -> bytes:
    return read_regular(path, "file")


def write_atomically(path: str, data: bytes) -> None:
    """Replace ``path``'s bytes in one rename, keeping its permissions; on any error the
    original stays as it was."""
    folder = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=".xferbench-fix-", suffix=".py", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def parses(data: bytes) -> bool:
    try:
        ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
