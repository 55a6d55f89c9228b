"""What a loss is computed from: the operands of an assignment, followed back from a loss
(``loss = criterion(out, y)``: out and y; ``loss = torch.stack(list(losses.values())).sum()``:
the losses), less the host weights it is scaled by."""

from __future__ import annotations

import ast
import re

from .facts import terminal

#: Functions that compute a loss from tensors: their arguments are tensors too.
_LOSSY_CALL = re.compile(r"loss|criterion|entropy|mse|nll|kl_div|divergence|hinge|bce|"
                         r"l1|smooth|focal|dice|triplet|contrastive|margin")


def factors(target: str, value: ast.expr) -> set[str]:
    """The operands a loss ``target`` is computed from, less its weights: in ``loss = loss *
    warm_up`` the loss itself, in ``loss = ce * alpha`` the term, not the weight."""
    names = operands(value)
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Mult, ast.MatMult)) and \
            target in names:
        return {target}
    return {n for n in names if not _WEIGHT.search(n.lower())}


#: A loss term's weight: a host number the loss is scaled by.
_WEIGHT = re.compile(r"(?:^|_)(?:w|weight|weights|scale|coef|coeff|lam|lambda|lambd|alpha|"
                     r"beta|factor|ratio|warm_?up|temperature|temp|mult|multiplier|lr|decay)"
                     r"(?:$|_|\d)")


def operands(expr: ast.expr) -> set[str]:
    """The plain names ``expr`` computes with: a call's arguments, an operator's operands (not
    a called name, an attribute's object or an index)."""
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.BinOp):
        if isinstance(expr.op, (ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)):
            return operands(expr.left)  # loss / accum_steps: the divisor is a count
        return operands(expr.left) | operands(expr.right)
    if isinstance(expr, ast.UnaryOp):
        return operands(expr.operand)
    if isinstance(expr, ast.Subscript):
        return operands(expr.value)  # outputs["loss"]
    if not isinstance(expr, ast.Call):
        return set()
    func, name = expr.func, terminal(expr.func) or ""
    if _LOSSY_CALL.search(name.lower()) and "forward" not in name and not _model_method(func):
        return {n for a in expr.args for n in operands(a)} | {
            n for k in expr.keywords for n in operands(k.value)}
    if name not in _TENSOR_MATH:
        return set()
    args = {n for a in expr.args for n in operands(a)}
    if isinstance(func, ast.Name):
        return args  # list(losses.values()), sum(terms)
    if not isinstance(func, ast.Attribute):
        return set()
    owner = func.value.id if isinstance(func.value, ast.Name) else None
    if owner in _TORCH:
        return args  # torch.stack(terms), torch.exp(log_prob - old)
    if owner in _HOST_MODULES:
        return set()  # np.mean(...): host numbers
    found = operands(func.value)  # terms.mean(), torch.stack(...).sum()
    if name in _CONTAINER:
        return {n + CONTAINER for n in found}
    return found | args if name in _BINARY else found


def _model_method(func: ast.expr) -> bool:
    """``model.calculate_loss``: a method of an object the function was handed, which takes
    a batch as it comes (it may move it itself), not tensors already on the device."""
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
        func.value.id not in ("self", "F", "nn", "functional", *_TORCH)


#: Tensor functions and methods whose result is computed from their tensor operands
#: (``torch.stack(list(losses.values())).sum()``: the losses), and the containers' views
#: that hand their elements on.
_TENSOR_MATH = frozenset({
    "mean", "sum", "min", "max", "minimum", "maximum", "exp", "log", "clamp", "clip", "abs",
    "stack", "cat", "where", "sqrt", "square", "pow", "neg", "prod", "logsumexp", "sigmoid",
    "tanh", "softplus", "relu", "flatten", "squeeze", "unsqueeze", "view", "reshape", "float",
    "double", "mul", "add", "sub", "norm", "log_softmax", "softmax", "list", "tuple",
    "values"})
_CONTAINER = frozenset({"values"})
#: The mark of a lossy name that holds losses (``losses.values()``), not one itself.
CONTAINER = "[]"
_BINARY = frozenset({"mul", "add", "sub", "minimum", "maximum", "where"})
_TORCH = frozenset({"torch", "th"})
_HOST_MODULES = frozenset({"np", "numpy", "math", "statistics", "random", "jnp"})
