"""``import xferbench`` is cheap: no torch (so no CUDA initialisation) until a function needs it."""

from __future__ import annotations

import json

import pytest

import xferbench

_LOADED = "import sys; print(sorted(m for m in ('torch', 'matplotlib') if m in sys.modules))"


def _imports(run_python, code: str, env: dict[str, str] | None = None) -> list[str]:
    """Run ``code`` in a fresh interpreter; which of torch and matplotlib it loaded."""
    proc = run_python("-c", f"{code}\n{_LOADED}", env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1].replace("'", '"'))


def test_import_xferbench_does_not_import_torch(run_python):
    assert _imports(run_python, "import xferbench") == []


def test_every_module_imports_without_torch_or_matplotlib(run_python):
    code = ("import importlib, pkgutil, xferbench\n"
            "names = [m.name for m in pkgutil.walk_packages(xferbench.__path__, 'xferbench.')]\n"
            "assert 'xferbench.commands.publish.figures' in names, names\n"
            "for name in names:\n"
            "    if not name.endswith('__main__'):\n        importlib.import_module(name)")
    assert _imports(run_python, code) == []


def test_cli_help_does_not_import_torch(run_python):
    code = ("from xferbench.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit as exc:\n    assert exc.code == 0")
    assert _imports(run_python, code) == []


def test_asv_discovery_with_a_probe_does_not_import_torch(run_python):
    probe = {"device": "cpu", "capabilities": {
        "device": "cpu", "pinned_memory": False, "timing_events": False,
        "side_streams": False, "reason": "the CPU has none"}}
    code = "import benchmarks.bench_copies as b; assert b.CAPS.device == 'cpu'"
    assert _imports(run_python, code, env={"XFERBENCH_PROBE": json.dumps(probe)}) == []


def test_lazy_attributes_resolve_to_the_real_objects():
    from xferbench.devices import resolve_device
    from xferbench.measurement import Measurement
    from xferbench.timing import measure

    assert xferbench.measure is measure
    assert xferbench.Measurement is Measurement
    assert xferbench.resolve_device is resolve_device
    assert set(xferbench.__all__) >= {"measure", "Measurement", "resolve_device"}


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        xferbench.nonesuch  # noqa: B018
