"""Campaign: torchreview's ignore decisions against git's on random .gitignore files.

    python bench/bench_gitignore.py [--files 1500] [--seed 1]

Builds a tree of look-alike names (escapes, brackets, spaces, '!', '#', UTF-8),
then writes many random .gitignore files (1-3 lines made of tricky pieces, and
0-2 lines in a nested ``a/.gitignore``:
``**`` forms, classes, ranges, escapes, anchors, trailing spaces) and compares,
for every path, `git check-ignore --no-index` (a path below an ignored folder
counts as ignored) with ``IgnoreRules``. Prints the mismatches (first five in
full) and the number of files that split the tree. Needs git.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

FOLDERS = ["a", "b", "ab", "d.d", "A", "x]", "-"]
NAMES = ["a.py", "b.py", "ab.py", "x.txt", "A.py", ".h.py", "[a].py", "a b", "a\\b", "!x", "#y", "a ",
         "\u00e9.py", "*"]
PIECES = ["a", "b", "*", "**", "?", "/", "[ab]", "[!a]", "[^a]", "[a-b]", "[b-a]", ".py", "\\[a]", "[[:upper:]]",
          "[[:alpha:]", "[]a]", "[a-]", "[[:bogus:]]", "d.d", "*.py", "**/", "/**", "\\ ", " ", "\\", "\\*", "!",
          "#", "\u00e9", "[[]", "x]", "-", "\\!", "\\#", "[\\]]", "[a\\-z]"]


def main() -> int:
    from torchreview.engine.gitignore import IgnoreRules

    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1500, help="random .gitignore files to try")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    git = shutil.which("git")
    if git is None:
        print("git is not installed")
        return 2
    rng = random.Random(args.seed)
    repo = tempfile.mkdtemp(prefix="tr-gitignore-")
    env = dict(os.environ, HOME=repo, XDG_CONFIG_HOME=repo, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)

    def check_ignore(paths: list[str]) -> set[str]:
        proc = subprocess.run([git, "check-ignore", "--stdin", "-z", "--no-index"], cwd=repo, env=env,
                              input=b"".join(os.fsencode(p) + b"\0" for p in paths), capture_output=True)
        return {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}

    try:
        subprocess.run([git, "init", "-q"], cwd=repo, env=env, check=True)
        os.makedirs(os.path.join(repo, "a"))
        for _ in range(120):
            parts = [rng.choice(FOLDERS) for _ in range(rng.randint(0, 3))] + [rng.choice(NAMES)]
            path = os.path.join(repo, *parts)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                handle.write("x = 1\n")
        paths = []
        for root, dirs, files in os.walk(repo):
            dirs[:] = [d for d in dirs if d != ".git"]
            paths.extend(os.path.relpath(os.path.join(root, n), repo) for n in dirs + files)
        mismatches = splitting = 0
        started = time.perf_counter()
        for _ in range(args.files):
            lines = ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 3))]
            with open(os.path.join(repo, ".gitignore"), "w", encoding="utf-8") as handle:
                handle.write("\n".join(lines) + "\n")
            nested = ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(0, 2))]
            with open(os.path.join(repo, "a", ".gitignore"), "w", encoding="utf-8") as handle:
                handle.write("\n".join(nested))  # below the top one, often without a final newline
            lines = lines + ["a/.gitignore:"] + nested
            direct = check_ignore(paths)
            git_says = {p for p in paths if any(p == d or p.startswith(d + "/") for d in direct)}
            rules = IgnoreRules(repo)
            ours = {p for p in paths if rules.ignored_path(os.path.join(repo, p), os.path.isdir(os.path.join(repo, p)))}
            splitting += 0 < len(git_says) < len(paths)
            if ours != git_says:
                mismatches += 1
                if mismatches <= 5:
                    print("mismatch:", lines, sorted(ours ^ git_says)[:5])
        print(f"paths={len(paths)} gitignore-files={args.files} splitting-the-tree={splitting} "
              f"mismatches={mismatches} seconds={time.perf_counter() - started:.1f}")
        return 1 if mismatches else 0
    finally:
        shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
