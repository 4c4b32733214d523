"""kselect.models_dir() and kselect.default_model(): every (device, op) they name is a shipped model
of this checkout (KSELECT_MODELS_DIR=<repo>/models, as CTest's python_api sets it) and in the
wheel's model set (cmake/KselectWheel.cmake). scripts/check_pip_install.sh checks the installed
package's own copy."""

import os
import pathlib
import re
import unittest
from unittest import mock

import kselect
from kselect import _models

ROOT = pathlib.Path(__file__).resolve().parents[2]
REPO_MODELS = ROOT / "models"


def wheel_models():
    text = (ROOT / "cmake" / "KselectWheel.cmake").read_text()
    match = re.search(r'set\(KSELECT_WHEEL_MODELS\s+"([^"]+)"', text)
    return set(match.group(1).split(";"))


class ModelsTest(unittest.TestCase):
    def test_models_dir_follows_the_variable(self):
        with mock.patch.dict(os.environ, {"KSELECT_MODELS_DIR": str(REPO_MODELS)}):
            self.assertEqual(kselect.models_dir(), REPO_MODELS)
        with mock.patch.dict(os.environ, {}, clear=True):
            package = pathlib.Path(kselect.__file__).resolve().parent
            self.assertEqual(kselect.models_dir(), package / "share" / "kselect" / "models")

    def test_every_default_is_shipped_in_the_wheel(self):
        shipped = wheel_models()
        with mock.patch.dict(os.environ, {"KSELECT_MODELS_DIR": str(REPO_MODELS)}):
            for device, op in _models._DEFAULTS:
                path = kselect.default_model(device, op)
                self.assertTrue(path.is_dir(), path)
                self.assertIn(path.name, shipped, f"{path.name}: add it to KSELECT_WHEEL_MODELS")

    def test_unknown_pair_and_missing_folder(self):
        with self.assertRaisesRegex(KeyError, "h100/gemm"):
            kselect.default_model("h100", "conv_fwd")
        with mock.patch.dict(os.environ, {"KSELECT_MODELS_DIR": "/nonexistent"}):
            with self.assertRaisesRegex(FileNotFoundError, "KSELECT_MODELS_DIR"):
                kselect.default_model("h200")


if __name__ == "__main__":
    unittest.main()
