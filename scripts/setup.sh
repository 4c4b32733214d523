#!/usr/bin/env bash
# kselect dependency set-up: one command on a fresh Debian 12 machine.
#
#   scripts/setup.sh                 # apt packages, .deps/{venv,arrow,lightgbm,cudnn_frontend}, configure + build
#   SETUP_SKIP_BUILD=1 scripts/setup.sh   # everything except the CMake configure/build
#
# Idempotent: every step checks a stamp (or dpkg) and is skipped when up to date.
# Everything it downloads lands under .deps/ (git-ignored); after a successful run
# no network access is needed (wheels and the LightGBM sdist are cached in .deps/downloads, with
# the build requirements of `pip install .`: scripts/build-requirements.txt).
#
# Environment knobs:
#   KSELECT_DEPS_DIR   where to put dependencies (default: <repo>/.deps)
#   PYTHON             interpreter for the venv (default: python3; must be CPython 3.11 x86_64,
#                      the pins in scripts/requirements.txt are cp311 manylinux wheels)
#   SETUP_SKIP_APT=1   do not touch apt (fail later if something is missing)
#   SETUP_SKIP_BUILD=1 skip the CMake configure/build step
#   SETUP_SKIP_CHROMIUM=1  do not install chromium (the HTML report's browser test then skips)
#   SETUP_SKIP_TORCH=1 no .deps/torch-venv: libkselect_torch.so and its tests are then not built
#   LIGHTGBM_FROM_SOURCE=1  build lib_lightgbm from the pinned sdist instead of using the wheel's .so
#   BUILD_DIR          CMake build dir (default: <repo>/build)
#   CMAKE_BUILD_TYPE   default: Release
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="${KSELECT_DEPS_DIR:-$ROOT/.deps}"
PY="${PYTHON:-python3}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
REQ="$ROOT/scripts/requirements.txt"
LGB_REQ="$ROOT/scripts/lightgbm-requirements.txt"
DL="$DEPS/downloads"
CHECK="$DEPS/check"          # scratch dir for the verification programs

die() { echo "setup.sh: ERROR: $*" >&2; exit 1; }
note() { echo "setup.sh: $*"; }
trap 'rc=$?; [ $rc -eq 0 ] || echo "setup.sh: FAILED (exit $rc) in step: ${CUR_STEP:-?}" >&2' EXIT

now() { date +%s%3N; }   # milliseconds
secs() { local d=$(( $(now) - $1 )); printf '%d.%01d' $((d / 1000)) $(((d % 1000) / 100)); }
T_ALL=$(now)
CUR_STEP=""; T_STEP=""
step() { CUR_STEP="$1"; T_STEP=$(now); echo; echo "=== [$1] $2"; }
step_done() { echo "=== [$CUR_STEP] done in $(secs "$T_STEP")s${1:+ ($1)}"; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }   # stamp_ok FILE EXPECTED

[ -f "$REQ" ] || die "missing $REQ (run from a complete kselect checkout)"
[ -f "$LGB_REQ" ] || die "missing $LGB_REQ (run from a complete kselect checkout)"
mkdir -p "$DEPS" "$DL" "$CHECK"

# --------------------------------------------------------------------------- a. apt
step apt "system packages"
APT_PKGS=(build-essential cmake ninja-build pkg-config googletest libgtest-dev libgmock-dev
          libbenchmark-dev nlohmann-json3-dev libcli11-dev zlib1g-dev zstd clang libclang-rt-14-dev clang-format)
