"""Findings as text (flake8's ``path:line:col: CODE message``, then each price once), as JSON
(a list of objects) and as SARIF 2.1.0 (for GitHub code scanning); and the prices they carry,
from a ``PriceBook``."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any
from urllib.parse import quote

from ..analysis.prices import PriceBook
from ..version import __version__
from .rules import BY_CODE, RULES, Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {"info": "note", "warning": "warning", "error": "error"}


def price_of(book: PriceBook, key: str) -> dict[str, Any]:
    """A finding's ``price``: the GPU figure of its practice, or why there is none."""
    p = book.get(key)
    if p is None:
        # one machine's figure, said to be a CPU's, rather than every series' name
        cpu = book.get(key, allow_cpu=True)
        text = book.reason(key) if cpu is None else (
            f"no GPU price yet (measured on a CPU only, not a GPU figure): {cpu.text()}")
        return {"key": key, "gpu": False, "text": text, "short": "no GPU price yet",
                "ratio": None, "practice_s": None, "baseline_s": None, "noise": None,
                "machine": None, "gpu_name": None, "torch": None,
                "command": cpu.command if cpu is not None else None, "source": book.source}
    return {"key": key, "gpu": True, "text": p.text(), "ratio": p.ratio,
            "short": (f"measured: {p.measure} {1 / p.ratio:.2f}x of {p.fixed} on "
                      f"{p.series.gpu}, torch {p.series.torch}"),
            "practice_s": p.practice_s, "baseline_s": p.baseline_s, "noise": p.noise,
            "machine": p.series.machine, "gpu_name": p.series.gpu, "torch": p.series.torch,
            "command": p.command, "source": book.source}


def priced(findings: list[Finding], book: PriceBook | None) -> list[Finding]:
    if book is None:
        return findings
    cache: dict[str, dict[str, Any]] = {}
    out = []
    for f in findings:
        key = BY_CODE[f.code].price_key
        if key is None:
            out.append(f)
            continue
        if key not in cache:
            cache[key] = price_of(book, key)
        out.append(dataclasses.replace(f, price=cache[key]))
    return out


def text_lines(findings: list[Finding]) -> list[str]:
    lines = []
    prices: dict[str, dict[str, Any]] = {}
    for f in findings:
        tail = ""
        if f.price is not None:
            tail = f" [{f.price['short']}]"
            prices.setdefault(f.code, f.price)
        lines.append(f"{f.where}:{f.line}:{f.col + 1}: {f.code} {f.message}{tail}")
    if prices:
        lines.append("")
        lines.append("Prices (from " + next(iter(prices.values()))["source"] + "):")
        for code, p in sorted(prices.items()):
            cite = f" [{p['command']}]" if p["command"] else ""
            lines.append(f"  {code} {BY_CODE[code].name}: {p['text']}{cite}")
    return lines


def as_json(findings: list[Finding]) -> str:
    rows = [{"path": f.path, "line": f.line, "col": f.col + 1, "code": f.code, "name": f.name,
             "severity": f.severity, "message": f.message, "fix": f.fix, "price": f.price}
            | ({} if f.cell is None else {"cell": f.cell}) for f in findings]
    return json.dumps(rows, indent=2)


def _uri(path: str) -> str:
    rel = os.path.relpath(path) if os.path.isabs(path) else os.path.normpath(path)
    if rel.startswith(".."):
        rel = os.path.abspath(path)
        return "file://" + quote(rel.replace(os.sep, "/"))
    return quote(rel.replace(os.sep, "/"))


def _rule(r: Any) -> dict[str, Any]:
    return {"id": r.code, "name": r.name,
            "shortDescription": {"text": f"{r.name}: {r.summary}"},
            "fullDescription": {"text": r.summary},
            "help": {"text": f"{r.code} {r.name}: {r.summary}. See docs/lint.md in xferbench."},
            "defaultConfiguration": {"level": SARIF_LEVEL[r.severity]},
            "properties": {"tags": ["performance", "pytorch"], "precision": "high",
                           "priced": r.price_key is not None, "fixable": r.fixable}}


def _fix(f: Finding, region: tuple[int, int, int, int]) -> dict[str, Any]:
    """SARIF's fix: the ``region`` --fix replaces and the text it puts there (code scanning
    shows it as a suggested change)."""
    line, col, end_line, end_col = region
    return {"description": {"text": f"xferbench lint --fix: {f.fix}"},
            "artifactChanges": [{
                "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "%SRCROOT%"},
                "replacements": [{
                    "deletedRegion": {"startLine": line, "startColumn": col + 1,
                                      "endLine": end_line, "endColumn": end_col + 1},
                    "insertedContent": {"text": f.fix}}]}]}


def as_sarif(findings: list[Finding], notes: list[str]) -> str:
    """One SARIF 2.1.0 log: the rules, each finding as a result, and the files not linted
    (with their sentence) as tool notifications."""
    index = {r.code: i for i, r in enumerate(RULES)}
    results = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.code, "ruleIndex": index[f.code], "level": SARIF_LEVEL[f.severity],
            "message": {"text": f.message + (f" [{f.price['short']}]" if f.price else "")},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": f.line, "startColumn": f.col + 1}}}],
        }
        properties = {k: v for k, v in (("fix", f.fix), ("price", f.price), ("cell", f.cell))
                      if v is not None}
        if properties:
            result["properties"] = properties
        if f.fix is not None and f.fix_region is not None:
            result["fixes"] = [_fix(f, f.fix_region)]
        results.append(result)
    run = {
        "tool": {"driver": {"name": "xferbench lint", "version": __version__,
                            "rules": [_rule(r) for r in RULES]}},
        "originalUriBaseIds": {"%SRCROOT%": {
            "uri": "file://" + quote(os.getcwd().replace(os.sep, "/").rstrip("/") + "/")}},
        "columnKind": "unicodeCodePoints",
        "results": results,
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": [
            {"level": "warning", "message": {"text": n}} for n in notes]}],
    }
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)
