#!/usr/bin/env bash
# Regenerates models/*/eval_report.{md,html}: each shipped model scored out of fold (shapes held
# out by GroupKFold, early stopping on an inner split) on the dataset(s) it was trained on, which
# train_manifest.json names. A model trained on several files gets one section per file in
# eval_report.md and one eval_report_<file>.html each. A model directory may also list test sets
# in test_data.txt (one dataset path a line): datasets of shapes the model never trained on, scored
# with the final model itself (eval_report_test_<file>.html). A model trained without CV (--folds 0:
# its oof_predictions.csv.gz would hold no predictions, so it ships none) gets its test sets only.
# Usage: scripts/eval_reports.sh [MODEL_DIR ...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KSELECT="${KSELECT:-$ROOT/build/bin/kselect}"
cd "$ROOT"
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(models/*/)
for model in "${models[@]}"; do
  model="${model%/}"
  mapfile -t sources < <(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))['data']
print('\n'.join(d.get('sources') or [d['source']]))" "$model/train_manifest.json")
  rm -f "$model"/eval_report*.html
  # A model trained without CV (--folds 0) has no out-of-fold predictions: only its test sets.
  oof="$(python3 -c "
import json, sys
print(int(json.load(open(sys.argv[1]))['options'].get('folds', 5) >= 2))" "$model/train_manifest.json")"
  [ "$oof" = 1 ] || sources=()
  {
    echo "# Held-out evaluation: $model"
    echo
    if [ "$oof" = 1 ]; then
      echo "Out of fold: every problem is scored with the predictions of the fold model that never saw"
      echo "its shape (GroupKFold by shape, early stopping on an inner split of the training shapes)."
    else
      echo "Trained without cross-validation (\`--folds 0\`, train_manifest.json): no out-of-fold"
      echo "figures, only the test sets of test_data.txt."
    fi
    echo "Regenerate with \`scripts/eval_reports.sh $model\`."
    for data in "${sources[@]}"; do
      html="$model/eval_report.html"
      if [ ${#sources[@]} -gt 1 ]; then
        html="$model/eval_report_$(basename "$data" .parquet).html"
      fi
      echo
      "$KSELECT" eval --model "$model" --data "$data" --oof --markdown "$model/.eval.md" \
        --html "$html" > /dev/null 2>&1
      sed -e 's/^## /### /' -e '1s/^# /## /' "$model/.eval.md"
      rm -f "$model/.eval.md"
    done
    if [ -f "$model/test_data.txt" ]; then
      while read -r data; do
        [ -n "$data" ] || continue
        echo
        echo "## Test set: $data"
        echo
        echo "Shapes the model never saw in training, scored with the final model (not out of fold)."
        echo
        "$KSELECT" eval --model "$model" --data "$data" --markdown "$model/.eval.md" \
          --html "$model/eval_report_test_$(basename "$data" .parquet).html" > /dev/null 2>&1
        sed -e 's/^## /### /' -e '1d' "$model/.eval.md"
        rm -f "$model/.eval.md"
      done < "$model/test_data.txt"
    fi
  } > "$model/eval_report.md.tmp"
  mv "$model/eval_report.md.tmp" "$model/eval_report.md"
  echo "$model: $(grep '^| kselect model' "$model/eval_report.md" | tr '\n' ' ')"
done
