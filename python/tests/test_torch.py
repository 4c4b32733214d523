"""kselect.torch: the operators, the switch and the fall-through, against PyTorch itself.

Skipped without torch or without libkselect_torch.so (KSELECT_TORCH_LIBRARY, the package, or the
source tree's build/lib). The CUDA cases skip without a GPU; scripts/device/torch_bench.py runs
them on the device together with the performance figures.
"""

import contextlib
import importlib.util
import os
import tempfile
import unittest

HAVE_TORCH = importlib.util.find_spec("torch") is not None

if HAVE_TORCH:
    import torch
    import torch.nn.functional as F

    import kselect.torch as kt

    HAVE_LIBRARY = os.path.exists(kt.library_path())
    HAVE_CUDA = torch.cuda.is_available()
else:
    HAVE_LIBRARY = HAVE_CUDA = False

# CTest's python_torch sets this: there, a missing torch or library is a failure, not a skip.
if os.environ.get("KSELECT_TORCH_REQUIRED") == "1" and not (HAVE_TORCH and HAVE_LIBRARY):
    raise RuntimeError("KSELECT_TORCH_REQUIRED=1 but torch or libkselect_torch.so is missing")


@unittest.skipUnless(HAVE_TORCH and HAVE_LIBRARY, "needs torch and libkselect_torch.so")
class OperatorTest(unittest.TestCase):
    def setUp(self):
        kt.load()

    def test_loading_configures_the_default_rules(self):
        # The explicit operators route without a configure() call of the program's own.
        self.assertTrue(kt.summary()["configured"])
        self.assertEqual(len(kt.summary()["rules"]), len(kt.default_rules()))

    def test_operators_are_registered(self):
        for name in ("mm", "bmm", "addmm", "linear", "_configure", "_route_aten", "_summary"):
            self.assertTrue(hasattr(torch.ops.kselect, name), name)

    def test_cpu_tensors_compute_what_torch_computes(self):
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(5, 7, generator=g), torch.randn(7, 3, generator=g)
        torch.testing.assert_close(kt.mm(a, b), a @ b)
        x, w, bias = torch.randn(2, 4, 7, generator=g), torch.randn(6, 7, generator=g), torch.randn(6, generator=g)
        torch.testing.assert_close(kt.linear(x, w, bias), torch.nn.functional.linear(x, w, bias))
        p, q = torch.randn(3, 5, 7, generator=g), torch.randn(3, 7, 2, generator=g)
        torch.testing.assert_close(kt.bmm(p, q), torch.bmm(p, q))
        c = torch.randn(5, 3, generator=g)
        torch.testing.assert_close(kt.addmm(c, a, b, beta=0.5, alpha=2.0), torch.addmm(c, a, b, beta=0.5, alpha=2.0))

    def test_gradients_match_torch(self):
        g = torch.Generator().manual_seed(1)
        x = torch.randn(4, 6, generator=g, dtype=torch.float64, requires_grad=True)
        w = torch.randn(5, 6, generator=g, dtype=torch.float64, requires_grad=True)
        self.assertTrue(torch.autograd.gradcheck(lambda x, w: kt.linear(x, w), (x, w)))
        p = torch.randn(2, 3, 4, generator=g, dtype=torch.float64, requires_grad=True)
        q = torch.randn(2, 4, 5, generator=g, dtype=torch.float64, requires_grad=True)
        self.assertTrue(torch.autograd.gradcheck(kt.bmm, (p, q)))

    def test_compiles_without_graph_breaks(self):
        def block(x, w1, w2):
            return kt.linear(torch.nn.functional.silu(kt.linear(x, w1)), w2)

        compiled = torch.compile(block, fullgraph=True, backend="aot_eager", dynamic=True)
        g = torch.Generator().manual_seed(2)
        w1, w2 = torch.randn(16, 8, generator=g), torch.randn(8, 16, generator=g)
        for tokens in (3, 5):
            x = torch.randn(tokens, 8, generator=g, requires_grad=True)
            out = compiled(x, w1, w2)
            torch.testing.assert_close(out, block(x, w1, w2))
            out.sum().backward()
            self.assertEqual(x.grad.shape, x.shape)

    def test_fake_tensors_get_shapes_and_refuse_bad_ones(self):
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode():
            a, b = torch.empty(7, 3), torch.empty(3, 9)
            self.assertEqual(torch.ops.kselect.mm(a, b).shape, (7, 9))
            self.assertEqual(torch.ops.kselect.bmm(torch.empty(2, 7, 3), torch.empty(2, 3, 4)).shape, (2, 7, 4))
            with self.assertRaises(Exception):
                torch.ops.kselect.mm(a, torch.empty(4, 9))

    def test_bad_input_raises_clear_errors(self):
        with self.assertRaisesRegex(RuntimeError, "do not make input @ weight.T"):
            kt.linear(torch.randn(2, 5), torch.randn(3, 4))
        with self.assertRaisesRegex(RuntimeError, "weight must be 2-D"):
            kt.linear(torch.randn(2, 5), torch.randn(3))
        with self.assertRaisesRegex(RuntimeError, "expected PATTERN=MODEL_DIR"):
            torch.ops.kselect._configure(["bf16/rcc"], 3)
        with self.assertRaisesRegex(RuntimeError, "time_top_k"):
            torch.ops.kselect._configure(["*=/nowhere"], -1)
        with self.assertRaisesRegex(FileNotFoundError, "no model directory"):
            kt.configure(["bf16=/nowhere/at/all"])
        with self.assertRaisesRegex(FileNotFoundError, "no model directory"):
            kt.configure(["bf16=" + os.devnull])  # not a directory

    def test_switch_on_and_off_leaves_cpu_work_alone(self):
        a, b = torch.randn(4, 4), torch.randn(4, 4)
        expected = a @ b
        with kt.enabled():
            self.assertTrue(kt.is_enabled())
            torch.testing.assert_close(a @ b, expected)  # CPU: PyTorch's kernel, not counted
            summary = kt.summary()
            self.assertEqual(summary["format"], "kselect.torch_summary")
            self.assertTrue(summary["aten_routing"])
            self.assertEqual(len(summary["rules"]), 6)  # three GEMM rules, three conv directions
        self.assertFalse(kt.is_enabled())
        kt.enable()
        kt.enable()  # twice is fine
        kt.disable()
        kt.disable()
        self.assertFalse(kt.is_enabled())

    def test_decision_files_refuse_bad_folders(self):
        kt.configure()  # fresh routers: none opened a model yet
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(kt.save_decisions(d), 0)
            kt.load_decisions(d)  # nothing there: no error, nothing read
            self.assertEqual(kt.summary()["decision_files"], [])
            blocker = os.path.join(d, "a_file")
            open(blocker, "w").close()
            with self.assertRaisesRegex(RuntimeError, "needs a folder"):
                torch.ops.kselect._save_decisions("")
            with self.assertRaisesRegex(RuntimeError, "needs a folder"):
                torch.ops.kselect._load_decisions("a\0b")
            kt.load_decisions(None)  # stops reading
        kt.configure()

    def test_rules_parse_dtypes_and_layouts(self):
        d = tempfile.gettempdir()
        kt.configure(["bf16/rcc=" + d, "fp16=" + d, "*=" + d, "conv/bwd_data=" + d, "conv=" + d], 0)
        rules = kt.summary()["rules"]
        gemm = [(r["dtype"], r["layout"]) for r in rules if r["kind"] == "gemm"]
        self.assertEqual(gemm, [("bf16", "rcc"), ("fp16", "*"), ("*", "*")])
        self.assertEqual([r["direction"] for r in rules if r["kind"] == "conv"], ["bwd_data", "*"])
        with self.assertRaisesRegex(RuntimeError, "sideways"):
            torch.ops.kselect._configure(["conv/sideways=/x"], 0)
        with self.assertRaisesRegex(RuntimeError, "bf17"):
            torch.ops.kselect._configure(["bf17=/x"], 0)
        kt.configure()  # the defaults again


