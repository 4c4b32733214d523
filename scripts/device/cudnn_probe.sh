#!/bin/bash
# The cuDNN provider on the device: its GPU tests, then `kselect conv list` (the engine x knob
# space, every plan built, and heuristic modes A and B) on a few layer types in all three
# directions, timed. Run from the repository root with the GPU-side build carried in BIN.
BIN=${BIN:-.devcarry-sel}
OUT=${OUT:-/tmp/out}
source scripts/device/check_common.sh
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" > "$OUT/env.txt"
ls -l $(echo "$LD_LIBRARY_PATH" | tr ':' ' ') 2>/dev/null | grep -E "cudnn|cudart" >> "$OUT/env.txt"
mkdir -p "$OUT/lists"
gpu_tests "${TEST_SECONDS:-150}" "${GPU_TEST_FILTER:-Cudnn*}"
probe() {  # probe NAME ARGS...: all three directions
  local name=$1; shift
  for d in fwd bwd_data bwd_weight; do
    local s=$(date +%s%N)
    timeout "${LIST_SECONDS:-40}" "$BIN/kselect" conv list --direction "$d" "$@" > "$OUT/lists/${name}_$d.txt" 2>&1
    local rc=$?
    local e=$(date +%s%N)
    summary+=("$name $d rc=$rc $(sed -n 3p "$OUT/lists/${name}_$d.txt") wall $(( (e - s) / 1000000 )) ms")
  done
}
probe r3x3 --n 32 --c 64 --k 64 --hi 56 --wi 56 --y 3 --x 3 --pad 1
probe r1x1 --n 32 --c 256 --k 64 --hi 56 --wi 56
probe dw3x3 --n 32 --c 384 --k 384 --g 384 --hi 28 --wi 28 --y 3 --x 3 --pad 1
probe g32 --n 32 --c 256 --k 256 --g 32 --hi 28 --wi 28 --y 3 --x 3 --pad 1
# probe s2 --n 32 --c 64 --k 128 --hi 56 --wi 56 --y 3 --x 3 --pad 1 --stride 2
# probe dil2 --n 8 --c 256 --k 256 --hi 32 --wi 32 --y 3 --x 3 --pad 2 --dilation 2
probe c3d --n 2 --c 64 --k 64 --di 16 --hi 56 --wi 56 --z 3 --y 3 --x 3 --pad 1
"$BIN/kselect" conv list --direction fwd --n 32 --c 64 --k 64 --hi 56 --wi 56 --y 3 --x 3 --pad 1 --json > "$OUT/lists/r3x3_fwd.jsonl" 2>&1
print_summary_to "$OUT/summary.txt"
# The device tool returns only a few files: one archive of the lists.
(cd "$OUT" && tar czf lists.tar.gz lists tests.log && rm -rf lists tests.log)
