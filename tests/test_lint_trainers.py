"""lint on trainer classes and engines, linted with the rest of their project: a trainer whose
model moves itself in another module, step functions handed to an engine, losses held in a
trainer's attributes or returned by its methods, a property that reads."""

from __future__ import annotations

from test_lint_project import lint_in

MODEL = """\
    import torch
    class Classifier(torch.nn.Module):
        def __init__(self, device):
            super().__init__()
            self.layer = torch.nn.Linear(4, 2)
            self.to(torch.device(device))
    """
TRAINER = """\
    import torch
    from pkg.model import Classifier
    class Trainer:
        def fit(self, model: Classifier, loader, optimizer):
            for x, y in loader:
                loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                print(loss.item())
    """


def test_a_trainer_whose_model_moves_in_another_module_reads_a_device_loss(tmp_path):
    found = lint_in(tmp_path, {"pkg/model.py": MODEL, "pkg/train.py": TRAINER},
                    "pkg/train.py")
    assert [line for line, _ in found] == [9]


def test_a_trainer_in_a_project_that_moves_nothing_trains_on_the_cpu(tmp_path):
    model = MODEL.replace("            self.to(torch.device(device))\n", "")
    assert lint_in(tmp_path, {"pkg/model.py": model, "pkg/train.py": TRAINER},
                   "pkg/train.py") == []
