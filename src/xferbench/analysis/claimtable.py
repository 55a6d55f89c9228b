"""The claims table: each piece of advice the suite settles, as data (``data/claims.toml``,
or a table of the same form), read and checked here. A claim names its sources, the figures
that decide it and its rule; never a verdict (``claims.py`` computes those from results).

Bad input is one sentence (``XferbenchError``, exit 2): a table that does not parse, a claim
without what a rule needs, a rule that cannot be evaluated (an unknown kind or word, a
threshold out of range, figures of different units compared, a word the unit has not), and,
in ``check_figures``, a figure the suite does not declare (benchmark, parameter or value).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from ..errors import XferbenchError
from ..results.discovery import Declared
from ..results.safefiles import read_regular
from .comparisons import Figure, comparison
from .reference import CLAIM_CONDITIONS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: The table's format. Changelog: 1: first version; 2: a ratio's evidence may name a
#: comparison (``comparisons.py``) instead of giving its two figures. Both are read.
TABLE_VERSIONS = (1, 2)
RATIO = "ratio"
VALUE = "value"
#: The words a ratio rule may expect of the practice, by the kind of unit (stats.verdict's).
TIME_WORDS = ("faster", "slower")
OTHER_WORDS = ("lower", "higher")
OPPOSITE = {"faster": "slower", "slower": "faster", "lower": "higher", "higher": "lower"}
#: A value rule's comparisons of the figure with its bound.
OPS = {"at_least": ">=", "above": ">", "equal": "==", "at_most": "<=", "below": "<"}
OP_WORDS = {"at_least": "at least", "above": "above", "equal": "equal to",
            "at_most": "at most", "below": "below"}
_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")

#: The verdicts a claim can have in a series (``claims.py`` gives them).
HOLDS = "holds"
DOES_NOT_HOLD = "does not hold"
CANNOT_TELL = "cannot tell"
NOT_MEASURABLE = "not measurable here"
NOT_MEASURED = "not measured"
#: A claim whose ``unless`` the reference ranges say holds on the series' machine (pinned is
#: faster, where pageable is nearly pinned): reported for that machine, never as universal.
DOES_NOT_APPLY = "does not apply"
#: Every verdict, in the order a claim with several figures takes the first that applies.
VERDICTS = (DOES_NOT_HOLD, NOT_MEASURABLE, NOT_MEASURED, CANNOT_TELL, HOLDS)
#: The verdicts that come from numbers: a change among these is a change of verdict.
DECIDED = (HOLDS, DOES_NOT_HOLD, CANNOT_TELL)


@dataclass(frozen=True)
class ClaimSource:
    document: str
    url: str
    section: str


#: A figure a claim reads: one benchmark at one full parameter combination.
ClaimFigure = Figure


@dataclass(frozen=True)
class Evidence:
    """A ratio rule's practice against its baseline, or a value rule's one figure."""

    practice: ClaimFigure
    baseline: ClaimFigure | None = None

    @property
    def figures(self) -> tuple[ClaimFigure, ...]:
        return (self.practice,) if self.baseline is None else (self.practice, self.baseline)


@dataclass(frozen=True)
class ClaimRule:
    kind: str  # RATIO or VALUE
    expect: str = ""  # ratio: the word the verdict must say of the practice
    threshold: float = 0.0  # ratio: the smallest change that counts
    op: str = ""  # value: a key of OPS
    bound: float = 0.0  # value: what the figure is compared with

    def describe(self) -> str:
        if self.kind == RATIO:
            return (f"the practice is {self.expect} than its baseline by more than "
                    f"{self.threshold:.0%} (Mann-Whitney U on the samples)")
        return f"the figure is {OP_WORDS[self.op]} {self.bound:g}"


@dataclass(frozen=True)
class Claim:
    id: str
    title: str
    text: str
    sources: tuple[ClaimSource, ...]
    rule: ClaimRule
    evidence: tuple[Evidence, ...]
    cpu_reason: str = ""  # the CPU measures the figures but cannot decide the claim: why
    cpu_note: str = ""  # the CPU decides it: what its figures mean there
    unless: str = ""  # a reference.CLAIM_CONDITIONS key: where it holds, the claim does not apply

    @property
    def figures(self) -> tuple[ClaimFigure, ...]:
        return tuple(f for e in self.evidence for f in e.figures)


@dataclass(frozen=True)
class ClaimTable:
    path: str
    claims: tuple[Claim, ...]

    def get(self, claim_id: str) -> Claim:
        for c in self.claims:
            if c.id == claim_id:
                return c
        raise XferbenchError(f"claim {claim_id!r} is not in {self.path}: it holds "
                             f"{', '.join(c.id for c in self.claims)}")


def shipped_path() -> str:
    return str(files("xferbench") / "data" / "claims.toml")


def load_table(path: str | None = None) -> ClaimTable:
    """The claims table at ``path`` (default: the one shipped), checked for every rule."""
    path = path or shipped_path()
    shown = path if path != shipped_path() else "xferbench's claims table"
    try:
        data = tomllib.loads(read_regular(path, "claims table").decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise XferbenchError(f"claims table {path} is not TOML: {exc}") from None
    version = data.get("version", 1)
    if version not in TABLE_VERSIONS:
        raise XferbenchError(f"claims table {shown} has version {version!r}: this xferbench "
                             f"reads versions {' and '.join(map(str, TABLE_VERSIONS))}")
    sources = data.get("sources")
    claims = data.get("claims")
    if not isinstance(sources, dict) or not isinstance(claims, list) or not claims:
        raise XferbenchError(f"claims table {shown} needs [sources.NAME] tables and at least "
                             "one [[claims]] entry")
    out = tuple(_claim(shown, c, sources, i) for i, c in enumerate(claims))
    ids = [c.id for c in out]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise XferbenchError(f"claims table {shown} names claim {twice[0]!r} twice")
    return ClaimTable(os.path.abspath(path) if shown == path else shown, out)


def _text(where: str, data: Mapping[str, Any], key: str, required: bool = True) -> str:
    value = data.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise XferbenchError(f"{where}: {key!r} must be text" + (" (given none)" if required
                                                                   and not value else ""))
    return value.strip()


def _claim(table: str, data: Any, sources: Mapping[str, Any], i: int) -> Claim:
    if not isinstance(data, dict):
        raise XferbenchError(f"claims table {table}: entry {i + 1} is not a table")
    claim_id = data.get("id")
    where = f"claims table {table}: claim {claim_id!r}"
    if not isinstance(claim_id, str) or not _ID.fullmatch(claim_id):
        raise XferbenchError(f"claims table {table}: entry {i + 1} needs an id of lower-case "
                             f"words joined by '-' (given {claim_id!r})")
    cited = data.get("sources")
    if not isinstance(cited, list) or not cited:
        raise XferbenchError(f"{where}: 'sources' must list {{doc, section}} tables")
    refs = []
    for s in cited:
        doc = s.get("doc") if isinstance(s, dict) else None
        source = sources.get(doc) if isinstance(doc, str) else None
        if not isinstance(source, dict):
            raise XferbenchError(f"{where}: source {doc!r} is not one of the table's "
                                 f"[sources]: {', '.join(sources)}")
        refs.append(ClaimSource(_text(where, source, "document"),
                                _text(where, source, "url", required=False),
                                _text(where, s, "section")))
    rule = _rule(where, data.get("rule"))
    evidence = data.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        raise XferbenchError(f"{where}: it needs at least one [[claims.evidence]]")
    claim = Claim(claim_id, _text(where, data, "title"), _text(where, data, "text"),
                  tuple(refs), rule, tuple(_evidence(where, rule, e) for e in evidence),
                  _text(where, data, "cpu_reason", required=False),
                  _text(where, data, "cpu_note", required=False),
                  _text(where, data, "unless", required=False))
    if claim.unless and claim.unless not in CLAIM_CONDITIONS:
        raise XferbenchError(f"{where}: unless {claim.unless!r} is not one of "
                             f"{', '.join(CLAIM_CONDITIONS)}")
    if claim.cpu_reason and claim.cpu_note:
        raise XferbenchError(f"{where}: give cpu_reason (a CPU cannot decide it) or cpu_note "
                             "(what a CPU's figures mean), not both")
    return claim


def _number(where: str, rule: Mapping[str, Any], key: str) -> float:
    value = rule.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise XferbenchError(f"{where}: the rule's {key} must be a number (given {value!r})")
    return float(value)


def _rule(where: str, data: Any) -> ClaimRule:
    if not isinstance(data, dict):
        raise XferbenchError(f"{where}: 'rule' must be a table (kind = \"ratio\" or \"value\")")
    kind = data.get("kind")
    if kind == RATIO:
        expect = data.get("expect")
        if expect not in OPPOSITE:
            raise XferbenchError(f"{where}: a ratio rule cannot be evaluated with expect "
                                 f"{expect!r}: use {', '.join(OPPOSITE)}")
        threshold = _number(where, data, "threshold")
        if not 0 <= threshold < 1:
            raise XferbenchError(f"{where}: the threshold {threshold:g} is not a change from 0 "
                                 "up to, not including, 1 (0.10 is 10%)")
        return ClaimRule(RATIO, expect=expect, threshold=threshold)
    if kind == VALUE:
        op = data.get("op")
        if op not in OPS:
            raise XferbenchError(f"{where}: a value rule cannot be evaluated with op {op!r}: "
                                 f"use {', '.join(OPS)}")
        return ClaimRule(VALUE, op=op, bound=_number(where, data, "bound"))
    raise XferbenchError(f"{where}: rule kind {kind!r} cannot be evaluated: use ratio or value")


def _figure(where: str, data: Any, role: str) -> ClaimFigure:
    if not isinstance(data, dict):
        raise XferbenchError(f"{where}: its evidence needs a {role} "
                             "{name, benchmark, params}")
    params = data.get("params", {})
    if not isinstance(params, dict) or not all(isinstance(v, str) for v in params.values()):
        raise XferbenchError(f"{where}: the {role}'s params must be a table of text values, "
                             "as `xferbench list` shows them")
    return ClaimFigure(_text(where, data, "name"), _text(where, data, "benchmark"),
                  tuple((str(k), v) for k, v in params.items()))


def _evidence(where: str, rule: ClaimRule, data: Any) -> Evidence:
    if not isinstance(data, dict):
        raise XferbenchError(f"{where}: an evidence entry is not a table")
    if rule.kind == RATIO:
        if "figure" in data:
            raise XferbenchError(f"{where}: a ratio rule compares a practice with a baseline, "
                                 "not one figure")
        if "comparison" in data:
            return _compared(where, data)
        return Evidence(_figure(where, data.get("practice"), "practice"),
                        _figure(where, data.get("baseline"), "baseline"))
    if "practice" in data or "baseline" in data:
        raise XferbenchError(f"{where}: a value rule reads one figure, not a practice and a "
                             "baseline")
    return Evidence(_figure(where, data.get("figure"), "figure"))


def _compared(where: str, data: Mapping[str, Any]) -> Evidence:
    """A ratio's evidence named by a comparison's id, its sides swapped with ``swap = true``
    (a claim that the practice is slower than its baseline)."""
    if "practice" in data or "baseline" in data:
        raise XferbenchError(f"{where}: an evidence entry names a comparison or gives a "
                             "practice and a baseline, not both")
    swap = data.get("swap", False)
    if not isinstance(swap, bool):
        raise XferbenchError(f"{where}: swap must be true or false (given {swap!r})")
    try:
        c = comparison(str(data["comparison"]))
    except XferbenchError as exc:
        raise XferbenchError(f"{where}: {exc}") from None
    return Evidence(c.baseline, c.practice) if swap else Evidence(c.practice, c.baseline)


def check_figures(table: ClaimTable, declared: Mapping[str, Declared]) -> None:
    """Every figure of ``table`` is one ``declared`` has (benchmark, every parameter, each
    value), and each ratio compares figures of one unit with a word that unit has."""
    for claim in table.claims:
        where = f"claims table {table.path}: claim {claim.id!r}"
        for figure in claim.figures:
            check_figure(where, figure, declared)
        if claim.rule.kind != RATIO:
            continue
        for e in claim.evidence:
            units = {declared[f.benchmark].unit for f in e.figures}
            if len(units) > 1:
                raise XferbenchError(f"{where}: its rule cannot be evaluated: it compares "
                                     f"{' with '.join(sorted(units))}")
            unit = units.pop()
            words = TIME_WORDS if unit == "seconds" or unit.endswith("/s") else OTHER_WORDS
            if claim.rule.expect not in words and unit != "unknown":
                raise XferbenchError(f"{where}: its rule cannot be evaluated: a figure in "
                                     f"{unit} is {' or '.join(words)}, never "
                                     f"{claim.rule.expect}")


def check_figure(where: str, figure: Figure, declared: Mapping[str, Declared]) -> None:
    """One sentence (XferbenchError) where the suite does not declare ``figure``: its
    benchmark, every parameter, each value."""
    d = declared.get(figure.benchmark)
    if d is None:
        near = sorted(n for n in declared if n.rsplit(".", 1)[0] == figure.benchmark.rsplit(
            ".", 1)[0]) or sorted(declared)[:3]
        raise XferbenchError(f"{where}: names {figure.benchmark}, which the suite does not "
                             f"have (it has {', '.join(near)}, ...)")
    given, wanted = list(figure.param_dict), list(d.param_names)
    if sorted(given) != sorted(wanted):
        raise XferbenchError(f"{where}: {figure.benchmark} takes the parameters "
                             f"{', '.join(wanted) or 'none'} (each once), given "
                             f"{', '.join(given) or 'none'}")
    for k, v in figure.params:
        if v not in d.values_of(k):
            raise XferbenchError(f"{where}: {k}={v} is not a value of {figure.benchmark}: "
                                 f"the suite has {', '.join(d.values_of(k))}")
