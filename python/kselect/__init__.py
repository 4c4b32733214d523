"""kselect from Python: the run-time kernel selector (ctypes over libkselect_c.so).

    import kselect
    with kselect.Selector("models/h200_cublaslt_default", top_k=3) as selector:
        selection = selector.select(m=4096, n=16, k=4096, dtype="bf16", layout="rcc")
        print(selection.path, selection[0].name, selection[0].predicted_tflops)

PyTorch: kselect.torch.linear(x, w, selector) computes x @ w.T (nn.Linear) through kselect; torch
is imported only when kselect.torch is used.
"""

from ._capi import KselectError, library_path, version
from .selector import Candidate, DispatchInfo, GemmProblem, Selection, Selector

__all__ = [
    "Candidate",
    "DispatchInfo",
    "GemmProblem",
    "KselectError",
    "Selection",
    "Selector",
    "library_path",
    "version",
]


def __getattr__(name):
    # kselect.torch on first use, so `import kselect` never imports torch.
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'kselect' has no attribute {name!r}")
