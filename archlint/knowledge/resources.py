"""Locate the shipped `rules/` data: inside the wheel as archlint/_rules, in a checkout as ../rules."""

from __future__ import annotations

import hashlib
import tomllib
from functools import lru_cache
from importlib import resources
from pathlib import Path


@lru_cache(maxsize=1)
def rules_dir() -> Path:
    packaged = resources.files("archlint").joinpath("_rules")
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parents[2] / "rules"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError("archlint's rules/ data folder is missing from this installation")


@lru_cache(maxsize=None)
def load_toml(relative: str) -> dict:
    with open(rules_dir() / relative, "rb") as handle:
        return tomllib.load(handle)


@lru_cache(maxsize=1)
def data_hash() -> str:
    """Hash of every shipped data file: part of the cache key, so a change to the KB or to the gate
    vocabulary (rules/idioms/, read while facts are extracted) invalidates facts."""
    return tree_hash(rules_dir())


def tree_hash(root: Path) -> str:
    """Hash of every file under `root`, names and contents."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
