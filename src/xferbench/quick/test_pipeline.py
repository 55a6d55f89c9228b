"""A whole DataLoader pipeline (practices.pipeline), where this version has it."""

from __future__ import annotations

import importlib.util

import pytest


def test_dataloader_pipeline(xfer_benchmark):
    if importlib.util.find_spec("xferbench.practices.pipeline") is None:
        pytest.skip("practices.pipeline is not in this version")
    # The module is here: its quick combination goes in this test, as in the other files.
    pytest.skip("practices.pipeline is here, but the quick suite does not time it yet")
