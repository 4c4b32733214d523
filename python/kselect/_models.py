"""Where the models and data kselect ships are: inside the installed package
(kselect/share/kselect/, put there by `pip install .`), or where KSELECT_MODELS_DIR says.

    import kselect
    with kselect.Selector(kselect.default_model("h200"), top_k=3) as selector:
        ...
"""

from __future__ import annotations

import os
import pathlib

MODELS_DIR_VARIABLE = "KSELECT_MODELS_DIR"

# (device, op) -> models/<name>. The wheel's model set is KSELECT_WHEEL_MODELS in
# cmake/KselectWheel.cmake: keep both in step. docs/models.md says how each was trained and how
# it scores.
_DEFAULTS = {
    # The cuBLASLt ranker alone (six dtype/layout sets, the heuristic's picks as features).
    ("h200", "gemm"): "h200_cublaslt_default_rank",
    ("h100", "gemm"): "h100_cublaslt_default_rank",
    # bf16 nn.Linear: cuBLASLt's ranker against the tile engine, the top 3 timed at first use.
    ("h200", "gemm_cross"): "h200_cross_bf16_tn_rank",
    # Convolution through cuDNN, one model per direction.
    ("h200", "conv_fwd"): "h200_cudnn_conv_fwd",
    ("h200", "conv_bwd_data"): "h200_cudnn_conv_bwd_data",
    ("h200", "conv_bwd_weight"): "h200_cudnn_conv_bwd_weight",
}


def data_dir() -> pathlib.Path:
    """The installed data root (models/, rules/, hardware/), laid out as an install's
    share/kselect/: the CLI reads it as KSELECT_DATA_DIR."""
    return pathlib.Path(__file__).resolve().parent / "share" / "kselect"


def models_dir() -> pathlib.Path:
    """The folder holding the shipped models: $KSELECT_MODELS_DIR when set, else the installed
    package's. Each model is a folder under it (models_dir() / "h200_cublaslt_default_rank")."""
    path = os.environ.get(MODELS_DIR_VARIABLE)
    if path:
        return pathlib.Path(path)
    return data_dir() / "models"


def default_model(device: str = "h200", op: str = "gemm") -> pathlib.Path:
    """The shipped model for `device` ("h200" or "h100") and `op`: "gemm" (the cuBLASLt ranker,
    every dtype and layout), "gemm_cross" (bf16 TN: cuBLASLt against the tile engine, timed at
    first use on the GPU), "conv_fwd", "conv_bwd_data" or "conv_bwd_weight". Raises KeyError for
    a pair no model covers, FileNotFoundError when the folder is missing (a source checkout
    without `pip install`: set KSELECT_MODELS_DIR to its models/)."""
    key = (device.lower(), op)
    if key not in _DEFAULTS:
        known = ", ".join(f"{d}/{o}" for d, o in _DEFAULTS)
        raise KeyError(f"no shipped model for device {device!r}, op {op!r} (known: {known})")
    path = models_dir() / _DEFAULTS[key]
    if not path.is_dir():
        raise FileNotFoundError(
            f"{path} is not there: install kselect with `pip install .`, or set "
            f"{MODELS_DIR_VARIABLE} to a folder holding {_DEFAULTS[key]}"
        )
    return path
