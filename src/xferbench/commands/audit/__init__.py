"""``xferbench audit SCRIPT [ARGS...]``: run a user's script under the audit (its own
``__main__``, its own arguments) and print what each training step copied and waited for,
priced. The counting and the report are ``xferbench.auditing``'s; this is the command line.

Exit status: the script's own (0, its ``sys.exit`` code, 1 when it raised, 130 when
interrupted), with the report of the steps that ran; 2 for bad input (a script that does not
exist, ``--steps 0``, an absent device, an ``--out`` that cannot be written), in one sentence,
before the script runs.

The report is written once, whatever the script does: ``--out`` is checked (and resolved
against the folder the audit started in) before the script runs, and never names the script
or a file that is not an audit report; a script that ends in ``os._exit`` gets its report
before it goes; a child it forks writes none; a script that closes ``sys.stdout`` still gets
its report on the audit's standard output. How the script runs is ``script``'s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from ...analysis.prices import PriceBook
from ...auditing.auditor import Audit
from ...auditing.report import format_report
from ...devices import resolve_device, set_current_device
from ...errors import XferbenchError
from ...results.safefiles import check_writable, target_of, write_text_safely
from .script import compile_script, run_script

#: The audit's own options, recognised after the script's arguments too (as in
#: ``xferbench audit script.py [args...] [--steps N]``); after ``--`` everything is the
#: script's.
TRAILING = ("--steps", "--device", "--format", "--results", "--out")


def _steps(text: str) -> int:
    """argparse type of --steps: a whole number above 0."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(
            f"--steps {text!r} is not a number of steps: give a whole number above 0")
    return value


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--steps", type=_steps, metavar="N",
                        help="stop counting after N steps (the script runs on to its end)")
    parser.add_argument("--device", default=None,
                        help="the device the audit reports for, made current for the script: "
                             "auto (default: the accelerator PyTorch reports, else the CPU, "
                             "where the waits an accelerator would pay are counted, marked "
                             "not paid), cpu, cuda, cuda:N, xpu, mps, or a registered "
                             "PrivateUse1 backend (e.g. emu)")
    parser.add_argument("--format", choices=("text", "json"), default=None,
                        help="the report as text (default) or JSON (data/audit.schema.json); "
                             "with json and no --out, the script's own stdout goes to stderr")
    parser.add_argument("--results", default=None, metavar="DIR",
                        help="price from this results folder (default: the price table "
                             "shipped with xferbench)")
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="write the report to FILE instead of stdout")


def register_cli(sub: Any) -> None:
    p = sub.add_parser(
        "audit", allow_abbrev=False,
        usage="xferbench audit [-h] [--steps N] [--device DEVICE] [--format {text,json}] "
              "[--results DIR] [--out FILE] SCRIPT [ARGS ...]",
        help="run a script and report what each training step copies and waits for, priced",
        description="Run SCRIPT (as `python SCRIPT ARGS...` would) under the audit: the "
                    "copies between host and device per step (direction, bytes, pinned or "
                    "pageable, non_blocking asked and possible), the waits for the device "
                    "(.item(), .cpu(), bool(), nonzero, boolean masks, synchronize...), the "
                    "tensors made on the host and then moved, each at the script's line, "
                    "priced with the suite's measurements. A step ends at each optimizer "
                    "step. The audit's options may also follow the script's arguments; after "
                    "`--` every argument is the script's.",
        epilog="exit status: the script's own (1 when it raised), with the report of the "
               "steps that ran; 2 bad input (one sentence on stderr)")
    _options(p)
    # one REMAINDER for the script and its arguments: argparse keeps a `--` in it (with a
    # positional SCRIPT before it, it would drop the `--` that follows the script)
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="SCRIPT [ARGS ...]",
                   help="the Python file to run, then the script's arguments")
    p.set_defaults(func=cmd_audit, needs_torch=True)


def split_trailing(rest: list[str]) -> tuple[list[str], list[str]]:
    """(the audit's options found among the script's arguments, the script's arguments):
    ``--steps 3``/``--steps=3`` and the like before a ``--``; the ``--`` itself is dropped."""
    mine: list[str] = []
    script: list[str] = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "--":
            return mine, script + rest[i + 1:]
        name = arg.split("=", 1)[0]
        if name in TRAILING:
            takes = "=" not in arg and i + 1 < len(rest)
            mine += rest[i:i + 1 + takes]
            i += 1 + takes
            continue
        script.append(arg)
        i += 1
    return mine, script


