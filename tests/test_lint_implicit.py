"""lint's implicit reads and copies: boolean-mask indexing and nonzero in a training step
(the host reads the output's size), the legacy `loss.data[0]` (a Python number before
PyTorch 0.4), and numpy noise made into a CUDA tensor every step (XB102)."""

from __future__ import annotations

import textwrap

from xferbench.lint import lint_text


def lint(src: str, **kw) -> list[tuple[int, str, str]]:
    return [(f.line, f.code, f.severity) for f in
            lint_text(textwrap.dedent(src), "t.py", **kw).findings]


def test_boolean_mask_indexing_and_nonzero_in_the_step_are_reads():
    assert lint("""\
        import torch
        def train(model, loader, opt, device):
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                logits = model(x)
                mask = y != -100
                loss = torch.nn.functional.cross_entropy(logits[mask], y)
                loss.backward()
                opt.step()
                hard = torch.nonzero(loss > 1)
                picked = logits[~mask & torch.isfinite(logits)]
                logits[mask] = 0
        """) == [(7, "XB101", "warning"), (10, "XB101", "warning"), (11, "XB101", "warning")]


def test_indexing_with_a_host_mask_or_an_integer_index_is_no_read():
    assert lint("""\
        def train(model, loader, opt, device, keep):
            for x, y in loader:
                x = x.to(device)
                logits = model(x)
                loss = logits[keep].mean() + logits[0].mean() + logits[y > 0].mean()
                loss.backward()
                opt.step()
        """) == []


def test_the_legacy_data_0_of_a_loss_is_a_read_and_of_an_image_is_not():
    assert lint("""\
        def train(model, loader, opt, device):
            total = 0
            for x, y in loader:
                x = x.to(device)
                loss = model(x).mean()
                loss.backward()
                opt.step()
                total += loss.data[0]
                first = x.data[0]
        """) == [(8, "XB101", "warning")]


def test_numpy_noise_made_into_a_cuda_tensor_is_create_then_move():
    found = lint_text(textwrap.dedent("""\
        import numpy as np
        import torch
        from torch.autograd import Variable
        cuda = torch.cuda.is_available()
        Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor

        def train(G, loader, device):
            for imgs, _ in loader:
                z = Variable(Tensor(np.random.normal(0, 1, (imgs.shape[0], 100))))
                n = torch.from_numpy(np.random.randn(4, 4)).float().to(device)
                w = torch.cuda.FloatTensor(np.random.rand(3))
                ok = Tensor(imgs.shape[0], 1).fill_(1.0)
        """), "t.py").findings
    assert [(f.line, f.code, f.fix) for f in found] == [
        (9, "XB102", None), (10, "XB102", None), (11, "XB102", None)]
    assert "np.random.normal(...)` draws on the host" in found[0].message
    assert "torch.randn(..., device=...)" in found[1].message
