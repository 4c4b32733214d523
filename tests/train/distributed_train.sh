#!/bin/bash
# Distributed data-parallel training (LightGBM's tree_learner=data) on the loopback interface:
# two `kselect train` processes, each given half the problems (--shard), end with the same trees,
# and their model holds out as well as one process's trained on all of the data (mean efficiency
# on the 193 conv validation layers within 1 point). Usage: distributed_train.sh KSELECT SOURCE
set -euo pipefail
kselect=$1
data=$2/data/h200
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--data "$data/cudnn_conv_fwd_train.parquet" --targets tflops --objective lambdarank
  --folds 0 --max-rounds 60 --threads 1)
"$kselect" train "${common[@]}" --out "$tmp/one" > "$tmp/one.log" 2>&1 || { cat "$tmp/one.log"; exit 1; }
# Ports from the process id: two runs at once (ctest -j) do not collide.
port=$((20000 + ($$ % 20000) * 2))
machines=127.0.0.1:$port,127.0.0.1:$((port + 1))
"$kselect" train "${common[@]}" --out "$tmp/two0" --machines "$machines" --listen-port "$port" \
  --shard 0/2 --network-timeout 2 > "$tmp/two0.log" 2>&1 &
first=$!
rc1=0
"$kselect" train "${common[@]}" --out "$tmp/two1" --machines "$machines" \
  --listen-port $((port + 1)) --shard 1/2 --network-timeout 2 > "$tmp/two1.log" 2>&1 || rc1=$?
rc0=0
wait "$first" || rc0=$?
if [ "$rc0" != 0 ] || [ "$rc1" != 0 ]; then
  tail -5 "$tmp/two0.log" "$tmp/two1.log"
  echo "FAIL: distributed processes exited $rc0 and $rc1"
  exit 1
fi
if ! cmp -s <(zcat "$tmp/two0/model_tflops.lgbm.gz") <(zcat "$tmp/two1/model_tflops.lgbm.gz"); then
  echo "FAIL: the two processes wrote different trees"
  exit 1
fi
grep -q '"tree_learner": "data"' "$tmp/two0/train_manifest.json" || {
  echo "FAIL: the manifest does not record the distributed training"
  exit 1
}
mean() {
  "$kselect" eval --model "$1" --data "$data/cudnn_conv_fwd_validation.parquet" |
    sed -n 's/.*efficiency mean \([0-9.]*\)%.*/\1/p' | head -1
}
one=$(mean "$tmp/one")
two=$(mean "$tmp/two0")
echo "held out (193 conv fwd layers): one process ${one} %, two processes ${two} %"
awk -v a="$one" -v b="$two" 'BEGIN { exit !(a != "" && b != "" && b >= a - 1.0) }' || {
  echo "FAIL: two processes hold out more than 1 point worse than one"
  exit 1
}
echo "PASS"
