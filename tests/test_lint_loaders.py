"""XB110: a DataLoader built without pin_memory=True whose batches are copied with
non_blocking=True, reported once, at the loader (where the fix goes), naming the copies."""

from __future__ import annotations

import textwrap

from xferbench.lint import lint_text

LOOP = """\
    import torch
    from torch.utils.data import DataLoader
    def train(model, ds, opt, device):
        loader = {loader}
        for x, y in loader:
            x = x.to(device, non_blocking=True)
            y = y.to(device, non_blocking=True)
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    """


def findings(loader: str) -> list[tuple[int, str, str]]:
    text = textwrap.dedent(LOOP.format(loader=loader))
    return [(f.line, f.code, f.message) for f in lint_text(text, "t.py").findings]


def test_an_unpinned_loader_is_reported_once_at_the_loader_naming_its_copies():
    found = findings("DataLoader(ds, batch_size=32, num_workers=4)")
    assert [(line, code) for line, code, _ in found] == [(4, "XB110")]
    assert "`.to(..., non_blocking=True)` at lines 6, 7:" in found[0][2]


def test_a_loader_pinned_by_keyword_or_by_position_is_quiet():
    assert findings("DataLoader(ds, batch_size=32, pin_memory=True)") == []
    assert findings("DataLoader(ds, 32, True, None, None, 4, None, True)") == []


def test_pin_memory_false_is_reported_and_a_runtime_choice_is_not():
    assert [code for _, code, _ in findings("DataLoader(ds, pin_memory=False)")] == ["XB110"]
    assert findings("DataLoader(ds, pin_memory=torch.cuda.is_available())") == []
