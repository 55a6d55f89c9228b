"""lint given a folder (or several files of one package) follows a training loop's calls into
the project's other modules: a helper imported (absolutely or relatively), a method a base
class defines, a method only the project's classes name. A host read of a device value in the
helper is reported at the call, naming the helper and where it reads; a helper that runs a
whole training step makes the loop that calls it a training loop. A file linted alone knows
nothing of the others, as before."""

from __future__ import annotations

import pickle
import textwrap
from pathlib import Path

from xferbench.lint import lint_text
from xferbench.lint.project import Project
from xferbench.lint.rules import CODES
from xferbench.lint.runner import run

TRAIN = """\
    import torch
    from pkg.log import log_metrics
    def train(model, loader, opt, device):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
            log_metrics(loss)
    """
LOG = """\
    def log_metrics(loss):
        print("loss", loss.item())
    """


def write(root: Path, files: dict[str, str]) -> list[str]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return [str(root / name) for name in files]


def lint_in(root: Path, files: dict[str, str], target: str, **kw) -> list[tuple[int, str]]:
    """(line, message) of ``target``'s findings, linted with ``files`` as its project."""
    paths = write(root, {"pkg/__init__.py": "", **files})
    path = root / target
    result = lint_text(path.read_text(), str(path), project=Project.of(paths), **kw)
    assert result.problem is None
    return [(f.line, f.message) for f in result.findings]


def test_a_helper_imported_from_another_module_that_reads_is_reported_at_the_call(tmp_path):
    found = lint_in(tmp_path, {"pkg/train.py": TRAIN, "pkg/log.py": LOG}, "pkg/train.py")
    assert [line for line, _ in found] == [8]
    assert found[0][1].startswith("`log_metrics()`, through `.item()` at pkg/log.py:2, "
                                  "reads a device tensor on the host inside the training loop")


def test_the_same_file_linted_alone_knows_nothing_of_the_helper(tmp_path):
    path = write(tmp_path, {"train.py": TRAIN})[0]
    assert lint_text(Path(path).read_text(), path).findings == []


def test_a_relative_import_and_a_module_attribute_are_followed(tmp_path):
    train = TRAIN.replace("from pkg.log import log_metrics", "from . import log") \
        .replace("log_metrics(loss)", "log.log_metrics(loss)")
    relative = TRAIN.replace("from pkg.log import log_metrics", "from .log import log_metrics")
    for text in (train, relative):
        found = lint_in(tmp_path, {"pkg/train.py": text, "pkg/log.py": LOG}, "pkg/train.py")
        assert [line for line, _ in found] == [8], text


def test_a_helper_that_reads_only_what_it_is_not_handed_on_the_device_is_quiet(tmp_path):
    log = LOG.replace('print("loss", loss.item())', 'print("step", step)').replace(
        "(loss)", "(loss, step=0)")
    assert lint_in(tmp_path, {"pkg/train.py": TRAIN, "pkg/log.py": log}, "pkg/train.py") == []


def test_a_method_a_base_class_in_another_module_defines_is_followed(tmp_path):
    base = """\
        class Base:
            def report(self, loss):
                print(f"{loss}")
        """
    trainer = """\
        from pkg.base import Base
        class Trainer(Base):
            def fit(self, model, loader, opt, device):
                for x in loader:
                    loss = model(x.to(device)).sum()
                    loss.backward()
                    opt.step()
                    self.report(loss)
        """
    found = lint_in(tmp_path, {"pkg/base.py": base, "pkg/trainer.py": trainer},
                    "pkg/trainer.py")
    assert [(line, m.split(",")[0]) for line, m in found] == [(8, "`Base.report()`")]


def test_a_method_by_its_name_is_followed_where_every_real_one_reads(tmp_path):
    trainer = """\
        class Agent:
            def learn(self, model, loader, opt, device):
                for x in loader:
                    loss = model(x.to(device)).sum()
                    loss.backward()
                    opt.step()
                    self.writer.add_loss("loss", loss)
        """
    writer = """\
        class Writer:
            def add_loss(self, name, value):
                self._add("loss/" + name, value)
            def _add(self, name, value):
                print(name, float(value))
        """
    dummy = """\
        class DummyWriter:
            def add_loss(self, name, value):
                pass
        """
    files = {"pkg/agent.py": trainer, "pkg/writer.py": writer, "pkg/dummy.py": dummy}
    found = lint_in(tmp_path, files, "pkg/agent.py")
    assert [(line, m.split(",")[0]) for line, m in found] == [(7, "`Writer.add_loss()`")]
    quiet = "class Counter:\n    def add_loss(self, name, value):\n        self.n = 1\n"
    assert lint_in(tmp_path, {**files, "pkg/counter.py": quiet}, "pkg/agent.py") == []


def test_a_helper_that_runs_a_whole_step_makes_its_loop_a_training_loop(tmp_path):
    losses = """\
        class GanLoss:
            def train_ops(self, generator, optimizer, batch):
                loss = generator(batch).mean()
                loss.backward()
                optimizer.step()
                return loss.item()
        """
    trainer = """\
        def train(losses, generator, optimizer, device, loader):
            for batch in loader:
                batch = batch.to(device)
                for loss in losses:
                    value = loss.train_ops(generator, optimizer, batch)
        """
    found = lint_in(tmp_path, {"pkg/losses.py": losses, "pkg/trainer.py": trainer},
                    "pkg/trainer.py")
    assert [(line, m.split(",")[0]) for line, m in found] == [(5, "`GanLoss.train_ops()`")]


def test_evaluation_helpers_and_intended_reads_are_not_reported(tmp_path):
    files = {"pkg/train.py": TRAIN.replace("log_metrics", "evaluate_metrics"),
             "pkg/log.py": LOG.replace("log_metrics", "evaluate_metrics")}
    assert lint_in(tmp_path, files, "pkg/train.py") == []
    files = {"pkg/train.py": TRAIN, "pkg/log.py": LOG}
    assert lint_in(tmp_path, files, "pkg/train.py", intended=("log_*",)) == []


def test_linting_the_folder_follows_helpers_and_one_file_alone_does_not(tmp_path):
    paths = write(tmp_path, {"pkg/__init__.py": "", "pkg/train.py": TRAIN, "pkg/log.py": LOG})
    whole = run([str(tmp_path)], frozenset(CODES), [], jobs=1)
    assert [(Path(f.path).name, f.line) for f in whole.findings] == [("train.py", 8)]
    alone = run([paths[1]], frozenset(CODES), [], jobs=1)
    assert alone.findings == []


def test_a_project_sent_to_a_worker_carries_its_files_not_its_analyses(tmp_path):
    paths = write(tmp_path, {"pkg/__init__.py": "", "pkg/train.py": TRAIN, "pkg/log.py": LOG})
    project = Project.of(paths)
    assert project is not None
    lint_text(Path(paths[1]).read_text(), paths[1], project=project)
    assert project.passes
    copy = pickle.loads(pickle.dumps(project))
    assert copy.files == project.files and copy.passes == {} and copy.outlines == {}
