"""What ``--fix`` may rely on: a value whose type the source proves, never one guessed from
its name. A tensor is a torch function's result (a factory, an op), a tensor method's, a
tensor's arithmetic or index, or a parameter annotated ``torch.Tensor``; a device is a string,
an index, ``torch.device(...)`` or a proven tensor's ``.device``. A name is proven when every
binding of it in its scope is (a loop target, an import, an unpacking or a ``global``
declaration anywhere proves nothing)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

#: torch functions that return one tensor (not a tuple: no max, sort, split, unique).
TENSOR_FUNCTIONS = frozenset("""
    zeros ones full empty rand randn randint randperm arange range linspace logspace eye tensor
    as_tensor asarray from_numpy zeros_like ones_like full_like empty_like rand_like
    randn_like randint_like empty_strided stack cat concat concatenate hstack vstack matmul mm
    bmm add sub mul div abs exp log sqrt sigmoid tanh relu softmax log_softmax clamp flatten
    reshape squeeze unsqueeze transpose permute masked_fill gather index_select cumsum sum
    mean einsum outer diag tril triu roll flip clone sign maximum minimum round floor ceil pow
    bernoulli multinomial normal polar complex real imag Tensor FloatTensor DoubleTensor
    HalfTensor LongTensor IntTensor BoolTensor ByteTensor nn.Parameter
    nn.functional.relu nn.functional.gelu nn.functional.silu nn.functional.softmax
    nn.functional.log_softmax nn.functional.linear nn.functional.conv2d nn.functional.dropout
    nn.functional.pad nn.functional.one_hot nn.functional.normalize nn.functional.interpolate
    nn.functional.embedding nn.functional.layer_norm nn.functional.cross_entropy
    nn.functional.mse_loss nn.functional.nll_loss nn.functional.sigmoid nn.functional.tanh
    """.split())
#: Tensor methods that return one tensor.
TENSOR_METHODS = frozenset("""
    to cuda cpu xpu mps float double half bfloat16 long int short bool byte char contiguous
    clone detach view view_as reshape reshape_as expand expand_as permute transpose t flatten
    squeeze unsqueeze repeat pin_memory sum mean abs neg exp log sqrt pow add sub mul div
    matmul clamp masked_fill index_select gather softmax log_softmax relu sigmoid tanh argmax
    argmin cumsum add_ sub_ mul_ div_ zero_ fill_ copy_ clamp_ normal_ uniform_ requires_grad_
    """.split())
TENSOR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "real", "imag"})
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.MatMult,
              ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
DEVICE_ANNOTATIONS = frozenset({"torch.device", "str", "int"})
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
          ast.SetComp, ast.DictComp, ast.GeneratorExp)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def torch_names(nodes: Iterable[ast.AST]) -> dict[str, str]:
    """Local name -> what it imports from torch ("torch", "torch.nn.functional",
    "torch.zeros"), of a module's ``nodes``: only names bound by imports of torch and by
    nothing else."""
    imported: dict[str, str] = {}
    other: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                name = a.asname or a.name.split(".")[0]
                full = a.name if a.asname else name
                (imported.__setitem__(name, full) if full.split(".")[0] == "torch"
                 else other.add(name))
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                name = a.asname or a.name
                if node.module and not node.level and node.module.split(".")[0] == "torch":
                    imported[name] = f"{node.module}.{a.name}"
                else:
                    other.add(name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            other.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(node.name)
        elif isinstance(node, ast.arg):
            other.add(node.arg)
    return {k: v for k, v in imported.items() if k not in other}


class Proof:
    """The proofs for one module's tree."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.parents: dict[ast.AST, ast.AST] = {}
        nodes: list[ast.AST] = []
        todo: list[ast.AST] = [tree]
        while todo:  # one pass over the tree: each node's parent, and the nodes
            node = todo.pop()
            nodes.append(node)
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
                todo.append(child)
        self.torch = torch_names(nodes)
        self.declared = {n for node in nodes if isinstance(node, (ast.Global, ast.Nonlocal))
                         for n in node.names}
        self.star = any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)
                        for n in nodes)
        self.binds: dict[ast.AST, dict[str, list[ast.AST]]] = {}

    # -- what a value is ---------------------------------------------------------------------

    def qualname(self, node: ast.expr) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.torch:
            return None
        return ".".join([self.torch[node.id], *reversed(parts)])

    def is_tensor(self, node: ast.expr, busy: frozenset = frozenset()) -> bool:
        if isinstance(node, ast.Call):
            qual = self.qualname(node.func)
            if qual is not None:
                return qual.startswith("torch.") and qual[6:] in TENSOR_FUNCTIONS
            return isinstance(node.func, ast.Attribute) and node.func.attr in TENSOR_METHODS \
                and self.is_tensor(node.func.value, busy)
        if isinstance(node, ast.Name):
            return self.name_is(node, "tensor", busy)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ARITHMETIC):
            sides = [self.is_tensor(s, busy) or number(s) for s in (node.left, node.right)]
            return all(sides) and not (number(node.left) and number(node.right))
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            return self.is_tensor(node.operand, busy)
        if isinstance(node, ast.Subscript):
            return self.is_tensor(node.value, busy)
        if isinstance(node, ast.Attribute) and node.attr in TENSOR_ATTRIBUTES:
            return self.is_tensor(node.value, busy)
        if isinstance(node, ast.IfExp):
            return self.is_tensor(node.body, busy) and self.is_tensor(node.orelse, busy)
        return False

    def is_device(self, node: ast.expr, busy: frozenset = frozenset()) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (str, int)) and not isinstance(node.value, bool)
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.Call):
            return self.qualname(node.func) == "torch.device"
        if isinstance(node, ast.Attribute) and node.attr == "device":
            return self.is_tensor(node.value, busy)
        if isinstance(node, ast.Name):
            return self.name_is(node, "device", busy)
        if isinstance(node, ast.IfExp):
            return self.is_device(node.body, busy) and self.is_device(node.orelse, busy)
        return False

    def annotated(self, node: ast.expr | None, what: str) -> bool:
        if node is None:
            return False
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            text = self.qualname(node) or (node.id if isinstance(node, ast.Name) else "")
        if what == "tensor":
            return text in ("torch.Tensor", "torch.nn.Parameter")
        return text in DEVICE_ANNOTATIONS

    # -- what a name is ----------------------------------------------------------------------

    def name_is(self, node: ast.Name, what: str, busy: frozenset) -> bool:
        key = (node.id, what)
        found = self.bindings_of(node)
        if found is None or not found:
            return False
        scope, bindings = found
        if (scope, key) in busy:  # a name read in its own binding: as the other bindings
            return True
        busy = busy | {(scope, key)}
        test = self.is_tensor if what == "tensor" else self.is_device
        for kind, binding in bindings:
            if kind == "param":
                ok = self.annotated(binding.annotation, what)
            elif kind == "value":
                ok = test(binding, busy)
            elif kind == "annotated":
                ok = self.annotated(binding.annotation, what) or test(binding.value, busy)
            elif kind == "aug":
                ok = what == "tensor" and (test(binding.value, busy) or number(binding.value))
            else:
                ok = False
            if not ok:
                return False
        return True

    def bindings_of(self, node: ast.Name) -> tuple[ast.AST, list] | None:
        """(the scope ``node``'s name resolves to, its bindings there); None where the name
        is declared global or nonlocal anywhere, or a star import could bind it."""
        if node.id in self.declared:
            return None
        scope = self.scope_of(node)
        while True:
            table = self.table(scope)
            if node.id in table:
                return scope, table[node.id]
            if isinstance(scope, ast.Module):
                return None
            scope = self.scope_of(scope)
            while isinstance(scope, ast.ClassDef):  # a class body is not seen by its methods
                scope = self.scope_of(scope)

    def scope_of(self, node: ast.AST) -> ast.AST:
        here = self.parents.get(node)
        while here is not None and not isinstance(here, (*SCOPES, ast.Module)):
            here = self.parents.get(here)
        return here if here is not None else self.tree

    def table(self, scope: ast.AST) -> dict[str, list]:
        if scope not in self.binds:
            table: dict[str, list] = {}
            if isinstance(scope, FUNCTIONS):
                a = scope.args
                for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs):
                    table.setdefault(arg.arg, []).append(("param", arg))
                for rest in (a.vararg, a.kwarg):
                    if rest is not None:
                        table.setdefault(rest.arg, []).append(("other", rest))
            for name, kind, binding in bindings(scope):
                table.setdefault(name, []).append((kind, binding))
            if isinstance(scope, ast.Module) and self.star:
                table = {k: [("other", None)] for k in table}
            self.binds[scope] = table
        return self.binds[scope]

    # -- the verdicts --------------------------------------------------------------------------

    def why_not(self, needs: tuple[tuple[str, ast.expr], ...]) -> str | None:
        """None where every ("tensor" or "device", expression) of ``needs`` is proven; else
        why --fix does not rely on the first that is not."""
        for what, node in needs:
            reason = (self.why_not_tensor if what == "tensor" else self.why_not_device)(node)
            if reason is not None:
                return reason
        return None

    def why_not_tensor(self, node: ast.expr) -> str | None:
        """None where ``node`` is proven a tensor; else why --fix does not rely on it."""
        if self.is_tensor(node):
            return None
        return (f"`{ast.unparse(node)}` is not known to be a tensor (an object's own .to() "
                "may move it in place and return None); annotate it torch.Tensor to have it "
                "fixed")

    def why_not_device(self, node: ast.expr) -> str | None:
        if self.is_device(node):
            return None
        return (f"`{ast.unparse(node)}` is not known to be a device (.to() also takes a "
                "dtype or a tensor, device= does not); annotate it torch.device to have it fixed")


