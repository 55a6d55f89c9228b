"""What the analysis knows about a value (``Val``: its type, where it lives, whether its host
memory is pinned) and the tables it is read from: torch's factories and tensor methods, the
names a model, an optimiser or a device goes by, the clocks."""

from __future__ import annotations

import ast
import re

# -- kinds of value ----------------------------------------------------------------------------
UNKNOWN, TENSOR, MODULE, LOADER, OPTIM, OTHER, DEVICE_VAL, SEQ, TIME = range(9)
# -- where a value lives: ON_DEVICE means "moved to an accelerator, or possibly one" --------------
NOWHERE, ON_HOST, ON_DEVICE = range(3)
# -- host memory ---------------------------------------------------------------------------------
PIN_UNKNOWN, PAGEABLE, PINNED, PAGEABLE_IF = range(4)  # PAGEABLE_IF: if tag's loader is


class Val:
    """One value as far as the analysis can tell. ``tag``: per kind, the loader key whose
    pinning decides PAGEABLE_IF, the factory record (XB102), the pinning loop (XB108) or the
    pending device-to-host copy (XB106); ``items``: a sequence's elements; ``elem``: what
    iterating it gives."""

    __slots__ = ("kind", "where", "pin", "tag", "items", "elem")

    def __init__(self, kind: int = UNKNOWN, where: int = NOWHERE, pin: int = PIN_UNKNOWN,
                 tag: object = None, items: tuple | None = None, elem: Val | None = None):
        self.kind, self.where, self.pin, self.tag = kind, where, pin, tag
        self.items, self.elem = items, elem

    @property
    def on_device(self) -> bool:
        return self.where == ON_DEVICE

    @property
    def tensorish(self) -> bool:
        """A device value that a host read would sync on (a tensor or a structure of them)."""
        return self.where == ON_DEVICE and self.kind not in (MODULE, OTHER, DEVICE_VAL, LOADER,
                                                             OPTIM, TIME)

    def __repr__(self) -> str:  # for tests and debugging
        return f"Val(kind={self.kind}, where={self.where}, pin={self.pin}, tag={self.tag!r})"


NOTHING = Val()
HOST_OTHER = Val(OTHER, ON_HOST)
NONE = Val(OTHER, ON_HOST)  # the constant None: a placeholder, neither loader nor tensor
TEXT = "<text>"  # the tag of a string too long to name a device (a message, a format)
INSTANCE = ("instance",)  # the tag of a class's instance: a model if it moves to a device
COUNTER_TAG = ("counter",)  # the tag of a step counter (a range() index, `step += 1`)
GUARD_TAG = ("guard",)  # the tag of a name holding a step guard (should_log = i % n == 0)
COUNTER = Val(OTHER, ON_HOST, tag=COUNTER_TAG)
BOOL_TAG = ("bool",)  # the tag of a boolean tensor (a mask: x > 0, isnan(x), ~mask)
CUDA_CTOR = ("cuda constructor",)  # torch.cuda.FloatTensor (or a name holding it)
SYNC_FN = ("synchronize",)  # the tag of torch.cuda.synchronize itself (sync = torch...)
CURRENT_STREAM = ("current stream",)  # the tag of torch.cuda.current_stream()


def device_tensor(kind: int = TENSOR) -> Val:
    return Val(kind, ON_DEVICE)


def hint_worthy(v: Val) -> bool:
    """A value that makes a parameter a device value: a tensor or a model's output, not a
    container holding one among others (a state dict with counters)."""
    return v.tensorish and v.kind in (TENSOR, UNKNOWN)


def device_parameters(args: list[Val], keywords: list[tuple[str | None, Val]]) -> set[object]:
    """The parameters a call hands device values: positions and keyword names, and
    ("module", position or name) for a model on the device."""
    out: set[object] = {i for i, v in enumerate(args) if hint_worthy(v)}
    out |= {k for k, v in keywords if k is not None and hint_worthy(v)}
    out |= {("module", i) for i, v in enumerate(args) if v.kind == MODULE and v.on_device}
    out |= {("module", k) for k, v in keywords if k is not None and v.kind == MODULE and
            v.on_device}
    return out


