"""ctypes bindings of kselect's C API (include/kselect/c_api.h): structs, prototypes, loading.

The library is libkselect_c.so: $KSELECT_LIBRARY when set (a build tree's, for tests), else the
copy `pip install .` put beside this file.
"""

from __future__ import annotations

import ctypes
import math
import numbers
import os
import pathlib
import threading

# kselect::StatusCode's names, by value (include/kselect/status.h).
STATUS_NAMES = (
    "ok",
    "invalid_argument",
    "parse_error",
    "schema_mismatch",
    "not_found",
    "io_error",
    "unavailable",
    "cannot_implement",
    "failed_precondition",
    "timeout",
    "internal",
    "unimplemented",
)


class KselectError(RuntimeError):
    """A kselect call failed. `code` is the status value, `code_name` its name
    ("not_found", "invalid_argument", ...); str(error) is kselect's message."""

    def __init__(self, message: str, code: int = 10):
        super().__init__(message)
        self.code = code
        self.code_name = STATUS_NAMES[code] if 0 <= code < len(STATUS_NAMES) else "unknown"


class SelectorOptions(ctypes.Structure):
    _fields_ = [
        ("top_k", ctypes.c_int),
        ("device", ctypes.c_int),
        ("check_can_implement", ctypes.c_int),
        ("query_heuristic", ctypes.c_int),
        ("first_stage_candidates", ctypes.c_int),
        ("solution_library", ctypes.c_char_p),
        ("record_path", ctypes.c_char_p),
        ("max_workspace_bytes", ctypes.c_int64),
        ("time_top_k", ctypes.c_int),
        ("cache_capacity", ctypes.c_int64),
    ]