def _merge(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with the script and its arguments split out (a ``--`` before the script: no
    audit option follows), and the audit's options found after the script's arguments
    applied (they win over the same option given before the script)."""
    argv = list(getattr(args, "argv", None) or [])
    if argv[:1] == ["--"]:
        argv, sealed = argv[1:], True
    else:
        sealed = False
    if not argv:
        raise XferbenchError("no script given: xferbench audit [options] SCRIPT [ARGS ...]")
    script, rest = argv[0], argv[1:]
    mine, script_args = ([], rest) if sealed else split_trailing(rest)
    merged = vars(args) | {"script": script, "args": script_args}
    if mine:
        parser = argparse.ArgumentParser(prog="xferbench audit", add_help=False,
                                         exit_on_error=False)
        _options(parser)
        try:
            late = parser.parse_args(mine)
        except argparse.ArgumentError as exc:
            raise XferbenchError(str(exc)) from None
        merged |= {k: v for k, v in vars(late).items() if v is not None}
    return argparse.Namespace(**merged)


def is_audit_report(path: str) -> bool:
    """Whether the file ``path`` holds an audit report (text, or JSON as ``--format json``
    writes it: its first keys), which ``--out`` may replace; anything else is the user's."""
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(1 << 16)
    except (OSError, UnicodeDecodeError):
        return False
    return not head.strip() or head.startswith("xferbench audit: ") or bool(re.match(
        r'\{\s*"schema_version": \d+,\s*"xferbench": "[^"]*",', head)) and '"step_count"' in head


def check_out(out: str | None, script: str) -> str | None:
    """``--out`` as an absolute path (the script may change folder), checked before the
    script runs: never the script, never a file that is not an audit report, a file whose
    folder exists and may be written."""
    if out is None:
        return None
    path = os.path.abspath(out)
    real = target_of(path)
    if os.path.exists(real) and os.path.exists(script) and os.path.samefile(real, script):
        raise XferbenchError(f"--out {out} is the script itself: the report would replace it; "
                             "give another file")
    check_writable(out, what="--out")  # named as given; resolved here, before any chdir
    if os.path.isfile(real) and not is_audit_report(real):
        raise XferbenchError(f"--out {out} exists and is not an audit report: the report would "
                             "replace it; give a new file, or delete it first")
    return path


def cmd_audit(args: argparse.Namespace) -> int:
    args = _merge(args)
    code = compile_script(args.script)
    out = check_out(args.out, args.script)
    device = resolve_device(args.device or "auto")
    # a broken --results folder is bad input: said before the script runs, not after
    book = PriceBook.load(args.results) if args.results is not None else None
    set_current_device(device)
    audit = Audit(device=device, steps=args.steps, results=args.results)
    report = _Report(args, audit, book, out, sys.stdout)
    try:
        with _stdout_to_stderr(args.format == "json" and not out), _kept_streams(), \
                _report_before_os_exit(report.deliver):
            status = run_script(args.script, args.args, code, audit)
        if os.getpid() != report.pid:  # a child the script forked: the parent reports
            raise SystemExit(status)
        report.deliver(status)
    finally:
        report.close()
    return status


class _Report:
    """The audit's report, written once: after the script, or as it calls ``os._exit``;
    never by a process it forked."""

    def __init__(self, args: argparse.Namespace, audit: Audit, book: PriceBook | None,
                 out: str | None, stdout: TextIO) -> None:
        self.args, self.audit, self.book, self.out = args, audit, book, out
        self.pid, self.done = os.getpid(), False
        self.stdout = stdout
        self.fd = os.dup(stdout.fileno()) if _has_fd(stdout) else None  # fd 1 as it is now

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def deliver(self, status: int) -> None:
        if self.done or os.getpid() != self.pid:
            return
        self.done = True
        self.audit.__exit__(None, None, None)  # os._exit comes inside the audit
        data = self.audit.report(self.book).to_dict()
        data["script"] = {"path": self.args.script, "args": list(self.args.args),
                          "exit_status": status}
        text = json.dumps(data, indent=2) if self.args.format == "json" \
            else "\n".join(format_report(data))
        if self.out:
            write_text_safely(self.out, text + "\n", what="--out")
            return
        # Any: reconfigure is io.TextIOWrapper's, which the stream written to may not be
        stream: Any = self.stdout if not _closed(self.stdout) else \
            os.fdopen(os.dup(self.fd), "w", encoding="utf-8") if self.fd is not None else None
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.flush()
            with contextlib.suppress(AttributeError, OSError, ValueError):
                stream.reconfigure(errors="backslashreplace")  # as os._exit cut the script
            stream.write(text + "\n")
            stream.flush()


def _has_fd(stream: Any) -> bool:
    try:
        stream.fileno()
        return True
    except (AttributeError, OSError, ValueError):
        return False


def _closed(stream: Any) -> bool:
    return stream is None or bool(getattr(stream, "closed", False))


@contextlib.contextmanager
def _kept_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr as they were before the script, after it (a script may close
    or replace them): a closed one is reopened over a copy of its descriptor."""
    saved = {"stdout": sys.stdout, "stderr": sys.stderr}
    fds = {name: os.dup(s.fileno()) for name, s in saved.items() if _has_fd(s)}
    try:
        yield
    finally:
        for name, stream in saved.items():
            if _closed(stream) and name in fds:
                stream = os.fdopen(os.dup(fds[name]), "w", encoding="utf-8")
            setattr(sys, name, stream)
        for fd in fds.values():
            os.close(fd)


@contextlib.contextmanager
def _report_before_os_exit(deliver: Callable[[int], None]) -> Iterator[None]:
    """A script that ends in ``os._exit(code)`` gets its report first (a forked child's
    ``os._exit`` is left alone)."""
    real = os._exit

    def _exit(code: int) -> None:
        with contextlib.suppress(Exception):
            deliver(code)
        real(code)

    os._exit = _exit  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


@contextlib.contextmanager
def _stdout_to_stderr(wanted: bool) -> Iterator[None]:
    """With a JSON report on stdout, the script's own prints go to stderr, so stdout holds
    the JSON alone."""
    if not wanted:
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield
