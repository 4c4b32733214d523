#!/usr/bin/env bash
# The device checks behind one runner, in the manner of ggml's test-backend-ops modes and the
# CUTLASS profiler's --mode: each check is a named row of scripts/device/checks.tsv (its script,
# rough device time, the carried build it needs, what it checks).
#
#   scripts/device/run.sh list                    the table of checks
#   scripts/device/run.sh CHECK [ARGS...]         one check: its script with ARGS, output in $OUT
#   scripts/device/run.sh CHECK1,CHECK2,...       several in one device call, each in $OUT/CHECK,
#                                                 packed into $OUT/CHECK.tar.gz after it (PACK=0:
#                                                 left as folders)
#   scripts/device/run.sh --dry-run CHECK[,...]   what would run, and whether its build is here
#   scripts/device/run.sh --check-index           checks.tsv, README.md and the files here agree
#                                                 (no GPU, no build: a CTest test runs it)
#
# Checks take their settings from the environment (BIN, GPU_TEST_FILTER, ...: see each script's
# header), as when the script is run directly. Before anything runs, every check's carried build
# (the folder named in checks.tsv, or the one its variable names) must exist, so a missing carry
# costs no device time. Exit status: 2 for a usage error or a missing build, otherwise the first
# non-zero status of the checks run (all of them run).
set -uo pipefail

DEVICE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$DEVICE_DIR/../.." && pwd)"
TABLE="$DEVICE_DIR/checks.tsv"
INDEX="$DEVICE_DIR/README.md"

die() { echo "run.sh: $*" >&2; exit 2; }

# The table's rows, comments and blank lines left out: seven tab-separated fields each.
rows() { grep -v -e '^#' -e '^[[:space:]]*$' "$TABLE"; }

# row NAME: sets name group script time carry needs what from the check's row; false if none.
row() {
  local line
  line=$(rows | awk -F'\t' -v n="$1" '$1 == n' | head -1)
  [ -n "$line" ] || return 1
  IFS=$'\t' read -r name group script time carry needs what <<< "$line"
}

list() {
  local heading g
  for g in check collect historical; do
    case "$g" in
      check) heading="checks" ;;
      collect) heading="data collection" ;;
      historical) heading="historical session experiments (kept as they were run)" ;;
    esac
    echo "== $heading"
    printf '%-14s %-24s %-17s %s\n' NAME SCRIPT "DEVICE TIME" "CARRIED BUILD"
    rows | while IFS=$'\t' read -r name group script time carry needs what; do
      [ "$group" = "$g" ] || continue
      printf '%-14s %-24s %-17s %s\n' "$name" "$script" "$time" "$carry"
      printf '%s\n' "$what" | fold -s -w 94 | sed -e 's/^/    /' -e 's/ *$//'
      printf 'needs: %s\n' "$needs" | fold -s -w 94 | sed -e 's/^/    /' -e 's/ *$//'
    done
    echo
  done
  echo "Run one: scripts/device/run.sh NAME [ARGS...]; several in one call: NAME1,NAME2 (each"
  echo "writes under \$OUT/NAME, packed into \$OUT/NAME.tar.gz: a call brings back 8 files of at"
  echo "most 16 MiB). Settings come from the environment (see each script's header); the index is"
  echo "scripts/device/README.md."
}

