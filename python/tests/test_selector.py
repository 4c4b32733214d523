"""kselect's Python module on the CPU: a shipped model opens and selects, bad input raises
KselectError with kselect's message. Run by CTest (python_api) with KSELECT_LIBRARY pointing at the
build tree's libkselect_c.so, or after `pip install .`:
    python -m unittest discover -s python/tests -t python
"""

import math
import os
import pathlib
import re
import tempfile
import subprocess
import sys
import threading
import unittest

import kselect

MODELS_DIR = pathlib.Path(
    os.environ.get("KSELECT_MODELS_DIR", pathlib.Path(__file__).resolve().parents[2] / "models")
)
# A bf16 TN model without the heuristic's picks as features: it decides on the CPU through the
# model, and is quick there (about 0.4 s to open, 10 ms a decision; h200_cublaslt_default, which
# the C test opens, takes about 0.7 s to score its whole candidate table per decision).
DEFAULT_MODEL = MODELS_DIR / "h200_cublaslt_bf16_tn"
def ctypes_util_libc():
    """The path of a shared library that is certainly not kselect's: ctypes' own extension."""
    import _ctypes

    return _ctypes.__file__


PATHS = {"solution_library", "cache", "model", "analytical", "heuristic", "first_implementable"}


class OpenSelector(unittest.TestCase):
    """Opens the default model once for the class's tests (no tests of its own)."""

    @classmethod
    def setUpClass(cls):
        cls.selector = kselect.Selector(DEFAULT_MODEL, top_k=3)

    @classmethod
    def tearDownClass(cls):
        cls.selector.close()


class SelectorTest(OpenSelector):
    def test_version(self):
        self.assertRegex(kselect.version(), r"^\d+\.\d+\.\d+")

    def test_selects_an_llm_decode_gemm(self):
        # nn.Linear(4096, 4096) on 16 tokens: cuBLAS TN, m = out features, n = tokens.
        selection = self.selector.select(4096, 16, 4096, dtype="bf16", layout="rcc")
        self.assertIsInstance(selection, list)
        self.assertGreaterEqual(len(selection), 1)
        self.assertLessEqual(len(selection), 3)
        self.assertIn(selection.path, PATHS)
        self.assertIn(selection.decided_by, PATHS)
        self.assertIsInstance(selection.note, str)
        for rank, candidate in enumerate(selection, start=1):
            self.assertEqual(candidate.rank, rank)
            self.assertEqual(candidate.provider, "cublaslt")
            self.assertTrue(candidate.config_key.startswith("cublaslt:"), candidate.config_key)
            self.assertTrue(candidate.name)
            self.assertTrue(math.isfinite(candidate.score))
            if candidate.predicted_tflops is not None:
                self.assertGreater(candidate.predicted_tflops, 0)
        scores = [c.score for c in selection]
        self.assertEqual(scores, sorted(scores, reverse=True))

    def test_second_ask_comes_from_the_cache(self):
        first = self.selector.select(14336, 2048, 4096)
        again = self.selector.select(14336, 2048, 4096)
        self.assertEqual(again.path, "cache")
        self.assertEqual(again.decided_by, first.decided_by)
        self.assertEqual([c.config_key for c in again], [c.config_key for c in first])
        self.assertGreaterEqual(self.selector.cache_size, 1)

    def test_problem_object(self):
        problem = kselect.GemmProblem(m=4096, n=2048, k=14336, dtype="bf16", layout="rcc")
        selection = self.selector.select_problem(problem)
        self.assertIs(selection.problem, problem)
        self.assertGreaterEqual(len(selection), 1)

    def test_bad_problems_raise(self):
        cases = [
            (dict(m=0, n=16, k=4096), "m must be positive, got 0"),
            (dict(m=4096, n=16, k=-3), "k must be positive, got -3"),
            (dict(m=4096, n=16, k=4096, batch=0), "batch must be positive"),
            (dict(m=4096, n=16, k=4096, dtype="bf17"), "unknown data type 'bf17'"),
            (dict(m=4096, n=16, k=4096, layout="rxc"), "layout 'rxc'"),
        ]
        for fields, message in cases:
            with self.subTest(fields=fields):
                with self.assertRaises(kselect.KselectError) as raised:
                    self.selector.select(**fields)
                self.assertIn(message, str(raised.exception))
                self.assertEqual(raised.exception.code_name, "invalid_argument")

    def test_gemm_checks_its_pointers_before_the_gpu(self):
        problem = kselect.GemmProblem(m=64, n=64, k=64)
        with self.assertRaises(kselect.KselectError) as raised:
            self.selector.gemm(problem, 0, 0, 0)
        self.assertIn("a is NULL", str(raised.exception))

    def test_cache_file_round_trip(self):
        self.selector.select(4096, 1, 14336)
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "decisions.json"
            self.selector.save_cache(path)
            self.assertTrue(path.exists())
            with kselect.Selector(DEFAULT_MODEL, top_k=3) as other:
                other.load_cache(path)
                self.assertEqual(other.cache_size, self.selector.cache_size)
                self.assertEqual(other.select(4096, 1, 14336).path, "cache")
            with self.assertRaises(kselect.KselectError) as raised:
                self.selector.load_cache(pathlib.Path(tmp) / "missing.json")
            self.assertIn("missing.json", str(raised.exception))

    def test_record_mode_reports_its_state(self):
        # Issue 44, defect 4: record mode's state is visible (a failed write raises io_error here;
        # tests/selector/selector_test.cpp makes one fail).
        self.selector.check_record()  # record mode off: nothing to report
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "asked.jsonl"
            with kselect.Selector(DEFAULT_MODEL, top_k=3, record_path=path) as recording:
                recording.select(4096, 3, 4096)
                recording.check_record()
            self.assertEqual(len(path.read_text().splitlines()), 1)

    def test_threads_share_one_selector(self):
        errors = []
        results = {}

        def work(n):
            try:
                results[n] = [c.config_key for c in self.selector.select(4096, n, 4096)]
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(n,)) for n in (8, 24, 40, 56)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(sorted(results), [8, 24, 40, 56])