@unittest.skipUnless(HAVE_TORCH and HAVE_LIBRARY and HAVE_CUDA, "needs a GPU")
class CudaTest(unittest.TestCase):
    """Results through kselect match PyTorch's on the GPU, and what kselect does not run falls
    through to PyTorch and is counted."""

    def setUp(self):
        kt.configure()

    def test_linear_and_backward_route_and_match(self):
        g = torch.Generator(device="cuda").manual_seed(3)
        for dtype in (torch.bfloat16, torch.float16):
            x = torch.randn(8, 4096, device="cuda", dtype=dtype, generator=g, requires_grad=True)
            w = (torch.randn(1024, 4096, device="cuda", dtype=dtype, generator=g) / 64).requires_grad_()
            ref = torch.nn.functional.linear(x, w)
            ref.float().square().sum().backward()
            ref_gx, ref_gw = x.grad.clone(), w.grad.clone()
            x.grad = w.grad = None
            kt.reset_counts()
            with kt.enabled():
                out = torch.nn.functional.linear(x, w)
                out.float().square().sum().backward()
            summary = kt.summary()
            self.assertGreaterEqual(summary["routed_calls"], 3, summary)  # forward, dX, dW
            torch.testing.assert_close(out, ref, rtol=2e-2, atol=2e-2)
            torch.testing.assert_close(x.grad, ref_gx, rtol=3e-2, atol=3e-1)
            torch.testing.assert_close(w.grad, ref_gw, rtol=3e-2, atol=3e-1)
            x.grad = w.grad = None

    def test_what_kselect_does_not_run_falls_through(self):
        g = torch.Generator(device="cuda").manual_seed(4)
        w = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16, generator=g)
        big = torch.randn(8, 1024, device="cuda", dtype=torch.bfloat16, generator=g)
        cases = {
            "dtype": (big[:, :512].float(), w.float()),
            "strides": (big[:, ::2], w),
            "alignment": (big.view(-1)[1:1 + 8 * 512].view(8, 512), w),
            "empty": (big[:0, :512], w),
        }
        for reason, (x, weight) in cases.items():
            kt.reset_counts()
            with kt.enabled():
                out = torch.nn.functional.linear(x, weight)
            torch.testing.assert_close(out, torch.nn.functional.linear(x, weight))
            passed = kt.summary()["passed_through"]
            self.assertIn(reason, passed, (reason, passed))

    def test_convolution_and_its_backward_route_and_match(self):
        g = torch.Generator(device="cuda").manual_seed(5)
        for dtype in (torch.bfloat16, torch.float16):
            for groups, stride in ((1, 1), (1, 2), (4, 1)):
                x = torch.randn(4, 64, 28, 28, device="cuda", dtype=dtype, generator=g)
                x = x.to(memory_format=torch.channels_last).requires_grad_()
                conv = torch.nn.Conv2d(64, 128, 3, stride=stride, padding=1, groups=groups,
                                       device="cuda", dtype=dtype).to(memory_format=torch.channels_last)
                results = {}
                for on in (False, True):
                    kt.reset_counts()
                    with (kt.enabled() if on else contextlib.nullcontext()):
                        y = conv(x)
                        y.float().square().mean().backward()
                    results[on] = (y.detach(), x.grad.clone(), conv.weight.grad.clone(), conv.bias.grad.clone())
                    x.grad = None
                    conv.zero_grad(set_to_none=True)
                    if on:
                        summary = kt.summary()
                        self.assertEqual(summary["routed_conv_calls"], 3, summary)  # fwd, dgrad, wgrad
                for got, ref in zip(results[True], results[False]):
                    torch.testing.assert_close(got, ref, rtol=3e-2, atol=3e-2)

    def test_decision_files_carry_rankings_to_fresh_routers(self):
        x = torch.randn(2, 32, 14, 14, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
        conv = torch.nn.Conv2d(32, 64, 3, padding=1, device="cuda", dtype=torch.bfloat16)
        conv = conv.to(memory_format=torch.channels_last)
        with torch.no_grad():
            ref = conv(x)
            kt.configure()
            with kt.enabled():
                conv(x)
            first = {d["problem"]: d for d in kt.summary()["decisions"]}
            with tempfile.TemporaryDirectory() as d:
                self.assertGreaterEqual(kt.save_decisions(d), 1)
                kt.configure()  # fresh routers, as a new process has
                kt.load_decisions(d)
                with kt.enabled():
                    got = conv(x)
                summary = kt.summary()
                self.assertTrue(any(f.endswith(" decisions") for f in summary["decision_files"]), summary)
                self.assertEqual(summary["model_errors"], [])
                torch.testing.assert_close(got, ref, rtol=3e-2, atol=3e-2)
                # A problem timed before runs the same config at once, untimed.
                for decision in summary["decisions"]:
                    before = first[decision["problem"]]
                    if before["timed_configs"] >= 2:
                        self.assertEqual(decision["timed_configs"], 0, decision)
                        self.assertIn("earlier process", decision["note"], decision)
                        self.assertEqual(decision["config"], before["config"], decision)
                kt.load_decisions(None)
        kt.configure()

    def test_convolutions_kselect_does_not_run_fall_through(self):
        g = torch.Generator(device="cuda").manual_seed(6)
        x = torch.randn(2, 32, 16, 16, device="cuda", dtype=torch.bfloat16, generator=g)
        w = torch.randn(32, 32, 3, 3, device="cuda", dtype=torch.bfloat16, generator=g)
        cl = torch.channels_last
        cases = {
            "conv_layout": lambda: F.conv2d(x, w, padding=1),  # NCHW
            "dtype": lambda: F.conv2d(x.float().to(memory_format=cl), w.float().to(memory_format=cl), padding=1),
            "conv_transposed": lambda: F.conv_transpose2d(x.to(memory_format=cl), w.to(memory_format=cl), padding=1),
        }
        for reason, run in cases.items():
            expected = run()
            kt.reset_counts()
            with kt.enabled():
                got = run()
            torch.testing.assert_close(got, expected)
            self.assertIn(reason, kt.summary()["passed_through"], reason)

    def test_graph_capture_of_an_undecided_shape_falls_through(self):
        kt.configure()  # no decisions
        x = torch.randn(8, 768, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(384, 768, device="cuda", dtype=torch.bfloat16)
        kt.reset_counts()
        graph = torch.cuda.CUDAGraph()
        torch.nn.functional.linear(x, w)  # PyTorch's own cuBLAS set up before the capture
        torch.cuda.synchronize()
        with kt.enabled():
            s = torch.cuda.Stream()
            with torch.cuda.stream(s), torch.cuda.graph(graph):
                y = torch.nn.functional.linear(x, w)
        graph.replay()
        torch.testing.assert_close(y, torch.nn.functional.linear(x, w))
        self.assertIn("undecided_during_capture", kt.summary()["passed_through"])


if __name__ == "__main__":
    unittest.main()
