"""Training steps across the functions of one module: which loops train (a backward or an
optimiser step in their body, or a call of a function of the module that runs one), which
functions run once per step (one training step of their own, or called from a training loop
or from such a function), and the device values a call hands a function of the module (its
parameters' places for the next pass). Known only at the end of the module, so the rules
that need it leave candidates, resolved here."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from .facts import OPTIM, Val, device_parameters, optim_name, purpose, terminal
from .operands import CONTAINER, factors
from .part import Part
from .scopes import Frame, Loop

#: A function's per-step kind: a call of it runs every step ("step") or on some steps ("info").
STEP, SOME_STEPS = "step", "info"
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass
class Facts:
    """What one function of the module does outside its own loops."""

    backward: bool = False
    backward_any: bool = False  # in its loops too
    optimise: bool = False
    returns_device: bool = False  # it returns a device value
    forward: bool = False
    calls: set[str] = field(default_factory=set)
    epoch: bool = False  # a loop over data in it steps the optimiser: a call runs an epoch
    epoch_calls: set[str] = field(default_factory=set)  # ... or calls these, which may


@dataclass(frozen=True)
class LoopCall:
    """A call of a function of the module: where it is (the caller, its loops and guards)."""

    caller: str | None
    callee: str
    loops: tuple[Loop, ...]
    guards: tuple[int, ...]


#: Assignments followed back from a loss to the names it is computed from.
DEPTH = 4


def lossy_names(body: list[ast.stmt]) -> dict[str, list[tuple[int, int]]]:
    """The names a function calls backward() on (``loss.backward()``, ``(loss / n).backward()``,
    ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``), and the operands those
    were computed from, two assignments deep (``loss = criterion(out, y)``: out and y): a loss
    the device trains on, made from values on the device. Each name with the lines where a
    binding of it is that loss: the loop around the backward, or the lines before it (a name
    reused for a host value elsewhere in the function is not taken for it)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    assigns: list[tuple[str, ast.expr]] = []
    todo: list[tuple[ast.AST, ast.For | ast.AsyncFor | ast.While | None]] = [
        (stmt, None) for stmt in body]
    while todo:
        node, loop = todo.pop()
        if isinstance(node, SCOPES):
            continue  # their own frames
        inner = node if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) else loop
        todo.extend((child, inner) for child in ast.iter_child_nodes(node))
        if isinstance(node, ast.Assign) or isinstance(node, ast.AugAssign) and isinstance(
                node.op, (ast.Add, ast.Sub)):  # loss /= accum: a divisor is no loss
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:  # loss, stats = compute(...): the first of a tuple
                first = t.elts[0] if isinstance(t, ast.Tuple) and t.elts else t
                if isinstance(first, ast.Name):
                    assigns.append((first.id, node.value))
        if not isinstance(node, ast.Call):
            continue
        span = (loop.lineno, loop.end_lineno or loop.lineno) if loop is not None \
            else (0, node.lineno)
        for root in helper_losses(node):  # loss_scaler(loss, optimizer): the backward inside
            spans.setdefault(root, []).append(span)
        if BACKWARD.match(terminal(node.func) or ""):
            # loss.backward(); accelerator.backward(loss), backwards(loss, opt): the argument
            target = node.args[0] if node.args else (
                node.func.value if isinstance(node.func, ast.Attribute) else None)
            for root in _roots(target):  # (policy_loss + entropy_loss + value_loss): each
                spans.setdefault(root, []).append(span)
        elif stepped_loss(node):  # optim.step(loss): a wrapper's backward
            spans.setdefault(stepped_loss(node) or "", []).append(span)
    for _ in range(DEPTH):
        more = {n: spans[t] for t, value in assigns if t in spans for n in factors(t, value)
                if n not in spans}
        if not more:
            break
        spans.update(more)
    return spans


def stepped_loss(node: ast.Call) -> str | None:
    """The loss ``optim.step(loss)`` hands an optimiser (a wrapper that runs the backward too),
    else None."""
    func, first = node.func, node.args[0] if node.args else None
    name = terminal(first) if first is not None else None
    if isinstance(func, ast.Attribute) and func.attr == "step" and optim_name(func.value) and \
            name is not None and "loss" in name.lower():
        return name
    return None


#: Helpers handed an optimiser that do no step: schedules, checkpoints, setup, clipping.
_NOT_STEP = re.compile(r"sched|lr|learning_rate|warmup|epoch|save|checkpoint|load|eval|valid|"
                       r"test|log|zero_grad|state_dict|build|create|make|init|setup|wrap|"
                       r"prepare|clip|param|group|unscale|register|hook|optimi[sz]ers?$|"
                       r"instantiate|smart")
#: ... and names of a helper that runs a training step with it.
_STEP_NAME = re.compile(r"step|update|train|backward|optimi[sz]e(?:$|_)|learn|fit_batch")


def step_name(name: str) -> bool:
    """Whether a helper's name says it runs a training step (``train_step``, ``update``)."""
    return bool(_STEP_NAME.search(name.lower()))