class OpenTest(unittest.TestCase):
    def test_missing_model_dir_names_the_path(self):
        with tempfile.TemporaryDirectory() as tmp:
            missing = os.path.join(tmp, "no_such_model")
            with self.assertRaises(kselect.KselectError) as raised:
                kselect.Selector(missing)
            self.assertIn(missing, str(raised.exception))
            self.assertNotEqual(raised.exception.code, 0)

    def test_cross_provider_model_opens(self):
        # cuBLASLt and the tile engine in one decision, made live: on a host without a GPU,
        # selecting says so; it keeps no cache file.
        with kselect.Selector(MODELS_DIR / "h200_cross_bf16_tn_rank", time_top_k=3) as cross:
            try:
                selection = cross.select(4096, 1, 4096)
                self.assertGreaterEqual(len(selection), 2)
                self.assertIn("cross-provider", selection.note)
            except kselect.KselectError as e:
                self.assertEqual(e.code, 6)  # KSELECT_UNAVAILABLE: no GPU here
            self.assertEqual(cross.cache_size, 0)
            with tempfile.TemporaryDirectory() as tmp:
                with self.assertRaises(kselect.KselectError) as raised:
                    cross.save_cache(os.path.join(tmp, "decisions.json"))
                self.assertIn("no decision cache", str(raised.exception))

    def test_bad_options_raise(self):
        with self.assertRaises(kselect.KselectError) as raised:
            kselect.Selector(DEFAULT_MODEL, top_k=0)
        self.assertIn("top_k", str(raised.exception))
        with self.assertRaises(kselect.KselectError) as raised:
            kselect.Selector(DEFAULT_MODEL, time_top_k=-1)
        self.assertIn("time_top_k", str(raised.exception))

    def test_closed_selector_raises(self):
        selector = kselect.Selector(DEFAULT_MODEL, top_k=1)
        selector.close()
        selector.close()  # twice is fine
        with self.assertRaises(kselect.KselectError) as raised:
            selector.select(64, 64, 64)
        self.assertIn("closed", str(raised.exception))