# carry_dir: the folder the current row's carried build is read from ("" when it names none).
carry_dir() {
  [ "$carry" = - ] && return
  local var=${carry%%=*} default=${carry#*=}
  echo "${!var:-$default}"
}

# check_index: every file here is in README.md, every file README.md names exists, README.md's
# tables of checks and checks.tsv name the same checks and scripts, and every script parses.
check_index() {
  local fail=0 f
  problem() { echo "check-index: $*" >&2; fail=1; }
  [ -f "$TABLE" ] || die "no $TABLE"
  [ -f "$INDEX" ] || die "no $INDEX"
  # checks.tsv: seven fields, known groups, unique names, scripts that exist.
  while IFS= read -r line; do
    IFS=$'\t' read -r name group script time carry needs what <<< "$line"
    [ "$(awk -F'\t' '{print NF}' <<< "$line")" = 7 ] || problem "checks.tsv: '$name' has not 7 tab-separated fields"
    case "$group" in check|collect|historical) ;; *) problem "checks.tsv: '$name' has group '$group'" ;; esac
    [ -f "$DEVICE_DIR/$script" ] || problem "checks.tsv: '$name' names $script, which is not in scripts/device/"
    case "$carry" in -|[A-Z]*=?*) ;; *) problem "checks.tsv: '$name' has carried build '$carry' (VAR=folder or -)" ;; esac
  done < <(rows)
  for f in $(rows | cut -f1 | sort | uniq -d); do problem "checks.tsv: '$f' appears twice"; done
  # README.md: rows "| `name` | `script` |" are checks; rows whose first (or second) cell is a
  # `file` alone list files.
  local index_checks index_files table_checks files
  index_checks=$(awk -F'|' '/^\|/ {
      a = $2; b = $3; gsub(/^ +| +$/, "", a); gsub(/^ +| +$/, "", b)
      if (a ~ /^`[a-z0-9-]+`$/ && b ~ /^`[^` ]+`$/) { gsub(/`/, "", a); gsub(/`/, "", b); print a "\t" b }
    }' "$INDEX" | sort)
  index_files=$(awk -F'|' '/^\|/ {
      a = $2; b = $3; gsub(/^ +| +$/, "", a); gsub(/^ +| +$/, "", b)
      if (a ~ /^`[a-z0-9-]+`$/ && b ~ /^`[^` ]+`$/) f = b
      else if (a ~ /^`[^` ]+`$/) f = a
      else if (b ~ /^`[^` ]+`$/) f = b
      else next
      gsub(/`/, "", f); print f
    }' "$INDEX" | sort -u)
  table_checks=$(rows | cut -f1,3 | sort)
  while IFS=$'\t' read -r name script; do
    [ -n "$name" ] || continue
    grep -qxF "$name"$'\t'"$script" <<< "$index_checks" ||
      problem "check '$name' ($script) is in checks.tsv but not in README.md's tables of checks"
  done <<< "$table_checks"
  while IFS=$'\t' read -r name script; do
    [ -n "$name" ] || continue
    grep -qxF "$name"$'\t'"$script" <<< "$table_checks" ||
      problem "README.md lists check '$name' ($script), which checks.tsv does not"
  done <<< "$index_checks"
  files=$(cd "$DEVICE_DIR" && find . -type f ! -name '*.pyc' ! -path '*/__pycache__/*' \
    ! -name README.md | sed 's|^\./||' | sort)
  for f in $files; do
    grep -qxF "$f" <<< "$index_files" || problem "scripts/device/$f is not in README.md"
  done
  for f in $index_files; do
    [ -f "$DEVICE_DIR/$f" ] || problem "README.md lists $f, which is not in scripts/device/"
  done
  # Every script parses (bash -n; Python and JSON where python3 is here).
  for f in $files; do
    case "$f" in *.sh) bash -n "$DEVICE_DIR/$f" || problem "scripts/device/$f does not parse" ;; esac
  done
  if command -v python3 > /dev/null; then
    # shellcheck disable=SC2086  # one argument per file (the file names here have no spaces)
    (cd "$DEVICE_DIR" && python3 - $files <<'PY') || problem "a Python or JSON file does not parse"
import ast, json, sys
bad = 0
for path in sys.argv[1:]:
    try:
        if path.endswith(".py"):
            ast.parse(open(path).read(), path)
        elif path.endswith(".json"):
            json.load(open(path))
    except (SyntaxError, ValueError) as e:
        print(f"check-index: scripts/device/{path}: {e}", file=sys.stderr)
        bad = 1
sys.exit(bad)
PY
  fi
  [ "$fail" = 0 ] || exit 1
  echo "check-index: $(wc -l <<< "$table_checks") checks in checks.tsv and README.md, $(wc -w <<< "$files") files in scripts/device/ all indexed"
}

usage() {
  sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -uo/d' -e 's/^# \{0,1\}//'
}

dry=0
case "${1:-}" in
  "") usage >&2; echo >&2; list >&2; exit 2 ;;
  -h|--help) usage; exit 0 ;;
  list|--list) list; exit 0 ;;
  --check-index) check_index; exit $? ;;
  -n|--dry-run) dry=1; shift; [ $# -gt 0 ] || die "--dry-run needs a check name" ;;
esac

IFS=',' read -ra checks <<< "$1"
shift
[ ${#checks[@]} -gt 0 ] || die "no check named"
[ ${#checks[@]} -eq 1 ] || [ $# -eq 0 ] ||
  die "arguments go with one check; several checks take their settings from the environment"
cd "$ROOT" || die "cannot enter $ROOT"
OUT="${OUT:-/tmp/kselect-out}"
export OUT

# Every name known and every carried build here before anything runs.
missing=0
for c in "${checks[@]}"; do
  if ! row "$c"; then
    { echo "run.sh: unknown check '$c'"; echo; list; } >&2
    exit 2
  fi
  dir=$(carry_dir)
  if [ -n "$dir" ] && [ ! -d "$dir" ]; then
    echo "run.sh: $c needs its carried build in $dir (${carry%%=*}=...; needs: $needs); carry it or set ${carry%%=*}" >&2
    missing=1
  fi
done
[ "$missing" = 0 ] || [ "$dry" = 1 ] || exit 2

status=0
results=()
for c in "${checks[@]}"; do
  row "$c"
  out="$OUT"
  [ ${#checks[@]} -gt 1 ] && out="$OUT/$name"
  if [ "$dry" = 1 ]; then
    echo "OUT=$out bash scripts/device/$script${*:+ $*}   # $name: $time"
    continue
  fi
  mkdir -p "$out"
  echo "== run.sh: $name (scripts/device/$script, $time)"
  start=$(date +%s)
  OUT="$out" bash "scripts/device/$script" "$@"
  rc=$?
  [ "$status" = 0 ] && status=$rc
  # A device call brings back 8 files: with several checks, one archive each (PACK=0: folders).
  if [ ${#checks[@]} -gt 1 ] && [ "${PACK:-1}" != 0 ]; then
    (cd "$OUT" && tar czf "$name.tar.gz" "$name" && rm -rf "$name")
  fi
  results+=("$(printf '%-14s rc=%-3s %5s s  %s' "$name" "$rc" "$(( $(date +%s) - start ))" "$script")")
done
[ "$dry" = 1 ] && exit $(( missing * 2 ))
echo "== run.sh: results"
printf '%s\n' "${results[@]}"
exit "$status"