def helper_step(node: ast.Call, optimiser: list[bool]) -> bool:
    """Whether the call runs a backward and an optimiser step inside another module's helper:
    handed an optimiser (``optimiser``: per argument, positional then keyword) and a loss
    (``loss_scaler(loss, optimizer, ...)``) or named for a step (``train_step_fn(model,
    batch, optimizer)``); not handed a loader (a call of that runs an epoch)."""
    name = (terminal(node.func) or "").lower()
    if not any(optimiser) or _NOT_STEP.search(name) or (terminal(node.func) or "")[:1].isupper():
        return False
    args = [*node.args, *(k.value for k in node.keywords)]
    if any(data_like(a) for a in args):
        return False
    return bool(_STEP_NAME.search(name)) or any(
        "loss" in r.lower() for a in args for r in _roots(a))


def helper_losses(node: ast.Call) -> set[str]:
    """The losses a helper step is handed (``loss_scaler(loss, optimizer)``: loss)."""
    args = [*node.args, *(k.value for k in node.keywords)]
    if not any(_OPTIM_ARG.search((terminal(a) or "").lower()) for a in args) or \
            not helper_step(node, [True]):
        return set()
    return {r for a in args for r in _roots(a) if "loss" in r.lower()}


_OPTIM_ARG = re.compile(r"(?:^|_)(?:optim|optimizer|optimiser)s?(?:$|_|\d)|^opt_|_opt$")

#: backward(), backwards(), _backward(): the calls that run a backward on their argument.
BACKWARD = re.compile(r"^_*(?:backward|backwards|do_backward|run_backward)$")
#: Names of what a loop over data iterates: a loader, batches, an iterator of them.
_DATA = re.compile(r"(?:^|_)(?:loader|dataloader|dl|iterator|iter|batches|batch_group|"
                   r"batch_generator|batch_iterator|dataset|data_iter|data)(?:$|_)|_loader$|"
                   r"loader$|batches$")