# Headless Chromium renders `kselect eval --html` in a test (tests/eval/eval_html_test.cpp, which
# skips without it). About 30 s and 120 MB of downloads on a 2-core host; SETUP_SKIP_CHROMIUM=1
# leaves it out.
if [ "${SETUP_SKIP_CHROMIUM:-0}" != 1 ]; then APT_PKGS+=(chromium); fi
# pyenv/python.org builds ship venv+ensurepip; Debian's python3 needs python3-venv.
if ! "$PY" -c 'import venv, ensurepip' >/dev/null 2>&1; then APT_PKGS+=(python3-venv); fi
missing=()
for p in "${APT_PKGS[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  step_done "all ${#APT_PKGS[@]} packages already installed"
elif [ "${SETUP_SKIP_APT:-0}" = 1 ]; then
  die "apt packages missing: ${missing[*]} (SETUP_SKIP_APT=1 set; install them yourself: apt-get install ${missing[*]})"
else
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "need root or sudo to apt-get install: ${missing[*]}"
    SUDO="sudo"
  fi
  note "installing: ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq \
    || die "apt-get update failed (network / apt sources?). Fix apt, or install by hand: ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || die "apt-get install failed for: ${missing[*]}"
  step_done "installed ${#missing[@]} packages"
fi

# --------------------------------------------------------------------------- b. venv
step venv "Python venv $DEPS/venv (pyarrow, numpy, pandas)"
VENV="$DEPS/venv"
VPY="$VENV/bin/python"
"$PY" -c 'import sys, platform; assert sys.version_info[:2] == (3, 11) and platform.machine() == "x86_64"' 2>/dev/null \
  || die "$PY is not CPython 3.11 on x86_64; the pins in scripts/requirements.txt are cp311 manylinux wheels. Set PYTHON=/path/to/python3.11 or add hashes for your platform."
REQ_SHA="$(sha256_of "$REQ") $("$PY" -c 'import sys; print(sys.version.split()[0])')"
if stamp_ok "$VENV/.kselect-stamp" "$REQ_SHA" && [ -x "$VPY" ]; then
  step_done "up to date"
else
  rm -rf "$VENV"
  "$PY" -m venv "$VENV" || die "python3 -m venv failed (Debian python: apt-get install python3-venv)"
  # download into .deps/downloads (hash-checked, reusable offline), then install from there only
  # offline first (wheels already in .deps/downloads), then PyPI
  "$VPY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --require-hashes -d "$DL" --no-index --find-links "$DL" -r "$REQ" >/dev/null 2>&1 \
  || "$VPY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --require-hashes -d "$DL" -r "$REQ" \
    || die "pip download of $REQ failed (network to PyPI? hash mismatch means the pins need updating)"
  "$VPY" -m pip install -q --disable-pip-version-check --no-index --find-links "$DL" \
      --require-hashes --no-deps -r "$REQ" \
    || die "pip install -r $REQ failed"
  "$VPY" -c 'import pyarrow, pandas, numpy; print("pyarrow", pyarrow.__version__, "pandas", pandas.__version__, "numpy", numpy.__version__)' \
    || die "the venv's packages do not import; rm -rf $VENV and rerun"
  echo "$REQ_SHA" > "$VENV/.kselect-stamp"
  step_done "installed"
fi

# --------------------------------------------------------------------------- torch
# PyTorch (CUDA 13 wheels from PyPI, ~2.6 GB downloaded once into $DL/torch, ~80 s to install on a
# 2-core host) in a venv of its own: libkselect_torch.so is compiled against its headers and
# python/tests/test_torch.py runs on it (CPU side; the GPU side runs on the device).
TORCH_PIN="torch==2.11.0"
step torch "PyTorch ($TORCH_PIN) -> $DEPS/torch-venv"
TVENV="$DEPS/torch-venv"
TORCH_STAMP_WANT="$TORCH_PIN $("$PY" -c 'import sys; print(sys.version.split()[0])')"
if [ "${SETUP_SKIP_TORCH:-0}" = 1 ]; then
  step_done "skipped (SETUP_SKIP_TORCH=1)"
elif stamp_ok "$TVENV/.kselect-stamp" "$TORCH_STAMP_WANT" && [ -x "$TVENV/bin/python" ]; then
  step_done "up to date"
else
  rm -rf "$TVENV"
  "$PY" -m venv "$TVENV" || die "python3 -m venv failed for $TVENV"
  mkdir -p "$DL/torch"
  "$TVENV/bin/pip" download -q --disable-pip-version-check --only-binary=:all: -d "$DL/torch" \
      --no-index --find-links "$DL/torch" "$TORCH_PIN" numpy >/dev/null 2>&1 \
  || "$TVENV/bin/pip" download -q --disable-pip-version-check --only-binary=:all: -d "$DL/torch" \
      "$TORCH_PIN" numpy \
    || die "pip download of $TORCH_PIN failed (network to PyPI?); SETUP_SKIP_TORCH=1 skips it"
  "$TVENV/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$DL/torch" \
      "$TORCH_PIN" numpy || die "pip install of $TORCH_PIN failed"
  "$TVENV/bin/python" -c 'import torch; print("torch", torch.__version__)' \
    || die "torch does not import; rm -rf $TVENV and rerun"
  echo "$TORCH_STAMP_WANT" > "$TVENV/.kselect-stamp"
  step_done "installed"
fi

# --------------------------------------------------------------------------- cudnn-frontend
step cudnn_frontend "cudnn-frontend headers -> $DEPS/cudnn_frontend/include"
CFE="$DEPS/cudnn_frontend"
CFE_STAMP_WANT="$(sha256_of "$REQ")"
if stamp_ok "$CFE/.kselect-stamp" "$CFE_STAMP_WANT" && [ -f "$CFE/include/cudnn_frontend.h" ]; then
  step_done "up to date"
else
  CFE_SRC="$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/include"
  [ -f "$CFE_SRC/cudnn_frontend.h" ] || die "the nvidia-cudnn-frontend wheel has no include/cudnn_frontend.h under $CFE_SRC"
  rm -rf "$CFE"; mkdir -p "$CFE"
  cp -a "$CFE_SRC" "$CFE/include"
  echo "$CFE_STAMP_WANT" > "$CFE/.kselect-stamp"
  step_done "cudnn-frontend $(sed -n 's/^#define CUDNN_FRONTEND_\(MAJOR\|MINOR\|PATCH\)_VERSION \([0-9]*\)/\2/p' "$CFE/include/cudnn_frontend_version.h" | paste -sd.)"
fi

# --------------------------------------------------------------------------- pip build requirements
# `pip install .` (pyproject.toml, scikit-build-core) offline: scripts/check_pip_install.sh installs
# its build requirements from .deps/downloads; the nvidia-cudnn-frontend wheel is there already.
step pip_build "pip install's build requirements -> $DL"
BUILD_REQ="$ROOT/scripts/build-requirements.txt"
[ -f "$BUILD_REQ" ] || die "missing $BUILD_REQ (run from a complete kselect checkout)"
"$VPY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes -d "$DL" --no-index --find-links "$DL" -r "$BUILD_REQ" >/dev/null 2>&1 \
|| "$VPY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes -d "$DL" -r "$BUILD_REQ" \
  || die "pip download of $BUILD_REQ failed (network to PyPI? hash mismatch means the pins need updating)"
step_done "$(sed -n 's/^\([a-z-]*==[0-9.]*\) .*/\1/p' "$BUILD_REQ" | paste -sd' ')"

# --------------------------------------------------------------------------- c. Arrow
step arrow "Arrow/Parquet C++ from the pyarrow wheel -> $DEPS/arrow"
ARROW="$DEPS/arrow"
ARROW_STAMP_WANT="$(cat "$VENV/.kselect-stamp")"
if stamp_ok "$ARROW/.kselect-stamp" "$ARROW_STAMP_WANT" && [ -e "$ARROW/lib/libparquet.so" ]; then
  step_done "up to date"
else
  mapfile -t PA < <("$VPY" -c 'import pyarrow; print(pyarrow.get_include()); print(pyarrow.get_library_dirs()[0]); print(pyarrow.__version__)') \
    || die "could not query pyarrow in $VENV"
  PA_INC="${PA[0]}"; PA_LIB="${PA[1]}"; PA_VER="${PA[2]}"
  [ -f "$PA_INC/arrow/api.h" ] || die "pyarrow $PA_VER has no C++ headers at $PA_INC"
  rm -rf "$ARROW"; mkdir -p "$ARROW/lib"
  ln -sfn "$PA_INC" "$ARROW/include"
  n=0
  for so in "$PA_LIB"/libarrow*.so.[0-9]* "$PA_LIB"/libparquet*.so.[0-9]*; do
    [ -e "$so" ] || continue
    base="$(basename "$so")"
    case "$base" in *python*) continue ;; esac           # libarrow_python* needs libpython; not ours
    [[ "$base" =~ ^(lib[a-z0-9_]+)\.so\.([0-9]+)$ ]] || continue   # only the SONAME files (libX.so.2600)
    ln -sfn "$so" "$ARROW/lib/$base"                       # SONAME name, for run time (rpath)
    ln -sfn "$base" "$ARROW/lib/${BASH_REMATCH[1]}.so"     # unversioned, for link time
    n=$((n + 1))
  done
  [ -e "$ARROW/lib/libarrow.so" ] && [ -e "$ARROW/lib/libparquet.so" ] \
    || die "libarrow/libparquet not found in $PA_LIB (pyarrow $PA_VER layout changed?)"
  note "pyarrow $PA_VER: $n libs linked into $ARROW/lib"

  # ABI check: new (cxx11) std::string ABI symbols present in libarrow?
  # (count, don't grep -q: with pipefail an early-exiting grep makes nm die of SIGPIPE)
  n_cxx11="$(nm -DC "$ARROW/lib/libarrow.so" 2>/dev/null | grep -c '__cxx11::basic_string' || true)"
  if [ "${n_cxx11:-0}" -gt 0 ]; then
    note "libarrow uses the new C++11 std::string ABI (_GLIBCXX_USE_CXX11_ABI=1, g++ default): no special flags"
  else
    echo "setup.sh: WARNING ****************************************************************" >&2
    echo "setup.sh: WARNING libarrow seems built with the OLD C++ ABI: compile kselect with -D_GLIBCXX_USE_CXX11_ABI=0" >&2
    echo "setup.sh: WARNING ****************************************************************" >&2
  fi

  # verification: write + read a zstd-compressed Parquet file
  cat > "$CHECK/arrow_check.cc" <<'EOF'
#include <arrow/api.h>
#include <arrow/io/file.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <iostream>
#include <string>

arrow::Status Run(const std::string& path) {
  arrow::Int64Builder ib; arrow::DoubleBuilder db; arrow::StringBuilder sb;
  for (int i = 0; i < 1000; ++i) {
    ARROW_RETURN_NOT_OK(ib.Append(i));
    ARROW_RETURN_NOT_OK(db.Append(i * 0.5));
    ARROW_RETURN_NOT_OK(sb.Append("kernel_" + std::to_string(i % 7)));
  }
  std::shared_ptr<arrow::Array> a, b, c;
  ARROW_RETURN_NOT_OK(ib.Finish(&a)); ARROW_RETURN_NOT_OK(db.Finish(&b)); ARROW_RETURN_NOT_OK(sb.Finish(&c));
  auto schema = arrow::schema({arrow::field("i", arrow::int64()), arrow::field("x", arrow::float64()),
                               arrow::field("name", arrow::utf8())});
  auto table = arrow::Table::Make(schema, {a, b, c});
  ARROW_ASSIGN_OR_RAISE(auto out, arrow::io::FileOutputStream::Open(path));
  auto props = parquet::WriterProperties::Builder().compression(arrow::Compression::ZSTD)->build();
  ARROW_RETURN_NOT_OK(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), out, 256, props));
  ARROW_RETURN_NOT_OK(out->Close());

  ARROW_ASSIGN_OR_RAISE(auto in, arrow::io::ReadableFile::Open(path));
  ARROW_ASSIGN_OR_RAISE(auto reader, parquet::arrow::OpenFile(in, arrow::default_memory_pool()));
  auto codec = reader->parquet_reader()->metadata()->RowGroup(0)->ColumnChunk(0)->compression();
  if (codec != arrow::Compression::ZSTD) return arrow::Status::Invalid("column chunk not zstd-compressed");
  ARROW_ASSIGN_OR_RAISE(auto back, reader->ReadTable());
  if (!back->Equals(*table)) return arrow::Status::Invalid("round-tripped table differs");
  std::cout << "arrow " << arrow::GetBuildInfo().version_string << ": parquet+zstd round trip OK ("
            << back->num_rows() << " rows, " << reader->parquet_reader()->metadata()->num_row_groups()
            << " row groups)\n";
  return arrow::Status::OK();
}