# -- torch ---------------------------------------------------------------------------------------
#: Factories that generate their data on the host unless given ``device=``.
FACTORIES = frozenset({"zeros", "ones", "full", "empty", "rand", "randn", "randint",
                       "randperm", "arange", "linspace", "logspace", "eye"})
#: The legacy constructors: given sizes (``torch.Tensor(n, m)``, ``torch.FloatTensor(*shape)``)
#: they make an uninitialised host tensor, as torch.empty does (given data, they copy it).
LEGACY = frozenset({"Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor",
                    "LongTensor", "IntTensor", "ShortTensor", "ByteTensor", "CharTensor",
                    "BoolTensor"})
#: Their random ones: moved to ``device=`` they draw from the device's generator, so --fix
#: leaves them (the numbers would change).
RANDOM_FACTORIES = frozenset({"rand", "randn", "randint", "randperm"})
#: torch functions that copy host data into a new tensor (on the host unless device=).
FROM_DATA = frozenset({"tensor", "as_tensor", "from_numpy", "asarray", "frombuffer"})
#: torch functions that do not return a tensor (or not one worth tracking).
NOT_OPS = frozenset({"device", "no_grad", "enable_grad", "inference_mode", "manual_seed",
                     "load", "save", "compile", "is_tensor", "numel", "is_floating_point",
                     "set_grad_enabled", "get_default_dtype", "set_default_dtype", "Generator",
                     "autocast", "is_grad_enabled", "use_deterministic_algorithms", "typename",
                     "set_printoptions", "set_num_threads", "get_num_threads", "dtype", "Size",
                     "finfo", "iinfo", "equal", "allclose", "is_nonzero", "result_type"})
#: Tensor methods that give metadata, not data: no device work, no read.
META_METHODS = frozenset({"size", "dim", "numel", "nelement", "element_size", "stride",
                          "is_contiguous", "data_ptr", "get_device", "is_pinned", "type",
                          "storage_offset", "is_floating_point", "is_complex", "ndimension",
                          "untyped_storage", "__len__", "has_names", "is_set_to", "nbytes"})
META_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad",
                        "layout", "names", "is_leaf", "grad_fn", "is_sparse", "is_quantized",
                        "is_meta", "itemsize", "nbytes", "is_mps", "is_xpu", "__class__",
                        "name", "is_cpu"})
#: Tensor methods whose result is a view of the same memory (pinning carries over).
VIEWS = frozenset({"view", "view_as", "reshape", "narrow", "select", "permute", "t",
                   "transpose", "expand", "expand_as", "squeeze", "unsqueeze", "flatten",
                   "contiguous", "detach", "unflatten", "movedim", "split", "chunk", "unbind",
                   "as_strided", "T", "mT", "__getitem__"})
#: Methods that read a device tensor's value on the host (a synchronisation).
HOST_READS = frozenset({"item", "tolist"})
#: Methods a module returns itself from.
MODULE_SELF = frozenset({"to", "cuda", "cpu", "train", "eval", "half", "float", "double",
                         "bfloat16", "requires_grad_", "apply", "share_memory", "xpu", "mps",
                         "to_empty", "type", "zero_grad"})
#: Container methods that hand out their items (dict of tensors, BatchEncoding).
ITEMS = frozenset({"values", "get", "pop", "__getitem__", "setdefault"})
#: Clocks whose difference times an interval.
CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "time.time_ns",
                    "time.perf_counter_ns", "time.monotonic_ns", "timeit.default_timer"})
#: Builtins that read their tensor argument's value on the host.
VALUE_BUILTINS = frozenset({"float", "int", "bool", "complex", "str", "repr", "format"})
#: Builtins that neither read a value nor hand on a tensor.
INERT_BUILTINS = frozenset({"len", "isinstance", "type", "id", "hasattr", "getattr", "callable",
                            "issubclass", "setattr", "range", "vars", "dir", "hash"})
