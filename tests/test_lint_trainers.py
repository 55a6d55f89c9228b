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


BASE = """\
    from typing import Generic, TypeVar
    import torch
    T = TypeVar("T")
    class OffPolicy(Generic[T]):
        def _critic_step(self, batch, critic, critic_optim):
            td = critic(batch.obs).flatten() - batch.returns
            critic_loss = td.pow(2).mean()
            critic_optim.step(critic_loss)
            return td, critic_loss
    """
AGENT = """\
    import torch
    from pkg.base import OffPolicy
    class Agent(OffPolicy[int]):
        def __init__(self, actor, critic, actor_optim, critic_optim, device):
            self.actor, self.critic = actor.to(device), critic.to(device)
            self.actor_optim, self.critic_optim = actor_optim, critic_optim
        def learn(self, batch):
            td, critic_loss = self._critic_step(batch, self.critic, self.critic_optim)
            actor_loss = -self.critic(self.actor(batch.obs)).mean()
            self.actor_optim.step(actor_loss)
            return {"critic": critic_loss.item(), "td": float(td.mean())}
    """


def test_a_loss_a_generic_base_class_in_another_module_returns_is_a_device_tensor(tmp_path):
    found = lint_in(tmp_path, {"pkg/base.py": BASE, "pkg/agent.py": AGENT}, "pkg/agent.py")
    assert [line for line, _ in found] == [11, 11]
    assert all("in `learn()`, which runs a whole training step" in m for _, m in found)


def test_a_base_class_that_returns_host_floats_reads_there_not_at_the_use(tmp_path):
    base = BASE.replace("return td, critic_loss", "return td.tolist(), critic_loss.item()")
    found = lint_in(tmp_path, {"pkg/base.py": base, "pkg/agent.py": AGENT}, "pkg/agent.py")
    assert [line for line, _ in found] == [8]
    assert found[0][1].startswith("`OffPolicy._critic_step()`, through `.tolist()` at "
                                  "pkg/base.py:9 and 1 more read")