class GemmProblem(ctypes.Structure):
    _fields_ = [
        ("m", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("batch", ctypes.c_int64),
        ("layout", ctypes.c_char_p),
        ("dtype_a", ctypes.c_char_p),
        ("dtype_b", ctypes.c_char_p),
        ("dtype_c", ctypes.c_char_p),
        ("compute", ctypes.c_char_p),
        ("alpha", ctypes.c_double),
        ("beta", ctypes.c_double),
    ]


class DispatchInfo(ctypes.Structure):
    _fields_ = [
        ("config_key", ctypes.c_char_p),
        ("config_name", ctypes.c_char_p),
        ("path", ctypes.c_char_p),
        ("rank", ctypes.c_int),
        ("note", ctypes.c_char_p),
    ]


_p = ctypes.POINTER
_handle = ctypes.c_void_p
_size = ctypes.c_size_t
# name: argument types (every function returns an int status but the two string getters).
_PROTOTYPES = {
    "kselect_selector_options_init": [_p(SelectorOptions)],
    "kselect_selector_open": [ctypes.c_char_p, _p(SelectorOptions), _p(_handle)],
    "kselect_selector_close": [_handle],
    "kselect_gemm_problem_init": [_p(GemmProblem)],
    "kselect_selector_select_gemm": [_handle, _p(GemmProblem), _p(_handle)],
    "kselect_selection_free": [_handle],
    "kselect_selection_count": [_handle, _p(_size)],
    "kselect_selection_path": [_handle, _p(ctypes.c_char_p)],
    "kselect_selection_decided_by": [_handle, _p(ctypes.c_char_p)],
    "kselect_selection_note": [_handle, _p(ctypes.c_char_p)],
    "kselect_selection_can_implement_checked": [_handle, _p(ctypes.c_int)],
    "kselect_selection_config_key": [_handle, _size, _p(ctypes.c_char_p)],
    "kselect_selection_config_name": [_handle, _size, _p(ctypes.c_char_p)],
    "kselect_selection_provider": [_handle, _size, _p(ctypes.c_char_p)],
    "kselect_selection_score": [_handle, _size, _p(ctypes.c_double)],
    "kselect_selection_predicted_tflops": [_handle, _size, _p(ctypes.c_double)],
    "kselect_selection_predicted_latency_ms": [_handle, _size, _p(ctypes.c_double)],
    "kselect_selector_cache_save": [_handle, ctypes.c_char_p],
    "kselect_selector_cache_load": [_handle, ctypes.c_char_p],
    "kselect_selector_cache_size": [_handle, _p(_size)],
    "kselect_selector_record_status": [_handle],
    "kselect_gemm_run": [
        _handle,
        _p(GemmProblem),
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_void_p,
        _p(DispatchInfo),
    ],
}

_lock = threading.Lock()
_lib = None


def library_path() -> str:
    """Where libkselect_c.so is loaded from."""
    path = os.environ.get("KSELECT_LIBRARY")
    if path:
        return path
    return str(pathlib.Path(__file__).resolve().parent / "libkselect_c.so")


def lib() -> ctypes.CDLL:
    """The loaded C library, with its prototypes set (loaded on first use)."""
    global _lib
    with _lock:
        if _lib is None:
            path = library_path()
            if not os.path.exists(path):
                raise KselectError(
                    f"kselect's C library is not at {path}: install the module with "
                    "`pip install .` from the kselect repository, or point KSELECT_LIBRARY at a "
                    "built libkselect_c.so",
                    code=4,
                )
            try:
                loaded = ctypes.CDLL(path)
            except OSError as e:
                # Usually a CUDA library (libcublasLt, libnvrtc) the loader cannot find.
                raise KselectError(
                    f"cannot load {path}: {e} (is the CUDA toolkit's lib64 on the loader's "
                    "path, e.g. LD_LIBRARY_PATH?)",
                    code=6,
                ) from e
            for name, argtypes in _PROTOTYPES.items():
                try:
                    function = getattr(loaded, name)
                except AttributeError:
                    raise KselectError(
                        f"{path} is not kselect's C library (it has no {name}): point "
                        "KSELECT_LIBRARY at libkselect_c.so, or unset it",
                        code=1,
                    ) from None
                function.argtypes = argtypes
                function.restype = ctypes.c_int
            loaded.kselect_last_error.argtypes = []
            loaded.kselect_last_error.restype = ctypes.c_char_p
            loaded.kselect_version.argtypes = []
            loaded.kselect_version.restype = ctypes.c_char_p
            _lib = loaded
        return _lib


# Argument checks before ctypes: ctypes wraps an int past its C type silently (a different problem
# then reaches the library) and cuts a string at an embedded NUL (another file is opened).
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT64 = (0, 2**64 - 1)


def checked_int(name: str, value, bounds=INT64) -> int:
    """`value` as an int within `bounds`; TypeError for a non-integer, ValueError out of range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    value = int(value)
    low, high = bounds
    if not low <= value <= high:
        raise ValueError(f"{name} is {value}, outside [{low}, {high}]")
    return value


def checked_float(name: str, value) -> float:
    """`value` as a finite float (a NaN never equals itself: no cache could hold its problem)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, not {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, not {value}")
    return value


def checked_text(name: str, value) -> bytes:
    """A str argument as UTF-8; TypeError for another type, ValueError for an embedded NUL."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if "\0" in value:
        raise ValueError(f"{name} contains a NUL character")
    return value.encode()


def checked_path(name: str, value) -> bytes:
    """A path argument (str, bytes or os.PathLike) as bytes; ValueError for an embedded NUL, as
    open() raises."""
    try:
        encoded = os.fsencode(value)
    except TypeError:
        raise TypeError(f"{name} must be a path, not {type(value).__name__}") from None
    if b"\0" in encoded:
        raise ValueError(f"{name} contains a NUL character")
    return encoded


def check(status: int) -> None:
    """Raises KselectError with the thread's last error when `status` is not OK."""
    if status != 0:
        message = lib().kselect_last_error().decode("utf-8", "replace")
        raise KselectError(message, code=status)


def text(value) -> str:
    return "" if value is None else value.decode("utf-8", "replace")


def version() -> str:
    """kselect's version ("0.1.0"), from the loaded C library."""
    return text(lib().kselect_version())
