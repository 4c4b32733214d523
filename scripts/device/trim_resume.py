#!/usr/bin/env python3
"""Trims a kselect bench JSONL to what `kselect bench --resume` needs on the device: the run
record, every problem_done line and the rows of problems not yet finished. Finished problems'
rows stay here (the device has a 64 MiB carry limit); merge the lines the device appends
after the trimmed prefix back into the full file.

usage: trim_resume.py FULL.jsonl TRIMMED.jsonl"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    lines = open(sys.argv[1]).read().splitlines()
    done = {json.dumps(json.loads(l)["problem"], sort_keys=True)
            for l in lines if '"problem_done"' in l}
    kept = []
    for line in lines:
        record = json.loads(line)
        if (record.get("type") == "measurement"
                and json.dumps(record["problem"], sort_keys=True) in done):
            continue
        kept.append(line)
    with open(sys.argv[2], "w") as out:
        out.write("\n".join(kept) + "\n")
    print(f"{len(kept)} of {len(lines)} lines kept, {len(done)} problems finished")


if __name__ == "__main__":
    main()
