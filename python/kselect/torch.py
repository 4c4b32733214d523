"""kselect inside PyTorch: one switch routes a program's GEMMs and convolutions through kselect.

    import kselect.torch as kt
    kt.enable()                      # F.linear, matmul, bmm, conv2d/3d and their backward on CUDA
    report = kt.prepare(model, token_counts=range(1, 257))   # decide every shape ahead of time
    ...                              # eager, torch.compile, CUDA graphs: unchanged code
    print(kt.summary())              # calls routed, passed through (and why), decisions

Or, for a program you do not edit: KSELECT_TORCH=1 python app.py (torch loads kselect when it is
imported; KSELECT_TORCH may also name the routing rules, see `enable`).

The operators live in libkselect_torch.so (src/pytorch/torch_ops.cpp), built against the
installed torch: aten's CUDA mm/bmm and cuDNN convolution kernels are replaced while routing is
on, so each call costs PyTorch's own dispatch plus a lookup; a problem's first call decides it
(the model's top k timed beside the vendor's own pick, which is kept unless beaten by more than
1 %). What kselect does not
run (fp32, odd strides, a problem first met during graph capture, ...) runs PyTorch's kernel and
is counted. The explicit operators torch.ops.kselect.{mm, bmm, addmm, linear} route whether or
not the switch is on, have autograd, and trace under torch.compile(fullgraph=True).

torch is imported when a function here is called, not when this module is.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import threading
import time

_lock = threading.Lock()
_loaded = False
_configured_rules = None
_ops = None  # torch.ops.kselect once loaded (read without the lock: torch.compile traces it)


def _torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError("kselect.torch needs PyTorch (pip install torch)") from e
    return torch


def library_path() -> str:
    """Where libkselect_torch.so is loaded from: $KSELECT_TORCH_LIBRARY, else beside this
    module (an installed package), else the source tree's build/lib."""
    path = os.environ.get("KSELECT_TORCH_LIBRARY")
    if path:
        return path
    here = pathlib.Path(__file__).resolve().parent
    installed = here / "libkselect_torch.so"
    if installed.exists():
        return str(installed)
    return str(here.parent.parent / "build" / "lib" / "libkselect_torch.so")


def load():
    """Loads the operators into torch (once), registers their fake implementations and, when
    nothing is configured yet, the default rules (so the explicit operators route at once).
    Call it, or enable(), before torch.compile traces kselect's operators."""
    global _loaded, _ops
    torch = _torch()
    with _lock:
        first = not _loaded
        if first:
            path = library_path()
            if not os.path.exists(path):
                raise ImportError(
                    f"kselect's PyTorch operators are not at {path}: install kselect with pip in an "
                    "environment that has torch (pip install --no-build-isolation .), or build the "
                    "kselect_torch target and set KSELECT_TORCH_LIBRARY"
                )
            try:
                torch.ops.load_library(path)
            except OSError as e:
                raise ImportError(
                    f"cannot load {path}: {e} (it must be built against this torch, "
                    f"{torch.__version__})"
                ) from e

            def mm_fake(a, b):
                torch._check(a.dim() == 2 and b.dim() == 2, lambda: "kselect::mm takes 2-D tensors")
                torch._check(a.shape[1] == b.shape[0], lambda: "kselect::mm: inner sizes differ")
                return a.new_empty((a.shape[0], b.shape[1]))

            def bmm_fake(a, b):
                torch._check(a.dim() == 3 and b.dim() == 3, lambda: "kselect::bmm takes 3-D tensors")
                torch._check(a.shape[2] == b.shape[1], lambda: "kselect::bmm: inner sizes differ")
                return a.new_empty((a.shape[0], a.shape[1], b.shape[2]))

            torch.library.register_fake("kselect::mm", mm_fake)
            torch.library.register_fake("kselect::bmm", bmm_fake)
            _ops = torch.ops.kselect
            _loaded = True
    if first and _configured_rules is None:
        try:
            configure()
        except FileNotFoundError:
            pass  # no shipped models here: configure() names the ones to use
    return _ops


