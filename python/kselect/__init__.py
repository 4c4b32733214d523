"""kselect from Python: the run-time kernel selector (ctypes over libkselect_c.so).

    import kselect
    with kselect.Selector(kselect.default_model("h200"), top_k=3) as selector:
        selection = selector.select(m=4096, n=16, k=4096, dtype="bf16", layout="rcc")
        print(selection.path, selection[0].name, selection[0].predicted_tflops)

The installed package (`pip install .`) holds the shipped models (kselect.models_dir(),
kselect.default_model()) and the `kselect` CLI. PyTorch: kselect.torch.enable() routes a model's
GEMMs and convolutions through kselect (docs/pytorch.md); torch is imported only when
kselect.torch is used.
"""

from ._capi import KselectError, library_path, version
from ._models import data_dir, default_model, models_dir
from .selector import Candidate, DispatchInfo, GemmProblem, Selection, Selector

__all__ = [
    "Candidate",
    "DispatchInfo",
    "GemmProblem",
    "KselectError",
    "Selection",
    "Selector",
    "data_dir",
    "default_model",
    "library_path",
    "models_dir",
    "version",
]


def __getattr__(name):
    # kselect.torch on first use, so `import kselect` never imports torch.
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'kselect' has no attribute {name!r}")