def data_like(expr: ast.expr) -> bool:
    """Whether a loop over ``expr`` iterates over data (``enumerate(train_loader)``,
    ``tqdm(batches)``, ``islice(dataloader, n)``), as its names say."""
    for node in ast.walk(expr):
        name = terminal(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if name and _DATA.search(name.lower()) and not _OPTIMS.search(name.lower()):
            return True  # not an iterator of optimisers (multiscale_discr_optim_iter)
    return False


_OPTIMS = re.compile(r"(?:^|_)(?:opt|optim|optimizer|optimiser|sched|scheduler)s?(?:$|_)")


def local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names local to ``fn``: its parameters and what its body binds (not inside
    nested scopes), less those it declares global or nonlocal."""
    a = fn.args
    out = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if p}
    declared: set[str] = set()
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
            continue
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((n.asname or n.name).split(".")[0] for n in node.names)
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                               ast.GeneratorExp)):
            continue  # their own scopes (a walrus inside binds here: rare, left out)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        todo.extend(ast.iter_child_nodes(node))
    return out - declared


def _roots(expr: ast.expr | None, first: bool = True) -> set[str]:
    """The names a backward's target is computed from: ``loss``, ``(loss / n)``,
    ``scaler.scale(a + b)``, ``loss.mean()``: a sum's every plain term, the first term's left
    operand (not ``coef`` in ``a + coef * b``: a weight is no loss)."""
    while expr is not None:
        if isinstance(expr, ast.Name):
            return {expr.id}
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, (ast.Add, ast.Sub)):
                return _roots(expr.left, first) | _roots(expr.right, False)
            if not first:
                return set()
            expr = expr.left
        elif isinstance(expr, ast.Call) and expr.args and isinstance(expr.func, ast.Attribute) \
                and expr.func.attr in ("scale", "mean", "sum", "float", "detach"):
            expr = expr.args[0] if expr.func.attr == "scale" else expr.func.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            expr = expr.func.value
        elif isinstance(expr, ast.Subscript):  # loss["loss"]: the mapping holds the loss
            return {n + CONTAINER for n in _roots(expr.value, first) if CONTAINER not in n}
        else:
            return set()
    return set()


class Steps(Part):
    """Step bookkeeping and the end-of-module resolution."""

    def step_op(self, kind: str = "forward") -> None:
        """A forward, a backward or an optimiser step runs here."""
        if kind == "backward" and not self.inp.may_optimise:
            kind = "forward"  # gradients no optimiser consumes: no training step
        frame = self.st.frame
        loop = self.an.step_loop(frame)
        frame.heavy = True
        frame.backward_any = frame.backward_any or kind == "backward"
        if loop is not None:
            loop.step = True
            loop.train = loop.train or kind != "forward"
            loop.optimise = loop.optimise or kind == "optimise"
            return
        frame.step = True
        if kind == "backward":
            frame.backward = True
        elif kind == "optimise":
            frame.optimise = True

    def helped_step(self, node: ast.Call, values: list) -> None:
        """A call that runs a training step inside a helper (``loss_scaler(loss, opt)``)."""
        args = [*node.args, *(k.value for k in node.keywords)]
        # `opt` alone is as often the options (argparse's) as an optimiser
        optimiser = [v.kind == OPTIM or optim_name(a) and terminal(a) not in ("opt", "opts")
                     for a, v in zip(args, values)]
        callee = terminal(node.func) or ""
        if any(optimiser) and callee not in self.st.functions_seen and \
                helper_step(node, optimiser):  # the module's own functions are walked
            self.step_op("backward")
            self.step_op("optimise")

    def note_call(self, name: str, args: list[Val] | None = None,
                  keywords: list[tuple[str | None, Val]] | None = None) -> None:
        """A call of ``name``, which may be a function of this module; ``args`` and
        ``keywords`` (Vals) say which of its parameters get a device value."""
        frame = self.st.frame
        loop = self.an.step_loop(frame)
        (loop.calls if loop is not None else frame.calls).add(name)
        self.st.sites.append(LoopCall(self.function_name(), name, tuple(frame.loops),
                               tuple(frame.guards)))
        device = device_parameters(args or [], keywords or [])
        if device:
            self.st.found_hints.setdefault(name, set()).update(device)


    def nested_key(self, name: str) -> str:
        """The key of the function ``name`` a call here means: a function defined in an
        enclosing function is ``outer.name`` (two functions may each define a `closure`)."""
        frame: Frame | None = self.st.frame
        while frame is not None:
            if frame.kind == "function" and name in frame.nested:
                return f"{frame.name}.{name}"
            frame = frame.parent
        return name

    def function_name(self) -> str | None:
        frame: Frame | None = self.st.frame
        while frame is not None and frame.kind != "function":
            frame = frame.parent
        return frame.name if frame is not None else None

    def record_function(self, frame: Frame, name: str) -> None:
        facts = self.st.facts.setdefault(name, Facts())
        facts.backward |= frame.backward
        facts.backward_any |= frame.backward_any
        facts.optimise |= frame.optimise
        facts.forward |= frame.step
        facts.calls |= frame.calls
        if frame.epoch_calls is not None:
            facts.epoch = facts.epoch or not frame.epoch_calls
            facts.epoch_calls |= frame.epoch_calls

    # -- the end of the module -------------------------------------------------------------------

    def closure(self, own: dict[str, bool], epochs: set[str]) -> set[str]:
        """The functions for which ``own`` holds, or which call (outside loops) one that does;
        never ``epochs``."""
        out = {n for n, yes in own.items() if yes and n not in epochs}
        changed = True
        while changed:
            changed = False
            for name, facts in self.st.facts.items():
                if name not in out and name not in epochs and facts.calls & out:
                    out.add(name)
                    changed = True
        return out

    def training(self) -> tuple[set[str], set[str]]:
        """(functions that train: a call of one runs a backward or an optimiser step;
        functions that run one whole step: a backward and an optimiser step). A function
        whose loop over data steps the optimiser (itself, or through a function it calls
        there) runs an epoch: a loop calling it is an epoch loop, whatever else it calls
        outside that loop (mace's train_one_epoch, an L-BFGS step on one of its paths)."""
        facts = self.st.facts
        epochs: set[str] = set()
        for _ in range(3):
            optimise = self.closure({n: f.optimise for n, f in facts.items()}, epochs)
            more = {n for n, f in facts.items() if f.epoch or f.epoch_calls & optimise}
            if more <= epochs:
                break
            epochs |= more
        backward = self.closure({n: f.backward for n, f in facts.items()}, epochs)
        optimise = self.closure({n: f.optimise for n, f in facts.items()}, epochs)
        anywhere = self.closure({n: f.backward_any for n, f in facts.items()}, epochs)
        return backward | optimise, optimise & (backward | anywhere)

    def per_step(self, trains: set[str], whole: set[str]) -> dict[str, str]:
        """Function -> STEP (a call of it runs every training step) or SOME_STEPS."""
        out = {name: STEP for name in whole}
        changed = True
        while changed:
            changed = False
            for site in self.st.sites:
                if site.callee not in self.st.facts or out.get(site.callee) == STEP:
                    continue
                kind = self.site_kind(site, trains, out)
                if kind is not None and out.get(site.callee) != kind:
                    out[site.callee] = kind
                    changed = True
        return out

    def site_kind(self, site: LoopCall, trains: set[str], known: dict[str, str]) -> str | None:
        if site.caller is not None and purpose(site.caller.rsplit(".", 1)[-1]):
            return None  # what evaluation calls is evaluation's (a reranker, a metric)
        inner = self.batch_loop(site.loops, trains)
        if inner is not None:
            return SOME_STEPS if any(g > inner for g in site.guards) else STEP
        if not site.loops and site.caller in known:
            return SOME_STEPS if site.guards else known[site.caller]
        return None

    @staticmethod
    def batch_loop(loops: tuple[Loop, ...], trains: set[str]) -> int | None:
        """The index of the innermost training loop of ``loops``."""
        for i in range(len(loops) - 1, -1, -1):
            loop = loops[i]
            if not loop.comprehension and (loop.train or any(c in trains for c in loop.calls)
                                           or loop.data and loop.inner_train):
                return i  # a loop over data whose inner loop trains: micro-batches, turns
        return None