def _kselect_ops():
    return _ops if _ops is not None else load()


def _models_dir() -> pathlib.Path:
    """$KSELECT_MODELS_DIR, else the installed package's models, else the source tree's."""
    env = os.environ.get("KSELECT_MODELS_DIR")
    if env:
        return pathlib.Path(env)
    from ._models import models_dir

    installed = models_dir()
    if installed.is_dir():
        return installed
    return pathlib.Path(__file__).resolve().parent.parent.parent / "models"


def default_rules() -> list:
    """The shipped models' routing rules, one ':'-list per rule whose entry trained for the GPU
    in use is opened when a device first routes (no CUDA call here): nn.Linear's forward GEMM
    (bf16 "rcc") by the H200 cross-provider model (cuBLASLt and the tile engine) or the H100
    cuBLASLt ranker, every other bf16/fp16 layout (the backward GEMMs) by the H200 or H100
    cuBLASLt ranker, and each convolution direction by its H200 cuDNN model. On another GPU the
    first entry opens and its model stage says it was trained for another device (the vendor's
    heuristic then decides)."""
    models = _models_dir()
    h200, h100 = models / "h200_cublaslt_default_rank", models / "h100_cublaslt_default_rank"
    return [
        f"bf16/rcc={models / 'h200_cross_bf16_tn_rank'}:{h100}",
        f"bf16={h200}:{h100}",
        f"fp16={h200}:{h100}",
        f"conv/fwd={models / 'h200_cudnn_conv_fwd'}",
        f"conv/bwd_data={models / 'h200_cudnn_conv_bwd_data'}",
        f"conv/bwd_weight={models / 'h200_cudnn_conv_bwd_weight'}",
    ]


def configure(rules=None, time_top_k: int = 3, share_across_n: bool = True,
              conv_time_top_k: int = 5) -> list:
    """Sets which model decides which GEMMs and convolutions: rules "PATTERN=MODEL_DIR", first
    match wins (GEMM PATTERN: "*", a dtype "bf16", or "bf16/rcc" with kselect's layout letters of
    the cuBLAS call, nn.Linear's forward is "rcc"; convolution PATTERN: "conv", "conv/fwd",
    "conv/bwd_data", "conv/bwd_weight"). time_top_k: the model's configs timed at a problem's
    first call beside cuBLASLt's own pick (0 or 1: untimed and unguarded). share_across_n: the
    first problem of a token-count bucket (1, 2, 3, 4, 6, 8, 12, 16, 24, ...) is timed and the
    others of the bucket run its winner untimed (about 40 ms of timing saved per problem; False
    times every problem). conv_time_top_k: the same for convolutions (the conv models reach
    99.3 % of the best config with 5). Decisions made so far are dropped. Returns the rules."""
    global _configured_rules
    load()
    torch = _torch()
    rules = list(rules) if rules is not None else default_rules()
    for rule in rules:
        model = rule.split("=", 1)[-1]
        # A directory each (a FIFO or a file there would fail later, on the GPU, less clearly).
        if not all(os.path.isdir(p) for p in model.split(":")):
            raise FileNotFoundError(f"kselect.torch: no model directory {model} (rule {rule!r})")
    torch.ops.kselect._configure(rules, int(time_top_k), bool(share_across_n),
                                 int(conv_time_top_k))
    _configured_rules = rules
    return rules


def enable(rules=None, time_top_k: int = 3, share_across_n: bool = True):
    """Routes aten's CUDA mm, mm.out and bmm (F.linear, matmul, @, their backward) through
    kselect until disable(). Configures the default rules first when nothing is configured, or
    the given ones."""
    load()
    if rules is not None or _configured_rules is None:
        configure(rules, time_top_k, share_across_n)
    _torch().ops.kselect._route_aten(True)


def disable():
    """PyTorch's own kernels again (decisions are kept for the next enable())."""
    if _loaded:
        _torch().ops.kselect._route_aten(False)


