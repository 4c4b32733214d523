#!/usr/bin/env python3
"""Runs the end-to-end CLI cases in tests/cli/cases/*.test.

A case file is a list of steps separated by lines of '----'. Each step has:
  command: <arguments after `kselect`>   (placeholders {fixtures}, {tmp}, {source})
  copy: <from> <to>             (any number; done before the command, e.g. a byte-identical input)
  exit: <expected exit code>
  stdout-contains: <text>       (any number)
  stdout-lines: <n>             (stdout has exactly n lines; with stdout-contains, exact output)
  stderr-contains: <text>       (any number)
  stdout-lacks: <text>          (any number; say a line must not appear)
  stderr-lacks: <text>          (any number; say a note must not appear)
  file-exists: <path>           (any number)
  file-absent: <path>           (any number; e.g. no partial output after a failure)
  file-contains: <path> <text>  (any number; the path ends at the first space)
Lines starting with '#' are comments. Every file runs in a fresh temporary folder.
"""
import argparse
import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile


def parse_case(path):
    steps, current = [], {}
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line.strip() == "----":
                if current:
                    steps.append(current)
                current = {}
                continue
            key, sep, value = line.partition(":")
            if not sep:
                raise ValueError(f"{path}: cannot read line {line!r}")
            current.setdefault(key.strip(), []).append(value.strip())
    if current:
        steps.append(current)
    return steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kselect", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--source", required=True)
    args = ap.parse_args()
    fixtures = os.path.join(args.source, "tests", "fixtures")
    passed = failed = 0
    for case in sorted(glob.glob(os.path.join(args.cases, "*.test"))):
        name = os.path.basename(case)
        with tempfile.TemporaryDirectory(prefix="kselect_cli_") as tmp:
            subst = lambda s: s.format(fixtures=fixtures, tmp=tmp, source=args.source)
            for index, step in enumerate(parse_case(case), 1):
                for spec in step.get("copy", []):
                    source, destination = shlex.split(subst(spec))
                    shutil.copyfile(source, destination)
                command = [args.kselect] + shlex.split(subst(step["command"][0]))
                proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
                problems = []
                want_exit = int(step.get("exit", ["0"])[0])
                if proc.returncode != want_exit:
                    problems.append(f"exit {proc.returncode}, expected {want_exit}")
                for text in step.get("stdout-contains", []):
                    if subst(text) not in proc.stdout:
                        problems.append(f"stdout lacks {text!r}")
                for count in step.get("stdout-lines", []):
                    lines = len(proc.stdout.splitlines())
                    if lines != int(count):
                        problems.append(f"stdout has {lines} lines, expected {count}")
                for text in step.get("stderr-contains", []):
                    if subst(text) not in proc.stderr:
                        problems.append(f"stderr lacks {text!r}")
                for text in step.get("stdout-lacks", []):
                    if subst(text) in proc.stdout:
                        problems.append(f"stdout has {text!r}")
                for text in step.get("stderr-lacks", []):
                    if subst(text) in proc.stderr:
                        problems.append(f"stderr has {text!r}")
                for path in step.get("file-exists", []):
                    if not os.path.exists(subst(path)):
                        problems.append(f"missing file {path}")
                for spec in step.get("file-contains", []):
                    path, _, text = subst(spec).partition(" ")
                    try:
                        with open(path, encoding="utf-8") as f:
                            if text not in f.read():
                                problems.append(f"{path} lacks {text!r}")
                    except OSError as error:
                        problems.append(f"cannot read {path}: {error}")
                for path in step.get("file-absent", []):
                    if os.path.exists(subst(path)):
                        problems.append(f"unexpected file {path}")
                label = f"{name} step {index}: kselect {step['command'][0]}"
                if problems:
                    failed += 1
                    print(f"FAIL {label}\n  " + "\n  ".join(problems))
                    print("  stdout: " + proc.stdout[-2000:].replace("\n", "\n          "))
                    print("  stderr: " + proc.stderr[-2000:].replace("\n", "\n          "))
                else:
                    passed += 1
                    print(f"ok   {label}")
    print(f"cli cases: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
