#!/usr/bin/env bash
# `pip install` of this checkout on a clean venv, checked from outside the checkout:
#
#   scripts/check_pip_install.sh          (scripts/test.sh runs it; KSELECT_SKIP_PIP_CHECK=1 skips)
#
# 1. a venv in a temporary folder; 2. the wheel built from the checkout (pyproject.toml:
# scikit-build-core, CMake in a temporary folder), offline from .deps/downloads when it holds the
# build requirements (scripts/setup.sh puts them there), else from PyPI; 3. the wheel installed;
# 4. from the temporary folder: `import kselect`, the library loads (kselect.version()), the
# shipped models are in kselect.models_dir() without the files only people read, a Selector opens
# kselect.default_model() and selects on the CPU, the `kselect` console script runs (--help,
# version, a rule set from the installed data); 5. `git status --porcelain --ignored` of the
# checkout is what it was (the build wrote nothing into it).
#
# Environment: PYTHON (default python3), KSELECT_DEPS_DIR (default <repo>/.deps),
# KSELECT_PIP_KEEP=1 keeps the temporary folder. ccache is used when installed (through
# CMAKE_CXX_COMPILER_LAUNCHER, unless that is set already).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="${KSELECT_DEPS_DIR:-$ROOT/.deps}"
DL="$DEPS/downloads"
PY="${PYTHON:-python3}"

die() { echo "check_pip_install.sh: ERROR: $*" >&2; exit 1; }
note() { echo "check_pip_install.sh: $*"; }
now() { date +%s; }
T_ALL=$(now)

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kselect-pip.XXXXXX")"
if [ "${KSELECT_PIP_KEEP:-0}" = 1 ]; then
  trap 'note "kept $WORK"' EXIT
else
  trap 'rm -rf "$WORK"' EXIT
fi

# Ignored files too (folders collapsed): the old setup.py wrote build-python/ and *.egg-info,
# both git-ignored.
status() { git -C "$ROOT" status --porcelain --ignored; }
status > "$WORK/status-before.txt" || die "git status failed in $ROOT (not a git checkout?)"

"$PY" -m venv "$WORK/venv" || die "$PY -m venv failed (Debian python: apt-get install python3-venv)"
VPY="$WORK/venv/bin/python"

pip_from=()
if compgen -G "$DL/scikit_build_core-*.whl" >/dev/null; then
  pip_from=(--no-index --find-links "$DL")
  note "offline: build requirements from $DL"
else
  note "build requirements from PyPI ($DL has no scikit-build-core wheel; scripts/setup.sh caches it)"
fi
if command -v ccache >/dev/null 2>&1 && [ -z "${CMAKE_CXX_COMPILER_LAUNCHER:-}" ]; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_C_COMPILER_LAUNCHER=ccache
  note "compiling through ccache"
fi

T=$(now)
note "building the wheel (about 7.5 min on 2 cores with a cold compiler cache; log: $WORK/build.log)"
if ! "$VPY" -m pip wheel --disable-pip-version-check --no-deps "${pip_from[@]}" \
      -w "$WORK/dist" "$ROOT" >"$WORK/build.log" 2>&1; then
  tail -40 "$WORK/build.log" >&2
  KSELECT_PIP_KEEP=1
  trap 'note "kept $WORK"' EXIT
  die "pip wheel failed (the end of $WORK/build.log is above)"
fi
WHEEL="$(ls "$WORK"/dist/kselect-*.whl)"
note "built $(basename "$WHEEL"): $(du -h "$WHEEL" | cut -f1) in $(( $(now) - T )) s"

"$VPY" -m pip install --disable-pip-version-check --no-deps --no-index -q "$WHEEL" \
  || die "pip install $WHEEL failed"

cd "$WORK"
T=$(now)
env -u KSELECT_LIBRARY -u KSELECT_MODELS_DIR -u KSELECT_DATA_DIR \
  "$VPY" - "$ROOT" <<'EOF' || die "the installed package failed a check (above)"
import os, pathlib, re, sys

root = pathlib.Path(sys.argv[1]).resolve()
import kselect

package = pathlib.Path(kselect.__file__).resolve().parent
assert root not in package.parents, f"kselect imported from the checkout ({package}), not the venv"
print("package:", package)
print("library:", kselect.library_path())
assert pathlib.Path(kselect.library_path()).parent == package, kselect.library_path()

