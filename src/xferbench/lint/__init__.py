"""``xferbench lint``: the transfer practices the suite measures, checked statically in a
user's own code, each finding priced from measured results.

One ast pass per file (``analyzer``, whose parts share one state, ``state.ModuleState``:
``walker`` and ``branches`` for statements, ``names`` for imports, module classes and
parameters, ``exprs``, ``reads``, ``calls`` and ``methods`` for expressions, ``moves`` for
``.to``/``.cuda``/``.cpu``, ``steps`` for training loops and the functions that run every
step; a module is walked again where its calls hand its functions device values); ``engine``
turns a file's
text into findings (noqa, chosen codes); ``files`` finds and reads files; ``runner`` lints
many, in worker processes; ``report`` writes text, JSON and SARIF and attaches prices;
``fix`` rewrites with LibCST; ``config`` reads ``[tool.xferbench.lint]``.
"""

from .engine import FileResult, lint_text
from .rules import CODES, RULES, Finding, Rule

__all__ = ["CODES", "RULES", "FileResult", "Finding", "Rule", "lint_text"]