int main(int argc, char** argv) {
  auto st = Run(argc > 1 ? argv[1] : "check.parquet");
  if (!st.ok()) { std::cerr << st.ToString() << "\n"; return 1; }
  return 0;
}
EOF
  # Arrow 26 headers need C++20 (std::span, std::popcount, requires-clauses); C++17 does not compile.
  g++ -std=c++20 -Wall -O1 -o "$CHECK/arrow_check" "$CHECK/arrow_check.cc" -I"$ARROW/include" \
      -L"$ARROW/lib" -Wl,-rpath,"$ARROW/lib" -lparquet -larrow \
    || die "could not compile/link a tiny Arrow+Parquet program against $ARROW (see the errors above; an undefined std::__cxx11 reference means an ABI mismatch)"
  (cd "$CHECK" && ./arrow_check "$CHECK/check.parquet") \
    || die "the Arrow+Parquet check program failed (run $CHECK/arrow_check by hand)"
  rm -f "$CHECK/check.parquet"
  echo "$ARROW_STAMP_WANT" > "$ARROW/.kselect-stamp"
  step_done "pyarrow $PA_VER"
fi

# --------------------------------------------------------------------------- d. LightGBM
step lightgbm "LightGBM C API -> $DEPS/lightgbm"
LGB="$DEPS/lightgbm"
LGB_SDIST_SHA="$(sed -n 's/^#[[:space:]]*LIGHTGBM_SDIST[[:space:]].*sha256=\([0-9a-f]\{64\}\).*/\1/p' "$LGB_REQ")"
LGB_SDIST_NAME="$(sed -n 's/^#[[:space:]]*LIGHTGBM_SDIST[[:space:]]\+\([^[:space:]]\+\).*/\1/p' "$LGB_REQ")"
LGB_SDIST_VERSION="$(echo "$LGB_SDIST_NAME" | sed -n 's/^lightgbm-\(.*\)\.tar\.gz$/\1/p')"
[ -n "$LGB_SDIST_SHA" ] && [ -n "$LGB_SDIST_VERSION" ] || die "could not parse the LIGHTGBM_SDIST pin in $LGB_REQ"
LGB_MODE=wheel; [ "${LIGHTGBM_FROM_SOURCE:-0}" = 1 ] && LGB_MODE=source
LGB_STAMP_WANT="$(sha256_of "$LGB_REQ") $LGB_MODE"

