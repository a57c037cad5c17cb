"""materialise.py GITDIR COMMIT DEST: write every blob of COMMIT present in the git directory GITDIR
under DEST, skipping the blobs a snapshot lacks (large files: data, weights). Used to check out the
repositories of a blind set from `fetch` snapshots (bench/precision/builder-prompt.md)."""
from __future__ import annotations

import os
import subprocess
import sys


def main(git: str, commit: str, dest: str) -> None:
    out = subprocess.run(["git", "--git-dir", git, "ls-tree", "-r", "-z", commit], capture_output=True,
                         check=True).stdout
    skipped = 0
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, path = entry.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind != b"blob" or mode == b"120000":  # submodules and symbolic links are left out
            continue
        blob = subprocess.run(["git", "--git-dir", git, "cat-file", "blob", sha], capture_output=True)
        if blob.returncode:
            skipped += 1
            continue
        target = os.path.join(dest, os.fsdecode(path))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as fh:
            fh.write(blob.stdout)
    print(f"skipped {skipped} missing blobs")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:4])
