"""The run-time selector from Python: kselect.Selector over the C API."""

from __future__ import annotations

import ctypes
import dataclasses
import math
import os
from typing import List, Optional

from . import _capi
from ._capi import KselectError

# The selector's default workspace limit (kselect::ProviderOptions::max_workspace_bytes).
DEFAULT_MAX_WORKSPACE_BYTES = 32 << 20


@dataclasses.dataclass(frozen=True)
class GemmProblem:
    """C = alpha * op(A) op(B) + beta * C; A m x k, B k x n, C m x n (element counts).

    `dtype` names A's, B's and C's type unless dtype_a/dtype_b/dtype_c say otherwise ("bf16",
    "fp16", "fp32", "fp8", "bf8", ...). `layout` gives the memory orders of A, B and C, 'r' or
    'c': cuBLAS's TN, what PyTorch's nn.Linear reaches (m = out features, n = tokens, k = in
    features), is "rcc".
    """

    m: int
    n: int
    k: int
    dtype: str = "bf16"
    layout: str = "rcc"
    batch: int = 1
    dtype_a: Optional[str] = None
    dtype_b: Optional[str] = None
    dtype_c: Optional[str] = None
    compute: str = "fp32"
    alpha: float = 1.0
    beta: float = 0.0

    def to_c(self) -> _capi.GemmProblem:
        # The struct keeps the bytes objects alive (ctypes holds them in _objects).
        problem = _capi.GemmProblem()
        _capi.check(_capi.lib().kselect_gemm_problem_init(ctypes.byref(problem)))
        problem.m = _capi.checked_int("m", self.m)
        problem.n = _capi.checked_int("n", self.n)
        problem.k = _capi.checked_int("k", self.k)
        problem.batch = _capi.checked_int("batch", self.batch)
        problem.layout = _capi.checked_text("layout", self.layout)
        problem.dtype_a = _capi.checked_text("dtype_a", self.dtype_a or self.dtype)
        problem.dtype_b = _capi.checked_text("dtype_b", self.dtype_b or self.dtype)
        problem.dtype_c = _capi.checked_text("dtype_c", self.dtype_c or self.dtype)
        problem.compute = _capi.checked_text("compute", self.compute)
        problem.alpha = _capi.checked_float("alpha", self.alpha)
        problem.beta = _capi.checked_float("beta", self.beta)
        return problem


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One ranked kernel config. `config_key` is its stable identity, `name` a short description,
    `score` what the deciding stage ordered by (higher is better); the predictions are None where
    the stage made none (a ranking model, the library heuristic)."""

    rank: int
    config_key: str
    name: str
    provider: str
    score: float
    predicted_tflops: Optional[float]
    predicted_latency_ms: Optional[float]


class Selection(List[Candidate]):
    """The ranked candidates for a problem, best first (never empty), with the stage that answered
    (`path`: "solution_library", "cache", "model", "analytical", "heuristic",
    "first_implementable"), the stage that made the decision (`decided_by`, which differs from
    `path` for cached decisions), and `note`: why earlier stages were passed over."""

    def __init__(self, candidates, path, decided_by, note, can_implement_checked, problem):
        super().__init__(candidates)
        self.path = path
        self.decided_by = decided_by
        self.note = note
        self.can_implement_checked = can_implement_checked
        self.problem = problem

    def __repr__(self) -> str:
        return (
            f"Selection(path={self.path!r}, decided_by={self.decided_by!r}, "
            f"{list.__repr__(self)})"
        )


@dataclasses.dataclass(frozen=True)
class DispatchInfo:
    """What Selector.gemm ran: the config, the stage that chose it, its 1-based rank in the
    selection, and the configs that failed to prepare or launch before it (`note`)."""

    config_key: str
    config_name: str
    path: str
    rank: int
    note: str


def _optional_number(value: float) -> Optional[float]:
    return None if math.isnan(value) else value


class Selector:
    """An open model directory (made by `kselect train`): selects kernel configs for GEMMs and
    runs them. Thread-safe. Close it (or use it as a context manager) to free it early. A
    cross-provider model directory (holding cross_provider.json, e.g. models/h200_cross_bf16_tn_rank)
    opens too: its selections rank cuBLASLt's and the tile engine's configs in one decision, made
    live on a GPU, and with time_top_k >= 2 `gemm` times both providers' candidates at first use.
    Per-device models are listed ':'-separated (a cross-provider directory among them counts as
    its reference model's device): the one trained for the GPU opens.

    Options mirror kselect::SelectorOptions: top_k configs per selection; the CUDA `device`;
    check_can_implement (ask the provider on the GPU before returning a config); query_heuristic
    (ask the library heuristic live for models trained on its picks); first_stage_candidates (0 =
    score every candidate); solution_library and record_path (files, or None);
    max_workspace_bytes (0 = 32 MiB); time_top_k (gemm times this many of the best-ranked
    configs the first time it runs a problem, on copies of its inputs past 2 x L2 as the bench
    times, and runs the fastest from then on; 0 = off).
    """

    def __init__(
        self,
        model_dir,
        top_k: int = 8,
        device: int = 0,
        check_can_implement: bool = True,
        query_heuristic: bool = True,
        first_stage_candidates: int = 0,
        solution_library=None,
        record_path=None,
        max_workspace_bytes: int = 0,
        time_top_k: int = 0,
    ):
        self._handle = None
        lib = _capi.lib()
        options = _capi.SelectorOptions()
        _capi.check(lib.kselect_selector_options_init(ctypes.byref(options)))
        options.top_k = _capi.checked_int("top_k", top_k, _capi.INT32)
        options.device = _capi.checked_int("device", device, _capi.INT32)
        options.check_can_implement = 1 if check_can_implement else 0
        options.query_heuristic = 1 if query_heuristic else 0
        options.first_stage_candidates = _capi.checked_int(
            "first_stage_candidates", first_stage_candidates, _capi.INT32
        )
        if solution_library:
            options.solution_library = _capi.checked_path("solution_library", solution_library)
        if record_path:
            options.record_path = _capi.checked_path("record_path", record_path)
        options.max_workspace_bytes = _capi.checked_int("max_workspace_bytes", max_workspace_bytes)
        options.time_top_k = _capi.checked_int("time_top_k", time_top_k, _capi.INT32)
        encoded_dir = _capi.checked_path("model_dir", model_dir)
        handle = ctypes.c_void_p()
        _capi.check(
            lib.kselect_selector_open(encoded_dir, ctypes.byref(options), ctypes.byref(handle))
        )
        self._handle = handle
        self.model_dir = os.fspath(model_dir)
        self.top_k = top_k
        self.device = device
        self.max_workspace_bytes = max_workspace_bytes or DEFAULT_MAX_WORKSPACE_BYTES

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Frees the selector; later calls raise KselectError."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            _capi.check(_capi.lib().kselect_selector_close(handle))

    def __enter__(self) -> "Selector":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _open_handle(self):
        if self._handle is None:
            raise KselectError("the selector is closed", code=8)
        return self._handle

    # ------------------------------------------------------------------ selection
    def select(
        self,
        m: int,
        n: int,
        k: int,
        dtype: str = "bf16",
        layout: str = "rcc",
        batch: int = 1,
        **fields,
    ) -> Selection:
        """The ranked configs for a GEMM of this size; `fields` are GemmProblem's other fields
        (dtype_c, compute, alpha, beta, ...)."""
        return self.select_problem(
            GemmProblem(m, n, k, dtype=dtype, layout=layout, batch=batch, **fields)
        )

    def select_problem(self, problem: GemmProblem) -> Selection:
        if not isinstance(problem, GemmProblem):
            raise TypeError(f"problem must be a kselect.GemmProblem, not {type(problem).__name__}")
        lib = _capi.lib()
        c_problem = problem.to_c()
        handle = ctypes.c_void_p()
        _capi.check(
            lib.kselect_selector_select_gemm(
                self._open_handle(), ctypes.byref(c_problem), ctypes.byref(handle)
            )
        )
        try:
            return self._read_selection(lib, handle, problem)
        finally:
            lib.kselect_selection_free(handle)

    @staticmethod
    def _read_selection(lib, handle, problem: GemmProblem) -> Selection:
        def string(getter, *args) -> str:
            out = ctypes.c_char_p()
            _capi.check(getter(handle, *args, ctypes.byref(out)))
            return _capi.text(out.value)

        def number(getter, index) -> float:
            out = ctypes.c_double()
            _capi.check(getter(handle, index, ctypes.byref(out)))
            return out.value

        count = ctypes.c_size_t()
        _capi.check(lib.kselect_selection_count(handle, ctypes.byref(count)))
        checked = ctypes.c_int()
        _capi.check(lib.kselect_selection_can_implement_checked(handle, ctypes.byref(checked)))
        candidates = [
            Candidate(
                rank=i + 1,
                config_key=string(lib.kselect_selection_config_key, i),
                name=string(lib.kselect_selection_config_name, i),
                provider=string(lib.kselect_selection_provider, i),
                score=number(lib.kselect_selection_score, i),
                predicted_tflops=_optional_number(
                    number(lib.kselect_selection_predicted_tflops, i)
                ),
                predicted_latency_ms=_optional_number(
                    number(lib.kselect_selection_predicted_latency_ms, i)
                ),
            )
            for i in range(count.value)
        ]
        return Selection(
            candidates,
            path=string(lib.kselect_selection_path),
            decided_by=string(lib.kselect_selection_decided_by),
            note=string(lib.kselect_selection_note),
            can_implement_checked=bool(checked.value),
            problem=problem,
        )

    # ------------------------------------------------------------------ dispatch
    def gemm(
        self,
        problem: GemmProblem,
        a_ptr: int,
        b_ptr: int,
        c_ptr: int,
        workspace_ptr: int = 0,
        workspace_bytes: int = 0,
        stream: int = 0,
    ) -> DispatchInfo:
        """Runs the problem with the selector's choice on raw device pointers (ints: a tensor's
        data_ptr()), laid out as the problem says, on the CUDA stream `stream` (a cudaStream_t
        as an int; 0 = the default stream). Asynchronous like any launch. The workspace may be 0
        when workspace_bytes is 0 (configs needing more are skipped)."""
        if not isinstance(problem, GemmProblem):
            raise TypeError(f"problem must be a kselect.GemmProblem, not {type(problem).__name__}")
        pointers = [
            _capi.checked_int(name, value, _capi.UINT64)
            for name, value in (
                ("a_ptr", a_ptr),
                ("b_ptr", b_ptr),
                ("c_ptr", c_ptr),
                ("workspace_ptr", workspace_ptr),
                ("stream", stream),
            )
        ]
        workspace_bytes = _capi.checked_int("workspace_bytes", workspace_bytes)
        lib = _capi.lib()
        c_problem = problem.to_c()
        info = _capi.DispatchInfo()
        _capi.check(
            lib.kselect_gemm_run(
                self._open_handle(),
                ctypes.byref(c_problem),
                ctypes.c_void_p(pointers[0]),
                ctypes.c_void_p(pointers[1]),
                ctypes.c_void_p(pointers[2]),
                ctypes.c_void_p(pointers[3]),
                workspace_bytes,
                ctypes.c_void_p(pointers[4]),
                ctypes.byref(info),
            )
        )
        return DispatchInfo(
            config_key=_capi.text(info.config_key),
            config_name=_capi.text(info.config_name),
            path=_capi.text(info.path),
            rank=info.rank,
            note=_capi.text(info.note),
        )

    # ------------------------------------------------------------------ decision cache
    def save_cache(self, path) -> None:
        """Writes the decision cache (with the device, driver, library versions and the model's
        fingerprint it is valid for)."""
        _capi.check(
            _capi.lib().kselect_selector_cache_save(
                self._open_handle(), _capi.checked_path("path", path)
            )
        )

    def load_cache(self, path) -> None:
        """Reads a decision cache; refused (schema_mismatch) when made under another device,
        driver, library or model."""
        _capi.check(
            _capi.lib().kselect_selector_cache_load(
                self._open_handle(), _capi.checked_path("path", path)
            )
        )

    def check_record(self) -> None:
        """Record mode (record_path): retries the problem records a failed write left in memory,
        then raises (io_error, naming the file and the reason) unless every distinct problem asked
        for is in the file. Selections never fail for a record that could not be written."""
        _capi.check(_capi.lib().kselect_selector_record_status(self._open_handle()))

    @property
    def cache_size(self) -> int:
        """Decisions in the cache."""
        out = ctypes.c_size_t()
        _capi.check(
            _capi.lib().kselect_selector_cache_size(self._open_handle(), ctypes.byref(out))
        )
        return out.value