fetch_sdist() {
  local f="$DL/$LGB_SDIST_NAME"
  if [ ! -f "$f" ] || [ "$(sha256_of "$f")" != "$LGB_SDIST_SHA" ]; then
    rm -f "$f.part"
    local tmp; tmp="$(mktemp -d)"
    "$VPY" -m pip download -q --disable-pip-version-check --no-deps --no-binary lightgbm \
        -d "$tmp" "lightgbm==$LGB_SDIST_VERSION" \
      || die "pip could not download the lightgbm $LGB_SDIST_VERSION source distribution"
    mv "$tmp/$LGB_SDIST_NAME" "$f.part" || die "pip did not produce $LGB_SDIST_NAME"
    rm -rf "$tmp"
    [ "$(sha256_of "$f.part")" = "$LGB_SDIST_SHA" ] \
      || die "sha256 mismatch for $LGB_SDIST_NAME (expected $LGB_SDIST_SHA); refusing to use it"
    mv "$f.part" "$f"
  fi
  rm -rf "$LGB/src"; mkdir -p "$LGB/src"
  tar -xzf "$f" -C "$LGB/src" --strip-components=1 || die "could not unpack $f"
}

lgb_from_wheel() {
  "$VPY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --require-hashes -d "$DL" --no-index --find-links "$DL" -r "$LGB_REQ" >/dev/null 2>&1 \
  || "$VPY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --require-hashes -d "$DL" -r "$LGB_REQ" || return 1
  local whl; whl="$(ls "$DL"/lightgbm-*manylinux*x86_64*.whl 2>/dev/null | head -n1)"
  [ -n "$whl" ] || return 1
  "$VPY" - "$whl" "$LGB/lib" <<'EOF' || return 1
import sys, zipfile, os
whl, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    data = z.read("lightgbm/lib/lib_lightgbm.so")
with open(os.path.join(dst, "lib_lightgbm.so"), "wb") as f:
    f.write(data)
EOF
  if ldd "$LGB/lib/lib_lightgbm.so" | grep -q 'not found'; then
    ldd "$LGB/lib/lib_lightgbm.so" >&2
    note "lib_lightgbm.so from the wheel has unresolved NEEDED libraries"
    return 1
  fi
}

