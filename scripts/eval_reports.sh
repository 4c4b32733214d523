#!/usr/bin/env bash
# Regenerates models/*/eval_report.{md,html}: each shipped model scored out of fold (shapes held
# out by GroupKFold, early stopping on an inner split) on the dataset it was trained on, which
# train_manifest.json names. Usage: scripts/eval_reports.sh [MODEL_DIR ...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KSELECT="${KSELECT:-$ROOT/build/bin/kselect}"
cd "$ROOT"
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(models/*/)
for model in "${models[@]}"; do
  model="${model%/}"
  data=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['data']['source'])" \
    "$model/train_manifest.json")
  {
    echo "# Held-out evaluation: $model"
    echo
    echo "Out of fold: every problem is scored with the predictions of the fold model that never saw"
    echo "its shape (GroupKFold by shape, early stopping on an inner split of the training shapes)."
    echo "Regenerate with \`scripts/eval_reports.sh $model\`."
    echo
    "$KSELECT" eval --model "$model" --data "$data" --oof --markdown "$model/.eval.md" \
      --html "$model/eval_report.html" > /dev/null 2>&1
    sed '1s/^# /## /' "$model/.eval.md"
    rm -f "$model/.eval.md"
  } > "$model/eval_report.md.tmp"
  mv "$model/eval_report.md.tmp" "$model/eval_report.md"
  echo "$model: $(grep -m1 '^| kselect model' "$model/eval_report.md")"
done
