"""The rules: codes, names, severities, what each finds, which price it carries; the
``Finding`` a rule reports; choosing rules by code or prefix (``--select``, ``--ignore``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import XferbenchError

SEVERITIES = ("info", "warning", "error")


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str
    summary: str  # one line: what it finds
    price_key: str | None = None  # the PriceBook key of its practice
    fixable: bool = False


RULES: tuple[Rule, ...] = (
    Rule("XB101", "sync-in-loop", "warning",
         "a host read of a device tensor (.item(), .cpu(), .tolist(), float(), print(), "
         "formatting, math.isnan(), if tensor:) every training step (in a training loop or "
         "a function it calls); info where it runs only every N steps",
         "item_per_epoch"),
    Rule("XB102", "create-then-move", "warning",
         "a factory that fills host memory (torch.zeros, ones, full, empty, rand, randn, "
         "randint, randperm, arange, linspace, logspace, eye, or a legacy constructor given "
         "sizes: torch.Tensor(n, k)), then moved to a device",
         "create_on_device", fixable=True),
    Rule("XB103", "discarded-to", "error",
         "t.to(dev), t.cuda() or t.cpu() as a statement on a tensor: tensors are not moved "
         "in place, the result is dropped", fixable=True),
    Rule("XB104", "module-move-in-loop", "warning",
         "model.to(dev) or model.cuda() on a module inside the batch loop",
         "model_move_in_loop"),
    Rule("XB105", "non-blocking-from-pageable", "info",
         ".to(dev, non_blocking=True) from a tensor provably made in pageable memory (without "
         "pin_memory)", "pinned_vs_pageable"),
    Rule("XB106", "read-before-sync", "error",
         "the result of .to('cpu', non_blocking=True) read on the host before any "
         "synchronise"),
    Rule("XB107", "unsynchronised-timing", "warning",
         "a time.time()/perf_counter()/monotonic() interval around device work whose end is "
         "read without a synchronise before it"),
    Rule("XB108", "pin-then-copy", "info",
         "t.pin_memory().to(dev, non_blocking=True) per batch on the main thread",
         "pin_then_copy"),
    Rule("XB109", "sync-every-step", "warning",
         "an explicit synchronise (torch.cuda.synchronize(), torch.accelerator.synchronize(), "
         "the current stream's) every training step that no timer reads the clock after: a "
         "full drain of the device", "sync_per_step"),
    Rule("XB110", "loader-not-pinned", "warning",
         "a DataLoader built without pin_memory=True whose batches are copied with "
         ".to(dev, non_blocking=True): from pageable memory that copy is not asynchronous",
         "pinned_prefetch"),
)
BY_CODE = {r.code: r for r in RULES}
CODES = tuple(BY_CODE)


@dataclass(frozen=True)
class Finding:
    """One reported problem; ``line`` 1-based, ``col`` 0-based (as ast and flake8 count)."""

    path: str
    line: int
    col: int
    code: str
    message: str
    severity: str
    fix: str | None = None  # the rewrite --fix makes, where it makes one
    # what the rewrite replaces: (line, col, end line, end col), 1-based lines, 0-based
    # columns in characters, the end exclusive
    fix_region: tuple[int, int, int, int] | None = None
    price: dict | None = None  # the practice's price (PriceBook), attached by the runner
    cell: int | None = None  # in a notebook: the cell (from 1), ``line`` then the cell's line

    @property
    def name(self) -> str:
        return BY_CODE[self.code].name

    @property
    def where(self) -> str:
        """The file, and in a notebook the cell: "train.ipynb:cell 3"."""
        return self.path if self.cell is None else f"{self.path}:cell {self.cell}"

    def sort_key(self) -> tuple:
        return (self.path, self.cell or 0, self.line, self.col, self.code)


def expand(items: list[str] | tuple[str, ...], what: str) -> set[str]:
    """Codes and prefixes ("XB1", "XB") into codes; an item that names none raises."""
    out: set[str] = set()
    for item in items:
        item = item.strip().upper()
        if not item:
            continue
        found = {c for c in CODES if c.startswith(item)}
        if not found:
            raise XferbenchError(
                f"{what} names {item!r}, which is not an xferbench lint rule: the rules are "
                f"{', '.join(CODES)} (a prefix such as XB10 selects several)")
        out |= found
    return out


def choose(select: list[str] | None, ignore: list[str] | None) -> frozenset[str]:
    """The codes to report: ``select`` (default all) less ``ignore``."""
    chosen = expand(select, "--select") if select else set(CODES)
    return frozenset(chosen - expand(ignore or [], "--ignore"))


def at_or_above(severity: str) -> tuple[str, ...]:
    """The severities that fail the run at ``--fail-on severity`` ("never": none)."""
    if severity == "never":
        return ()
    if severity not in SEVERITIES:
        raise XferbenchError(f"--fail-on {severity!r} is not a severity: use "
                             f"{', '.join(SEVERITIES)} or never")
    return SEVERITIES[SEVERITIES.index(severity):]
