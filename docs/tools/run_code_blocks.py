#!/usr/bin/env python3
"""Runs the runnable fenced code blocks of Markdown pages.

A block is runnable when its fence's info string has the word `run` after
the language:

    ```python run            ```sh run
    print("checked")         build/bin/attnfuse-opt --help | head -1
    ```                      ```

Every page runs in its own scratch folder in which each top-level entry of
the checkout (examples/, scripts/, ...) is a symbolic link to the real one,
`build` links to the build tree given with --build and `.venv` to the
prefix of the Python that runs this script, so the blocks can use the paths
a reader types in the repository root (build/bin/attnfuse-opt,
.venv/bin/python) while the files they write stay out of the checkout.
PYTHONPATH is build/python_packages.

The blocks of a page run in order from one Python interpreter: the Python
blocks share their names like the cells of a notebook, and each shell block
runs in `bash -e -o pipefail`. A page stops at its first failing block,
which is reported with its page and line and the output; the script then
exits with 1.

    run_code_blocks.py --build build README.md docs/python.md
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
LANGUAGES = {"python": "python", "py": "python", "sh": "sh", "bash": "sh",
             "shell": "sh", "console": None}

# The driver that runs a page's blocks in order in one interpreter: Python
# blocks share one namespace, shell blocks run in bash from it. It reads the
# blocks as (language, line, source) triples from a JSON file.
DRIVER = r"""
import json, subprocess, sys, traceback
blocks = json.load(open(sys.argv[1]))
scope = {"__name__": "__main__"}
for language, line, source in blocks:
    print(f"--- {language} block at line {line}", flush=True)
    if language == "sh":
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", source])
        failed = proc.returncode != 0
    else:
        try:
            exec(compile(source, f"{sys.argv[2]}:{line}", "exec"), scope)
            failed = False
        except BaseException:
            traceback.print_exc()
            failed = True
    sys.stdout.flush()
    if failed:
        print(f"{sys.argv[2]}:{line}: FAILED {language} block",
              file=sys.stderr, flush=True)
        sys.exit(1)
"""


def runnable_blocks(path):
    """[(language, first line of the code, code)] of the runnable blocks."""
    blocks = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, words = match.group("fence"), match.group("info").split()
        start, i = i + 1, i + 1
        while i < len(lines) and not (
                lines[i].strip().startswith(fence[0] * len(fence))
                and set(lines[i].strip()) == {fence[0]}):
            i += 1
        code = "\n".join(lines[start:i]) + "\n"
        i += 1
        if len(words) >= 2 and words[1] == "run":
            language = LANGUAGES.get(words[0])
            if language is None:
                raise SystemExit(f"{path}:{start}: runnable block in "
                                 f"unsupported language {words[0]!r}")
            blocks.append((language, start + 1, code))
    return blocks


def scratch_folder(build):
    """A folder that looks like the repository root (see the docstring)."""
    folder = tempfile.mkdtemp(prefix="attnfuse-docs-")
    for entry in os.listdir(ROOT):
        if entry in ("build", ".venv", ".git"):
            continue
        os.symlink(os.path.join(ROOT, entry), os.path.join(folder, entry))
    os.symlink(os.path.abspath(build), os.path.join(folder, "build"))
    os.symlink(sys.prefix, os.path.join(folder, ".venv"))
    return folder


def run_page(path, build, timeout, verbose=False):
    """Runs the page's runnable blocks; returns the number that failed (0
    or 1: a page stops at its first failure)."""
    blocks = runnable_blocks(path)
    name = os.path.relpath(path, ROOT)
    if not blocks:
        print(f"{name}: no runnable blocks")
        return 0
    folder = scratch_folder(build)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(folder, "build", "python_packages")]
        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["PATH"] = os.pathsep.join([os.path.join(folder, ".venv", "bin"),
                                   env.get("PATH", "")])
    env.setdefault("OMP_NUM_THREADS", "1")
    start = time.time()
    try:
        blocks_file = os.path.join(folder, ".blocks.json")
        with open(blocks_file, "w") as f:
            json.dump(blocks, f)
        proc = subprocess.run([sys.executable, "-c", DRIVER, blocks_file,
                               name], cwd=folder, env=env,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              timeout=timeout)
        if proc.returncode != 0:
            print(f"{name}: FAILED")
            print(proc.stdout[-6000:])
            return 1
        if verbose:
            print(proc.stdout)
        print(f"{name}: {len(blocks)} runnable blocks passed "
              f"({time.time() - start:.1f} s)")
        return 0
    except subprocess.TimeoutExpired:
        print(f"{name}: FAILED: a block ran past {timeout} s")
        return 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="+", help="Markdown files")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"),
                        help="the build tree (default: build/)")
    parser.add_argument("--timeout", type=float, default=120,
                        help="seconds for the blocks of one page")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print the blocks' output")
    args = parser.parse_args(argv)
    if not os.path.isdir(os.path.join(args.build, "python_packages")):
        parser.error(f"{args.build} has no python_packages/: build the "
                     f"project first (scripts/build.sh)")
    failed = sum(run_page(os.path.abspath(page), args.build, args.timeout,
                          args.verbose)
                 for page in args.pages)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