def number(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, complex))


def bindings(scope: ast.AST) -> Iterator[tuple[str, str, ast.AST]]:
    """(name, kind, node) for each binding made in ``scope`` itself (not in the scopes it
    holds): kind "value" (node: the value), "annotated" and "aug" (the statement), "other"."""
    if isinstance(scope, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        for generator in scope.generators:
            yield from _names(generator.target)
        return
    body = getattr(scope, "body", [])
    todo = list(body) if isinstance(body, list) else [body]
    while todo:
        node = todo.pop()
        yield from _bound_by(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield child.name, "other", child
                todo.extend(child.decorator_list)
            elif isinstance(child, SCOPES):
                todo.extend(n for n in ast.walk(child) if isinstance(n, ast.NamedExpr))
            else:
                todo.append(child)


def _bound_by(node: ast.AST) -> Iterator[tuple[str, str, ast.AST]]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target.id, "value", node.value
            else:
                yield from _names(target)
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        if node.value is not None:
            yield node.target.id, "annotated", node
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        yield node.target.id, "aug", node
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        yield from _names(node.target)
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        yield from _names(node.optional_vars)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for a in node.names:
            yield (a.asname or a.name.split(".")[0]), "other", node
    elif isinstance(node, ast.NamedExpr):
        yield from _names(node.target)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name, "other", node
    elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        yield node.name, "other", node
    elif isinstance(node, ast.MatchMapping) and node.rest:
        yield node.rest, "other", node


def _names(target: ast.AST) -> Iterator[tuple[str, str, ast.AST]]:
    for n in ast.walk(target):
        if isinstance(n, ast.Name):
            yield n.id, "other", n
