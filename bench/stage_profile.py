"""Where each stage of a scan spends its time, from the profiles ARCHLINT_PROFILE_DIR leaves.

    ARCHLINT_PROFILE_DIR=DIR archlint scan TREE --no-cache --jobs 1 --format sarif -o out.sarif
    python bench/stage_profile.py DIR [--top N]

For each stage in order: its profiled time, then the N functions with the most time of their own
(tree-sitter's parse and the regular expressions are native code: their time is their own).
"""

from __future__ import annotations

import argparse
import pstats
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    for path in sorted(args.folder.glob("*.prof")):
        stats = pstats.Stats(str(path))
        total = stats.total_tt  # type: ignore[attr-defined]
        print(f"{path.stem.split('-', 1)[1]:<12} {total:8.2f} s profiled")
        rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])[: args.top]  # type: ignore[attr-defined]
        for (filename, line, function), (_, calls, own, cumulative, _) in rows:
            where = filename.split("/archlint/", 1)[-1] if "/archlint/" in filename else filename
            print(f"    {own:7.2f} s own {cumulative:7.2f} s with callees {calls:9d} calls  {where}:{line}({function})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