lgb_from_source() {
  note "building lib_lightgbm from the sdist (takes a few minutes)"
  local CM=cmake
  # LightGBM 4.7.0 needs CMake >= 3.28 (Debian 12 has 3.25): use a pinned CMake wheel if needed.
  if ! cmake --version | awk 'NR==1 { split($3, v, "."); exit !(v[1] > 3 || (v[1] == 3 && v[2] >= 28)) }'; then
    local pin; pin="$(sed -n 's/^#[[:space:]]*CMAKE_FOR_SOURCE_BUILD[[:space:]]\+//p' "$LGB_REQ")"
    [ -n "$pin" ] || die "system cmake is older than 3.28 and no CMAKE_FOR_SOURCE_BUILD pin in $LGB_REQ"
    local tv="$DEPS/lightgbm-build-venv"
    if [ ! -x "$tv/bin/cmake" ]; then
      "$PY" -m venv "$tv" || die "python3 -m venv $tv failed"
      printf '%s\n' "$pin" > "$tv/requirements.txt"
      "$tv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
          --require-hashes -d "$DL" -r "$tv/requirements.txt" || die "pip download of the pinned cmake failed"
      "$tv/bin/python" -m pip install -q --disable-pip-version-check --no-index --find-links "$DL" \
          --require-hashes --no-deps -r "$tv/requirements.txt" || die "pip install of the pinned cmake failed"
    fi
    CM="$tv/bin/cmake"
  fi
  note "using $("$CM" --version | head -n1)"
  "$CM" -S "$LGB/src" -B "$LGB/src/_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_CLI=OFF \
      -DUSE_OPENMP=ON >"$LGB/src/cmake-configure.log" 2>&1 \
    || { tail -30 "$LGB/src/cmake-configure.log" >&2; die "LightGBM cmake configure failed (log: $LGB/src/cmake-configure.log)"; }
  "$CM" --build "$LGB/src/_build" >"$LGB/src/cmake-build.log" 2>&1 \
    || { tail -30 "$LGB/src/cmake-build.log" >&2; die "LightGBM build failed (log: $LGB/src/cmake-build.log)"; }
  local so; so="$(find "$LGB/src" -name lib_lightgbm.so -type f | head -n1)"
  [ -n "$so" ] || die "LightGBM build produced no lib_lightgbm.so"
  cp "$so" "$LGB/lib/lib_lightgbm.so"
}

if stamp_ok "$LGB/.kselect-stamp" "$LGB_STAMP_WANT" && [ -f "$LGB/lib/lib_lightgbm.so" ] \
   && [ -f "$LGB/include/LightGBM/c_api.h" ]; then
  step_done "up to date"
else
  rm -rf "$LGB"; mkdir -p "$LGB/lib"
  fetch_sdist
  cp -a "$LGB/src/include" "$LGB/include"      # whole tree: c_api.h includes arrow.h, export.h
  if [ "$LGB_MODE" = wheel ]; then
    lgb_from_wheel || { note "wheel route failed; falling back to building from source"; LGB_MODE=source; }
  fi
  [ "$LGB_MODE" = source ] && lgb_from_source
  rm -rf "$LGB/src"                            # headers + .so are all we keep
  echo "$LGB_MODE" > "$LGB/.built-from"        # what was actually used (stamp keeps what was asked for)

  echo '#include <LightGBM/c_api.h>
int main() { return 0; }' > "$CHECK/lgb_header.cc"
  g++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$LGB/include" "$CHECK/lgb_header.cc" \
    || die "include/LightGBM/c_api.h does not compile standalone with g++ -std=c++20"

  cat > "$CHECK/lgb_check.c" <<'EOF'