class TorchHelperTest(unittest.TestCase):
    def test_imports_without_torch(self):
        import kselect.torch as kt  # must not import torch itself

        self.assertTrue(callable(kt.linear))
        self.assertIs(kselect.torch, kt)

    def test_without_torch_says_so(self):
        try:
            import torch  # noqa: F401
        except ImportError:
            pass
        else:
            self.skipTest("torch is installed: scripts/device/python_check.py covers linear()")
        with self.assertRaisesRegex(ImportError, "needs PyTorch"):
            kselect.torch.linear(None, None, None)


class ArgumentCheckTest(OpenSelector):
    """What ctypes would silently wrap or cut is refused before the C library sees it."""

    def test_ints_past_their_c_type_raise(self):
        # 2**64 + 4096 would wrap to 4096: another problem's decision would come back.
        for m in (2**64 + 4096, 2**63, -(2**63) - 1):
            with self.assertRaisesRegex(ValueError, "m is"):
                self.selector.select(m, 16, 4096)
        with self.assertRaisesRegex(ValueError, "top_k"):
            kselect.Selector(DEFAULT_MODEL, top_k=2**32 + 3)
        with self.assertRaisesRegex(ValueError, "device"):
            kselect.Selector(DEFAULT_MODEL, device=2**31)
        problem = kselect.GemmProblem(4096, 16, 4096)
        with self.assertRaisesRegex(ValueError, "a_ptr"):
            self.selector.gemm(problem, 2**64 + 16, 16, 16)
        with self.assertRaisesRegex(TypeError, "n must be an int"):
            self.selector.select(4096, "16", 4096)
        with self.assertRaisesRegex(TypeError, "n must be an int"):
            self.selector.select(4096, True, 4096)

    def test_embedded_nul_raises(self):
        with self.assertRaisesRegex(ValueError, "dtype_a contains a NUL"):
            self.selector.select(4096, 16, 4096, dtype="bf16\0fp8")
        with self.assertRaisesRegex(ValueError, "model_dir contains a NUL"):
            kselect.Selector(str(DEFAULT_MODEL) + "\0other")
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaisesRegex(ValueError, "path contains a NUL"):
                self.selector.save_cache(os.path.join(tmp, "cache.json\0.bak"))
            self.assertEqual(os.listdir(tmp), [])

    def test_non_finite_scalars_raise(self):
        for value in (float("nan"), float("inf")):
            with self.assertRaisesRegex(ValueError, "alpha must be finite"):
                self.selector.select(4096, 16, 4096, alpha=value)

    def test_wrong_types_raise_type_error(self):
        with self.assertRaisesRegex(TypeError, "GemmProblem"):
            self.selector.select_problem(None)
        with self.assertRaisesRegex(TypeError, "model_dir must be a path"):
            kselect.Selector(12)


class LibraryTest(unittest.TestCase):
    def test_another_library_is_named_not_an_attribute_error(self):
        code = (
            "import kselect\n"
            "try:\n"
            "    kselect.version()\n"
            "except kselect.KselectError as e:\n"
            "    print('refused:', e)\n"
        )
        env = dict(os.environ, KSELECT_LIBRARY=ctypes_util_libc())
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        self.assertIn("is not kselect's C library", out.stdout, out.stderr)

    def test_library_path_follows_the_environment(self):
        if "KSELECT_LIBRARY" in os.environ:
            self.assertEqual(kselect.library_path(), os.environ["KSELECT_LIBRARY"])
        else:
            self.assertTrue(re.search(r"libkselect_c\.so$", kselect.library_path()))


if __name__ == "__main__":
    unittest.main()
