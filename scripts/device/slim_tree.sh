#!/usr/bin/env bash
# The tracked tree (data/ and models/ above all) is larger than the 64 MiB a device call carries.
# `slim_tree.sh stash [MODEL...]` moves data/ (leaving a copy of data/hardware) and every model
# directory not named out of the working tree into $STASH (default /work/stash_<repo dir name>);
# `slim_tree.sh restore` moves them back. `status` says which state the tree is in. Never commit
# while stashed: git sees the files as deleted (restore first; the script refuses to stash twice).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
STASH=${STASH:-/work/stash_$(basename "$ROOT")}
cmd=${1:-status}
shift || true
case "$cmd" in
  stash)
    if [ -e "$STASH/data" ] || [ -e "$STASH/models" ]; then
      echo "slim_tree: $STASH already holds a stash; run restore first" >&2
      exit 1
    fi
    mkdir -p "$STASH/models"
    mv "$ROOT/data" "$STASH/data"
    # The hardware profiles are a few KB and some checks read them (log summarize --hw).
    mkdir -p "$ROOT/data" && cp -r "$STASH/data/hardware" "$ROOT/data/"
    for m in "$ROOT"/models/*/; do
      name=$(basename "$m")
      keep=0
      for k in "$@"; do [ "$k" = "$name" ] && keep=1; done
      [ $keep = 1 ] || mv "$m" "$STASH/models/$name"
    done
    echo "slim_tree: stashed into $STASH (kept models: ${*:-none}); tree now $(du -sh --exclude=.git --exclude=build --exclude=build-gpu --exclude=.deps "$ROOT" | cut -f1)"
    ;;
  restore)
    [ -e "$STASH/data" ] || { echo "slim_tree: nothing stashed in $STASH" >&2; exit 1; }
    rm -rf "$ROOT/data"  # the hardware profiles' copy
    mv "$STASH/data" "$ROOT/data"
    for m in "$STASH"/models/*/; do
      [ -e "$m" ] || continue
      mv "$m" "$ROOT/models/$(basename "$m")"
    done
    rmdir "$STASH/models" "$STASH"
    echo "slim_tree: restored from $STASH"
    ;;
  status)
    if [ -e "$STASH/data" ]; then echo "stashed in $STASH"; else echo "not stashed"; fi
    ;;
  *)
    echo "usage: slim_tree.sh stash [MODEL...] | restore | status" >&2
    exit 2
    ;;
esac
