"""An asv plugin (asv.conf.json's ``plugins``) that makes stock asv label what it measured.

``asv run --python=same`` (or ``-E existing:PATH``) runs the suite on an interpreter that is
already set up, and asv labels the results with its matrix's requirements, which it never
checked there: the first torch of ``matrix.req.torch`` that ``exclude`` keeps, whatever torch
the interpreter has. This plugin, loaded by asv for every command run from this folder,
replaces that label for an existing environment with the torch the interpreter holds (read
from its ``torch/version.py``, torch not imported) and adds what changes the numbers, as
``xferbench run`` does: ``quick`` (XFERBENCH_QUICK), ``threads`` (OMP_NUM_THREADS, where set),
``sweep`` (XFERBENCH_SWEEP, where not the default) and ``device`` (XFERBENCH_DEVICE, where it
names one); each is also in the environment's name, so each torch and mode is a results file
of its own. Where it cannot label (an interpreter without torch; a quick or smoke run in asv's
own virtualenvs, whose names come from the matrix), asv stops before anything runs, with one
sentence and exit status 2.

``xferbench run`` writes its own asv configuration without this plugin: it labels its files
itself (``results.asvfiles.label_results``). Nothing here imports torch or asv at import: asv
discovers benchmarks in this folder too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

#: Run by the environment's interpreter: its torch's version.py, read without importing torch.
_TORCH_LABEL = r"""
import ast, importlib.util, json, os
spec = importlib.util.find_spec("torch")
out = {}
if spec is not None and spec.submodule_search_locations:
    path = os.path.join(list(spec.submodule_search_locations)[0], "version.py")
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError):
        tree = None
    for node in tree.body if tree else []:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and getattr(node, "value", None) is not None:
            try:
                out[target.id] = ast.literal_eval(node.value)
            except ValueError:
                pass
print(json.dumps({"torch": out.get("__version__"), "cuda": out.get("cuda"),
                  "hip": out.get("hip")}))
"""

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


def torch_of(executable: str) -> tuple[str, str] | None:
    """(torch, CUDA) of the torch ``executable`` would import ("2.13.0+cpu", "none"), as
    ``xferbench run`` labels them; None where it has no torch."""
    try:
        proc = subprocess.run([executable, "-c", _TORCH_LABEL], capture_output=True,
                              text=True, timeout=60, check=False)
        found = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None
    if not found.get("torch"):
        return None
    cuda = found.get("cuda") or (f"hip{found['hip']}" if found.get("hip") else "none")
    return str(found["torch"]), str(cuda)


def _flag(name: str) -> bool:
    text = os.environ.get(name, "").strip().lower()
    if text not in _TRUE + _FALSE:
        raise ValueError(f"{name}={os.environ[name]!r} is not a yes or no: use 1, true, yes or "
                         "on, or 0, false, no or off")
    return text in _TRUE


def series_labels() -> dict[str, str]:
    """What this asv run's environment variables change in the numbers, as the params
    ``xferbench run`` writes (``RunPlan.series_params``)."""
    labels = {"quick": "yes" if _flag("XFERBENCH_QUICK") else "no"}
    threads = os.environ.get("OMP_NUM_THREADS", "").strip()
    if threads:
        labels["threads"] = threads
    sweep = os.environ.get("XFERBENCH_SWEEP", "").strip()
    if sweep and sweep != "default":
        labels["sweep"] = sweep
    device = os.environ.get("XFERBENCH_DEVICE", "").strip()
    if device and device != "auto":
        labels["device"] = device
    return labels


def _refuse(message: str) -> SystemExit:
    """One sentence on stderr, and asv stopped with xferbench's exit status for bad input (2)
    before anything is written (asv's own UserError would be 1, or logged and skipped)."""
    print(message, file=sys.stderr, flush=True)
    return SystemExit(2)


def setup() -> None:
    """asv's plugin hook: label existing environments with what they measure."""
    from asv import environment

    base = environment.Environment
    if getattr(base, "_xferbench_labels", False):
        return
    base_create = base.create
    existing = environment.ExistingEnvironment
    existing_init = existing.__init__

    def create(self: Any) -> None:
        # an environment asv builds (virtualenv) is named after the matrix: it cannot keep a
        # quick or smoke run apart, so it does not start one (asv makes every matrix entry
        # an object even for --python=same: the check waits until one is created)
        try:
            labels = series_labels()
        except ValueError as exc:
            raise _refuse(f"xferbench: {exc}") from None
        odd = {k: v for k, v in labels.items() if (k, v) != ("quick", "no")}
        if odd:
            raise _refuse(
                "xferbench: asv's own environments name their results after the matrix "
                f"alone, so {', '.join(f'{k}={v}' for k, v in odd.items())} would be filed "
                "as a full default run: unset XFERBENCH_QUICK, XFERBENCH_SWEEP, "
                "OMP_NUM_THREADS and XFERBENCH_DEVICE, or run asv run --python=same "
                "(or xferbench run)")
        base_create(self)

    def existing_labelled(self: Any, conf: Any, executable: Any, requirements: Any,
                          tagged: Any) -> None:
        existing_init(self, conf, executable, requirements, tagged)
        found = torch_of(self._executable)
        if found is None:
            raise _refuse(f"xferbench: {self._executable} has no torch to measure: asv would "
                          "label its results with asv.conf.json's matrix instead; install "
                          "torch into it, or give asv another interpreter")
        try:
            labels = series_labels()
        except ValueError as exc:
            raise _refuse(f"xferbench: {exc}") from None
        torch, cuda = found
        # asv writes an environment's requirements into the results' params: the torch that
        # runs, not the matrix's unchecked entry, its CUDA, and how it measures
        self._requirements = {**{k: v for k, v in self._requirements.items() if k != "torch"},
                              "torch": torch, "cuda": cuda, **labels}
        self._xferbench_name = {"torch": torch, **{k: v for k, v in labels.items()
                                                   if (k, v) != ("quick", "no")}}
        self._global_env_vars["ASV_ENV_NAME"] = self.name  # named before the labels were

    def name(self: Any) -> str:
        return environment.get_env_name(self.tool_name, self._executable.replace(os.sep, "_"),
                                        getattr(self, "_xferbench_name", {}),
                                        self._tagged_env_vars)

    base.create = create
    existing.__init__ = existing_labelled
    existing.name = property(name)
    base._xferbench_labels = True