cmake = (root / "CMakeLists.txt").read_text()
want = re.search(r"project\(kselect VERSION ([0-9.]+)", cmake).group(1)
got = kselect.version()
print("version:", got)
assert got.startswith(want), f"kselect.version() {got!r}, CMakeLists.txt says {want}"

models = kselect.models_dir()
assert models == package / "share" / "kselect" / "models", models
names = sorted(p.name for p in models.iterdir())
print("models:", " ".join(names))
for name in ("h200_cross_bf16_tn_rank", "h200_cublaslt_bf16_tn_rank", "h200_cublaslt_default_rank",
             "h100_cublaslt_default_rank", "h200_cudnn_conv_fwd", "h200_cudnn_conv_bwd_data",
             "h200_cudnn_conv_bwd_weight"):
    assert name in names, f"{name} missing from {models}"
for d in models.iterdir():
    assert (d / "feature_spec.json").exists() or (d / "cross_provider.json").exists(), d
    for f in d.iterdir():
        assert not (f.name.startswith("oof_predictions") or f.name.endswith(".html")
                    or f.name == "feature_importances.json"), f"{f} should not be in the wheel"
    manifest = d / "cross_provider.json"
    if manifest.exists():
        for ref in re.findall(r'"\.\./([^"]+)"', manifest.read_text()):
            assert (models / ref / "feature_spec.json").exists(), f"{d.name} names {ref}: missing"

for device, op in (("h200", "gemm"), ("h100", "gemm"), ("h200", "gemm_cross"), ("h200", "conv_fwd")):
    assert kselect.default_model(device, op).is_dir()

# A GPU-less host: the model decides (the C API's CPU path, as python/tests/test_selector.py).
with kselect.Selector(kselect.default_model("h200"), top_k=3) as selector:
    selection = selector.select(4096, 16, 4096, dtype="bf16", layout="rcc")
    assert 1 <= len(selection) <= 3, selection
    print(f"h200 gemm 4096x16x4096: {selection.path}, {selection[0].name}")
with kselect.Selector(kselect.default_model("h200", "gemm_cross"), top_k=3) as selector:
    print(f"opened {kselect.default_model('h200', 'gemm_cross').name}")

os.environ["KSELECT_MODELS_DIR"] = str(root / "models")
assert kselect.models_dir() == root / "models"
print("python checks: ok")
EOF
note "python checks in $(( $(now) - T )) s"

CLI="$WORK/venv/bin/kselect"
[ -x "$CLI" ] || die "no console script $CLI"
"$CLI" --help >"$WORK/help.txt" 2>&1 || { cat "$WORK/help.txt" >&2; die "kselect --help failed"; }
grep -q "predict" "$WORK/help.txt" || { cat "$WORK/help.txt" >&2; die "kselect --help lists no subcommands"; }
note "kselect --help: $(head -n1 "$WORK/help.txt")"
note "kselect version: $("$CLI" version | head -n1)"
# A rule set read from the installed data (kselect/share/kselect/rules), and a decision by an
# installed model, both on the CPU.
n="$(env -u KSELECT_DATA_DIR -u KSELECT_RULES_DIR "$CLI" tile list --rules tiny | wc -l)"
[ "$n" -gt 0 ] || die "kselect tile list --rules tiny listed nothing"
note "kselect tile list --rules tiny: $n configs"
models="$("$VPY" -c 'import kselect; print(kselect.models_dir())')"
"$CLI" predict --model "$models/h200_cublaslt_bf16_tn_rank" --m 4096 --n 16 --k 4096 \
    >"$WORK/predict.txt" 2>&1 || { cat "$WORK/predict.txt" >&2; die "kselect predict failed"; }
note "kselect predict: $(grep -m1 cublaslt "$WORK/predict.txt" | tr -s ' ')"

status > "$WORK/status-after.txt"
if ! diff -u "$WORK/status-before.txt" "$WORK/status-after.txt"; then
  die "the pip build changed the checkout (git status --porcelain --ignored differs, above)"
fi
note "checkout unchanged (git status --porcelain --ignored)"
note "all checks passed in $(( $(now) - T_ALL )) s"