def is_enabled() -> bool:
    return _loaded and summary()["aten_routing"]


@contextlib.contextmanager
def enabled(rules=None, time_top_k: int = 3, share_across_n: bool = True):
    """with kselect.torch.enabled(): ... routes inside the block only."""
    load()
    torch = _torch()
    if rules is not None or _configured_rules is None:
        configure(rules, time_top_k, share_across_n)
    was = torch.ops.kselect._route_aten(True)
    try:
        yield
    finally:
        if not was:
            torch.ops.kselect._route_aten(False)


def summary() -> dict:
    """Calls routed and passed through (by reason), the rules, every decision made (problem,
    config, configs timed, whether cuBLASLt's pick was kept, milliseconds spent) and the total
    decision time."""
    load()
    return json.loads(_torch().ops.kselect._summary())


def reset_counts():
    load()
    _torch().ops.kselect._reset_counts()


def save_decisions(directory) -> int:
    """Writes the models' decisions of every problem met so far (the ranking and the config
    first-use timing chose) into `directory` (one file a model, stamped with the device, driver,
    library and model), for load_decisions in a later process. Returns the number of files.
    Cross-provider GEMM routes are not saved."""
    load()
    return int(_torch().ops.kselect._save_decisions(os.path.expanduser(os.fspath(directory))))


def load_decisions(directory):
    """Reads the files save_decisions wrote, as each model opens (until called again; None
    stops it): problems decided before skip the ranking (for convolutions, cuDNN's plan builds of
    the walk down the model's order) and the first-use timing, and run the config that timing
    chose then. A file made under another device, driver, library or model is refused and
    listed in summary()["model_errors"]; summary()["decision_files"] lists what was read."""
    load()
    path = "" if directory is None else os.path.expanduser(os.fspath(directory))
    _torch().ops.kselect._load_decisions(path)


# ----------------------------------------------------------------------- explicit operators
def mm(a, b):
    return _kselect_ops().mm(a, b)


def bmm(a, b):
    return _kselect_ops().bmm(a, b)


def addmm(bias, a, b, *, beta=1, alpha=1):
    return _kselect_ops().addmm(bias, a, b, beta=beta, alpha=alpha)


def linear(x, w, bias=None):
    """y = x @ w.T (+ bias), as torch.nn.functional.linear, through kselect (autograd works)."""
    return _kselect_ops().linear(x, w, bias)


# torch dtype name -> kselect's type name.
_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def selector_linear(x, w, selector, bias=None):
    """y = x @ w.T (+ bias) through a given kselect.Selector (ctypes over libkselect_c.so): for
    a selector the operators do not cover (one opened with a tuned solution library, say). A
    ctypes call and a workspace allocation per call, no autograd: use enable() or linear() for
    speed.

    x: (..., in_features), w: (out_features, in_features), CUDA tensors of one dtype (bf16, fp16
    or fp32) on the selector's device. The product reaches kselect as cuBLAS's TN ("rcc"): m =
    out_features (A = w, row-major), n = tokens (B = x, column-major in x tokens), k =
    in_features; C is then y, tokens x out_features row-major. Runs on the current stream, with a
    workspace from torch's allocator.
    """
    torch = _torch()
    if not (x.is_cuda and w.is_cuda):
        raise ValueError("kselect.torch.selector_linear needs CUDA tensors")
    if x.device != w.device:
        raise ValueError(f"x is on {x.device}, w on {w.device}")
    if x.device.index != selector.device:
        raise ValueError(
            f"the selector was opened for cuda:{selector.device}, the tensors are on {x.device}"
        )
    if x.dtype != w.dtype:
        raise TypeError(f"x is {x.dtype}, w is {w.dtype}: both must have one dtype")
    dtype = _DTYPES.get(str(x.dtype).replace("torch.", ""))
    if dtype is None:
        raise TypeError(f"kselect.torch.selector_linear takes bfloat16, float16 or float32, not {x.dtype}")
    if w.dim() != 2 or x.dim() < 1 or x.shape[-1] != w.shape[1]:
        raise ValueError(f"shapes {tuple(x.shape)} and {tuple(w.shape)} do not make x @ w.T")

    out_features, in_features = w.shape
    x2 = x.reshape(-1, in_features).contiguous()
    w = w.contiguous()
    tokens = x2.shape[0]
    y = torch.empty((tokens, out_features), dtype=x.dtype, device=x.device)
    if tokens > 0 and out_features > 0:
        if in_features == 0:
            y.zero_()
        else:
            from .selector import GemmProblem

            problem = GemmProblem(
                m=out_features, n=tokens, k=in_features, dtype=dtype, layout="rcc"
            )
            # The caching allocator orders the workspace's reuse on this stream after the launch.
            workspace = torch.empty(
                selector.max_workspace_bytes, dtype=torch.uint8, device=x.device
            )
            stream = torch.cuda.current_stream(x.device).cuda_stream
            with torch.cuda.device(x.device):
                selector.gemm(
                    problem,
                    w.data_ptr(),
                    x2.data_ptr(),
                    y.data_ptr(),
                    workspace.data_ptr(),
                    workspace.numel(),
                    stream,
                )
    if bias is not None:
        y.add_(bias)
    return y.reshape(*x.shape[:-1], out_features)


