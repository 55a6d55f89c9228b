"""On a real GPU, the warnings only real CUDA emits (cuBLAS's context, NVML) are recorded in a
gpu test's warnings summary, not raised: pyproject.toml's ``filterwarnings = error`` stays for
every other warning, on the CPU and on the emulated device."""

from __future__ import annotations

from conftest import REAL_GPU_WARNINGS, real_gpu_warnings

from xferbench.devices import Device

pytest_plugins = ["pytester"]


def test_only_a_real_accelerator_records_cudas_own_warnings(monkeypatch):
    import conftest

    monkeypatch.setattr(conftest, "is_emulated", lambda dev: dev.type == "emu")
    assert real_gpu_warnings(Device("cuda", 0)) == REAL_GPU_WARNINGS
    assert real_gpu_warnings(Device("emu", 0)) == ()
    assert real_gpu_warnings(None) == ()


def test_the_filters_record_cudas_warnings_and_fail_on_any_other(pytester):
    """The filters as pytest reads them (its own parser), under ``filterwarnings = error``:
    cuBLAS's and NVML's warnings pass and are recorded; another UserWarning fails."""
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    marks = "".join(f"@pytest.mark.filterwarnings({spec!r})\n" for spec in REAL_GPU_WARNINGS)
    pytester.makepyfile(test_user=f'''
import warnings

import pytest


{marks}@pytest.mark.parametrize("message", [
    "Attempting to run cuBLAS, but there was no current CUDA context! Attempting to set the "
    "primary context...",
    "Can't initialize NVML",
])
def test_cudas_own(message):
    warnings.warn(message, UserWarning)


{marks}def test_torch_cudas_own_module():
    warnings.warn_explicit("The pynvml package is deprecated", FutureWarning, "cuda.py", 1,
                           module="torch.cuda")


{marks}def test_any_other_warning_still_fails():
    warnings.warn("something else", UserWarning)
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xferbench",
                                           "-p", "no:benchmark")
    result.assert_outcomes(passed=3, failed=1)
    out = result.stdout.str()
    assert "warnings summary" in out and "cuBLAS" in out and "NVML" in out
