"""Measuring helpers the PyTorch device scripts share (torch_bench.py, conv_bench.py,
layer_e2e.py): wall-clock milliseconds per call and the relative difference of two results.
torch is imported when a helper is called, so a script may set its environment first."""
import time


def wall_ms(fn, reps):
    """Milliseconds per call of `fn`, `reps` calls between two device synchronisations (host
    launch cost included: what an eager step costs)."""
    import torch

    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3 / reps


def rel_diff(a, b):
    """|a - b| / |b| in the Frobenius norm, in fp32 (0 when both are zero)."""
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()