__all__ = ["linear", "KselectError"]


# ----------------------------------------------------------------------- ahead of time
def prepare(model, token_counts, *, backward: bool = False, dtype=None) -> dict:
    """Decides (and, with time_top_k >= 2, times) the GEMMs of every nn.Linear in `model` for
    each token count, before any graph capture: each distinct (out, in, dtype, device) weight
    shape is run once per token count through F.linear with random inputs (and, with backward,
    its two backward GEMMs). Returns what it took: problems, new decisions, seconds."""
    torch = _torch()
    enable_after = is_enabled() if _loaded else False
    load()
    if _configured_rules is None:
        configure()
    shapes = {}
    for module in model.modules():
        if isinstance(module, torch.nn.Linear) and module.weight.is_cuda:
            w = module.weight
            t = dtype or w.dtype
            shapes[(w.shape[0], w.shape[1], t, w.device)] = None
    before = len(summary()["decisions"])
    start = time.perf_counter()
    torch.ops.kselect._route_aten(True)
    try:
        with torch.no_grad():
            for out_f, in_f, t, device in shapes:
                w = torch.randn(out_f, in_f, dtype=t, device=device)
                for n in token_counts:
                    x = torch.randn(int(n), in_f, dtype=t, device=device)
                    y = torch.nn.functional.linear(x, w)
                    if backward:
                        torch.mm(y, w)  # dX = dY W
                        torch.mm(y.t(), x)  # dW = dY^T X
        torch.cuda.synchronize()
    finally:
        if not enable_after:
            torch.ops.kselect._route_aten(False)
    seconds = time.perf_counter() - start
    after = summary()
    return {
        "weight_shapes": len(shapes),
        "token_counts": len(list(token_counts)),
        "new_decisions": len(after["decisions"]) - before,
        "seconds": seconds,
    }


def _autoload():
    """torch's device-backend autoload entry point (`import torch` calls it when kselect is
    installed): KSELECT_TORCH=1 enables the default rules; KSELECT_TORCH="rule;rule" given ones;
    unset or 0: nothing. Never fails torch's import: a problem is printed and routing stays off."""
    setting = os.environ.get("KSELECT_TORCH", "").strip()
    if setting in ("", "0", "off"):
        return
    try:
        rules = None if setting in ("1", "on") else [r for r in setting.split(";") if r]
        top_k = int(os.environ.get("KSELECT_TIME_TOP_K", "3"))
        enable(rules, top_k)
    except Exception as e:  # noqa: BLE001 - the application must still run
        import sys

        print(f"kselect.torch: not enabled: {e}", file=sys.stderr)
