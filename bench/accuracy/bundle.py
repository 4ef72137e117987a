"""The files a set of exported builds reads, packed for a build machine that has none of them.

    python -m bench.accuracy.bundle jobs.json bundle.tar.xz

Each job's unit and everything its `#include` lines can reach through the job's include folders
(every `#include`, whatever condition it sits under), and whole every include folder under 64 MB
that those files touch: libraries such as CCCL name headers through macros, which no reading of
`#include` lines follows. Packed under their absolute paths: unpacked with `tar -C / -xJf bundle.tar.xz` (or Python's tarfile)
on the other machine, the builds find their files where this machine has them, so the compile-cache
keys match.
"""

from __future__ import annotations

import json
import re
import sys
import tarfile
from pathlib import Path

_INCLUDE_RE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.M)


def closure(units: list[str], include_dirs: list[str]) -> set[str]:
    """Absolute paths of the units and every file their includes resolve to."""
    seen: set[str] = set()
    todo = [str(Path(u).resolve()) for u in units]
    folders = [Path(d) for d in include_dirs]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue
        for name in _INCLUDE_RE.findall(data):
            relative = name.decode("utf-8", "replace")
            for folder in (Path(path).parent, *folders):
                candidate = folder / relative
                if candidate.is_file():
                    todo.append(str(candidate.resolve()))
                    break
    return seen


def _whole_folder(folder: str, reached: set[str], limit: int = 64 << 20) -> set[str]:
    root = str(Path(folder).resolve()) + "/"
    if not any(path.startswith(root) for path in reached):
        return set()
    members = [p for p in Path(root).rglob("*") if p.is_file()]
    if sum(p.stat().st_size for p in members) > limit:
        return set()
    return {str(p.resolve()) for p in members}


def main(argv: list[str]) -> int:
    jobs_path, bundle = Path(argv[0]), Path(argv[1])
    jobs = json.loads(jobs_path.read_text(encoding="utf-8"))
    files: set[str] = set()
    by_folders: dict[tuple[str, ...], list[str]] = {}
    for job in jobs:
        by_folders.setdefault(tuple(job["includes"]), []).append(job["unit"])
    for folders, units in by_folders.items():
        reached = closure(units, list(folders))
        files |= reached
        for folder in folders:
            files |= _whole_folder(folder, reached)
    with tarfile.open(bundle, "w:xz") as archive:
        for path in sorted(files):
            archive.add(path, arcname=path.lstrip("/"), recursive=False)
    size = bundle.stat().st_size
    print(f"{len(files)} files from {len(jobs)} builds packed in {bundle} ({size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
