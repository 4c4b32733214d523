"""The `kselect` console script of `pip install .`: runs the CLI binary the wheel holds
(kselect/bin/kselect) with the same arguments, its data (rule sets, device profiles) read from the
installed package unless KSELECT_DATA_DIR says otherwise."""

from __future__ import annotations

import os
import pathlib
import sys

from ._models import data_dir


def executable() -> pathlib.Path:
    return pathlib.Path(__file__).resolve().parent / "bin" / "kselect"


def main() -> None:
    exe = executable()
    if not os.access(exe, os.X_OK):
        sys.exit(
            f"kselect: no command-line tool at {exe} (this install was built with "
            "KSELECT_BUILD_CLI=OFF); the Python module works without it"
        )
    env = dict(os.environ)
    env.setdefault("KSELECT_DATA_DIR", str(data_dir()))
    sys.stdout.flush()
    os.execve(str(exe), ["kselect", *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
