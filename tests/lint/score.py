"""Precision and recall of each rule of ``xferbench lint`` on the project's own corpus
(tests/lint/corpus): a line that must be reported says so with ``# expect: XB101`` (or
``# expect: XB101/info`` where the severity is not the rule's default); every other line
must not be. Run it: ``python tests/lint/score.py`` prints the table (Markdown)."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from xferbench.lint import CODES, lint_text
from xferbench.lint.rules import BY_CODE

CORPUS = Path(__file__).resolve().parent / "corpus"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>XB\d{3}(?:/\w+)?(?:\s*,\s*XB\d{3}(?:/\w+)?)*)")


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    wrong_severity: int = 0
    misses: list[str] = field(default_factory=list)  # "path:line: XB101 (missed|false)"

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


def expectations(text: str) -> dict[tuple[int, str], str]:
    """(line, code) -> expected severity."""
    out = {}
    for i, line in enumerate(text.splitlines(), 1):
        m = EXPECT.search(line)
        if m:
            for item in re.split(r"\s*,\s*", m.group("codes")):
                code, _, severity = item.partition("/")
                out[(i, code)] = severity or BY_CODE[code].severity
    return out


def score(corpus: Path = CORPUS) -> dict[str, Score]:
    scores = {code: Score() for code in CODES}
    for path in sorted(corpus.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        expected = expectations(text)
        result = lint_text(text, str(path))
        assert result.problem is None, result.problem
        found = {(f.line, f.code): f.severity for f in result.findings}
        for key, severity in found.items():
            s = scores[key[1]]
            if key in expected:
                s.tp += 1
                if expected[key] != severity:
                    s.wrong_severity += 1
                    s.misses.append(f"{path.name}:{key[0]}: {key[1]} is {severity}, "
                                    f"expected {expected[key]}")
            else:
                s.fp += 1
                s.misses.append(f"{path.name}:{key[0]}: {key[1]} reported, not expected")
        for key in expected.keys() - found.keys():
            scores[key[1]].fn += 1
            scores[key[1]].misses.append(f"{path.name}:{key[0]}: {key[1]} expected, missed")
    return scores


def table(scores: dict[str, Score]) -> list[str]:
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.0%}"

    lines = ["| rule | name | expected | reported | true | false | missed | precision | recall |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for code, s in scores.items():
        lines.append(f"| {code} | {BY_CODE[code].name} | {s.tp + s.fn} | {s.tp + s.fp} | "
                     f"{s.tp} | {s.fp} | {s.fn} | {pct(s.precision)} | {pct(s.recall)} |")
    return lines


def main() -> int:
    scores = score()
    print("\n".join(table(scores)))
    problems = [m for s in scores.values() for m in s.misses]
    for m in problems:
        print(m, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