#: Wrappers whose iteration gives their first argument's items.
PASS_ITER = frozenset({"tqdm", "iter", "reversed", "tqdm.tqdm", "tqdm.auto.tqdm",
                       "tqdm.notebook.tqdm", "rich.progress.track"})
MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module",
                          "lightning.LightningModule", "pytorch_lightning.LightningModule",
                          "lightning.pytorch.LightningModule", "transformers.PreTrainedModel"})

#: A model's name: the word last (``model``, ``ddp_model``, ``acmodel``, ``model2``, ``netG``),
#: never inside another name (``get_model_device``, ``model_output``).
_MODEL = re.compile(r"model(?:\d+|_ema|_engine|_without_ddp)?$|(?:^|_)(?:net|network|encoder|"
                    r"decoder|backbone|classifier|generator|discriminator|critic|actor|policy|"
                    r"teacher|student|unet|vae|predictor)(?:\d+|_ema|_engine|_without_ddp)?$|^net[gd]$")
_LOSS = re.compile(r"(?:^|_)(?:criterion|loss_fn|loss_func|lossfn|loss_function|"
                   r"loss_fct|criteria)(?:$|_)")
_OPTIM = re.compile(r"(?:^|_)(?:opt|optim|optimizer|optimiser)s?(?:$|_|\d)")
_DEVICE = re.compile(r"(?:^|_)(?:device|dev|gpu|cuda|rank|local_rank|device_id|gpu_id)(?:$|_|\d)")


#: Functions whose host reads are their purpose, called from a training loop every N steps:
#: evaluation, prediction, sampling, checkpoints, plots.
_PURPOSE = re.compile(r"eval|valid|test|predict|infer|sampl|generat|save|checkpoint|export|"
                      r"plot|visual|summar|dump")


def purpose(fn: str) -> bool:
    return bool(_PURPOSE.search(fn.lower()))


def terminal(node: ast.expr) -> str | None:
    """The last name of ``x`` or ``a.b.x``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


#: A helper that moves its argument to a device: batch_to_device, send_to_device, to_cuda.
_MOVER = re.compile(r"(?:^|_)to_(?:device|cuda|gpu|accelerator)$")


#: A helper that copies its argument to the host: to_numpy, tensor2numpy, to_cpu.
_TO_HOST = re.compile(r"(?:^|_)to_?(?:numpy|np|cpu)$|^tensors?_?(?:2|to_?)(?:numpy|np)$")


#: A function whose result is a host number or string whatever it is handed: a size, a count
#: of items, a name, a path, formatted text (get_batch_size(batch), format_loss(loss)).
_HOST_RESULT = re.compile(r"^(?:get_|compute_|calc_)?(?:num|n|len|size|batch_size|shape)(?:_|$)|"
                          r"(?:^|_)(?:str|string|text|name|names|path|dir|file|len|size|"
                          r"shape|dtype|lr|learning_rate)$|^_*(?:format|fmt|to_str|describe)"
                          r"(?:_|$)")


def host_result_name(node: ast.expr) -> bool:
    name = terminal(node)
    return name is not None and _HOST_RESULT.search(name.lower()) is not None


def to_host_name(node: ast.expr) -> bool:
    name = terminal(node)
    return name is not None and _TO_HOST.search(name.lower()) is not None


def mover_name(node: ast.expr) -> bool:
    name = terminal(node)
    return name is not None and _MOVER.search(name.lower()) is not None


def model_name(node: ast.expr) -> bool:
    name = terminal(node)
    return name is not None and _MODEL.search(name.lower()) is not None


def loss_name(node: ast.expr) -> bool:
    name = terminal(node)
    return name is not None and _LOSS.search(name.lower()) is not None


def optim_name(node: ast.expr) -> bool:
    name = terminal(node)
    return name is not None and _OPTIM.search(name.lower()) is not None and \
        "sched" not in name.lower()


def device_name(name: str) -> bool:
    low = name.lower()
    return bool(_DEVICE.search(low)) and "dtype" not in low and "count" not in low


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of names, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"  # the common case, fast
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def kwarg(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def has_star_kwargs(call: ast.Call) -> bool:
    return any(kw.arg is None for kw in call.keywords)