#include <LightGBM/c_api.h>
#include <stdio.h>
#define CK(x) do { if ((x) != 0) { fprintf(stderr, "%s: %s\n", #x, LGBM_GetLastError()); return 1; } } while (0)
int main(void) {
  enum { N = 200, F = 3 };
  static double X[N * F]; static float y[N];
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < F; ++j) X[i * F + j] = (double)((i * (j + 3)) % 17);
    y[i] = (float)(X[i * F] * 0.5 + X[i * F + 1]);
  }
  DatasetHandle ds; BoosterHandle bst; int finished = 0;
  CK(LGBM_DatasetCreateFromMat(X, C_API_DTYPE_FLOAT64, N, F, 1, "verbosity=-1 min_data_in_bin=1", NULL, &ds));
  CK(LGBM_DatasetSetField(ds, "label", y, N, C_API_DTYPE_FLOAT32));
  CK(LGBM_BoosterCreate(ds, "objective=regression verbosity=-1 num_threads=1 min_data_in_leaf=5", &bst));
  CK(LGBM_BoosterUpdateOneIter(bst, &finished));
  int iters = 0; CK(LGBM_BoosterGetCurrentIteration(bst, &iters));
  CK(LGBM_BoosterFree(bst)); CK(LGBM_DatasetFree(ds));
  printf("lightgbm C API OK (%d iteration)\n", iters);
  return iters == 1 ? 0 : 1;
}
EOF
  # -w: from C, c_api.h's inline LGBM_SetLastError triggers a harmless (option-less) pedantic
  # warning "'LastErrorMsg' is static but used in inline function"; C++ users don't see it.
  gcc -std=c11 -O1 -w -o "$CHECK/lgb_check" "$CHECK/lgb_check.c" -I"$LGB/include" \
      -L"$LGB/lib" -Wl,-rpath,"$LGB/lib" -l_lightgbm \
    || die "could not compile/link a tiny LightGBM C program against $LGB"
  "$CHECK/lgb_check" || die "the LightGBM C API check program failed (run $CHECK/lgb_check by hand)"
  echo "$LGB_STAMP_WANT" > "$LGB/.kselect-stamp"
  step_done "lightgbm 4.7.0 ($LGB_MODE)"
fi

# --------------------------------------------------------------------------- CUDA (check only)
step cuda "CUDA toolkit"
NVCC="$(command -v nvcc || true)"; [ -n "$NVCC" ] || { [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc; }
if [ -n "$NVCC" ]; then
  step_done "$("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') at $NVCC"
else
  die "no nvcc on PATH or at /usr/local/cuda/bin; install the CUDA toolkit (13.x) or set PATH; CMake's find_package(CUDAToolkit) needs it"
fi

# --------------------------------------------------------------------------- e. configure + build
step build "CMake configure + build ($BUILD_DIR)"
if [ "${SETUP_SKIP_BUILD:-0}" = 1 ]; then
  step_done "skipped (SETUP_SKIP_BUILD=1)"
elif [ ! -f "$ROOT/CMakeLists.txt" ]; then
  step_done "skipped (no top-level CMakeLists.txt yet)"
else
  cfg=(-S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}")
  if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
    gen="$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt")"
    [ "$gen" = Ninja ] || die "$BUILD_DIR was configured with generator '$gen', not Ninja: rm -rf $BUILD_DIR and rerun"
  else
    cfg+=(-G Ninja)
  fi
  [ -n "${KSELECT_DEPS_DIR:-}" ] && cfg+=(-DKSELECT_DEPS_DIR="$DEPS")
  cmake "${cfg[@]}" || die "CMake configure failed (see above). A missing dependency: rerun scripts/setup.sh; a stale cache: rm -rf $BUILD_DIR"
  cmake --build "$BUILD_DIR" || die "build failed (see the compiler errors above)"
  step_done
fi

# --------------------------------------------------------------------------- f. summary
CUR_STEP=summary
echo
note "disk used by $DEPS: $(du -sh "$DEPS" | cut -f1) (downloads cache: $(du -sh "$DL" | cut -f1))"
note "all done in $(secs "$T_ALL")s"
