"""``--fix``: the two rewrites that keep a program's meaning, made with LibCST so the file
keeps its formatting and comments: create-then-move (XB102, ``torch.zeros(n).to(dev)`` ->
``torch.zeros(n, device=dev)``) and discarded-to (XB103, ``t.to(dev)`` -> ``t = t.to(dev)``).
A rewritten file is parsed before it is written, and written atomically (a temporary file in
the same folder, then a rename), with its permissions.

LibCST is imported inside the functions that use it: only --fix needs it, and it is an
optional extra (``pip install 'xferbench[lint]'``)."""

from __future__ import annotations

import ast
import io
import os
import tempfile
import tokenize
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
    """``raw`` with every fixable finding of ``findings`` rewritten (columns in characters).

    LibCST parses only the statements that hold a fix (the innermost that starts and ends
    its own lines), each alone, and the rewrite is spliced back: its parse of a whole file
    grows with the file (minutes and gigabytes for a few megabytes). Where no such statement
    holds a fix (``a = 1; t.to(d)`` at the top), the whole file is parsed."""
    cst = _libcst()
    fixes = [f for f in findings if f.fix and f.code in ("XB102", "XB103")]
    if not fixes:
        return raw
    encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    text = raw.decode(encoding)
    lines = text.splitlines(keepends=True)
    regions = _regions(ast.parse(text), lines, fixes)
    if regions is None:
        return _fix_module(cst, cst.parse_module(raw), fixes, 0).bytes
    for first, last, group in reversed(regions):
        if all(f.code == "XB103" and f.fix_region is not None for f in group):
            lines[first - 1:last] = _assigned(lines[first - 1:last], first, group)
        else:
            lines[first - 1:last] = [_fix_region(cst, lines[first - 1:last], first, group)]
    return "".join(lines).encode(encoding)


def _assigned(lines: list[str], first: int, fixes: list[Finding]) -> list[str]:
    """XB103 made as LibCST makes it, without its parse: ``t.to(d)`` as a statement gets
    ``t = `` before it (the fix's text, up to its call)."""
    out = list(lines)
    for f in sorted(fixes, key=lambda f: (f.line, f.col), reverse=True):
        i = f.line - first
        name = str(f.fix).split(" = ", 1)[0]
        out[i] = f"{out[i][:f.col]}{name} = {out[i][f.col:]}"
    return out


def _fix_module(cst: Any, module: Any, fixes: list[Finding], shift: int) -> Any:
    """``module`` with ``fixes`` made; a fix's line is ``shift`` below the module's."""
    created = {(f.line - shift, f.col) for f in fixes if f.code == "XB102"}
    dropped = {(f.line - shift, f.col) for f in fixes if f.code == "XB103"}
    wrapper = cst.metadata.MetadataWrapper(module, unsafe_skip_copy=True)  # parsed for this
    return wrapper.visit(_transformer(cst, created, dropped))


def _fix_region(cst: Any, lines: list[str], first: int, fixes: list[Finding]) -> str:
    """The statement on ``lines`` (from line ``first``) with ``fixes`` made, parsed alone:
    an indented one inside an ``if True:`` that is taken off again."""
    newline = "\r\n" if lines[0].endswith("\r\n") else "\n"
    body = "".join(lines)
    ended = body.endswith(("\n", "\r"))
    body = body if ended else body + newline
    indented = lines[0][:1] in (" ", "\t")
    source = f"if True:{newline}{body}" if indented else body
    fixed = _fix_module(cst, cst.parse_module(source), fixes, first - 1 - indented).code
    if indented:
        fixed = fixed.split(newline, 1)[1]
    return fixed if ended else fixed.removesuffix(newline)


#: A statement that opens with these goes with the one before it (``elif``, ``else``...).
CONTINUES = ("elif", "else", "except", "finally")


def _regions(tree: ast.Module, lines: list[str],
             fixes: list[Finding]) -> list[tuple[int, int, list[Finding]]] | None:
    """(first line, last line, fixes) of the statements to parse, in order, none inside
    another; None where a fix lies in no statement that has its lines to itself."""
    owner: dict[int, ast.stmt] = {}
    parent: dict[ast.stmt, ast.stmt | None] = {}
    todo: list[tuple[ast.stmt, ast.stmt | None]] = [(s, None) for s in tree.body]
    while todo:  # parents before children: each line's owner is its innermost statement
        node, up = todo.pop()
        parent[node] = up
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
            owner[line] = node
        todo += [(c, node) for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]
        todo += [(c, node) for h in getattr(node, "handlers", []) for c in h.body]
        todo += [(c, node) for case in getattr(node, "cases", []) for c in case.body]
    spans: dict[tuple[int, int], list[Finding]] = {}
    for f in fixes:
        stmt: ast.stmt | None = owner.get(f.line)
        while stmt is not None and not _own_lines(stmt, lines):
            stmt = parent[stmt]
        if stmt is None:
            return None
        spans.setdefault((stmt.lineno, stmt.end_lineno or stmt.lineno), []).append(f)
    out: list[tuple[int, int, list[Finding]]] = []
    for (first, last), group in sorted(spans.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        if out and first <= out[-1][1]:  # inside the one before: parsed with it
            out[-1][2].extend(group)
        else:
            out.append((first, last, list(group)))
    return out


def _own_lines(node: ast.stmt, lines: list[str]) -> bool:
    """Whether ``node`` starts and ends its lines (a comment may follow), opening with no
    keyword that continues another statement."""
    head = lines[node.lineno - 1].encode("utf-8")
    tail = lines[(node.end_lineno or node.lineno) - 1].encode("utf-8")
    after = tail[node.end_col_offset or 0:].strip()
    return (not head[:node.col_offset].strip() and (not after or after.startswith(b"#"))
            and not head.lstrip().startswith(tuple(k.encode() for k in CONTINUES)))


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
