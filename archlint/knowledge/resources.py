"""Locate the shipped `rules/` data: inside the wheel as archlint/_rules, in a checkout as ../rules."""

from __future__ import annotations

import hashlib
import os
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


_parsed: dict[str, dict] = {}  # the rules files parsed (or preloaded) in this process, by name


def load_toml(relative: str) -> dict:
    """A rules file's table, parsed once per process (callers share it: never changed)."""
    table = _parsed.get(relative)
    if table is None:
        with open(rules_dir() / relative, "rb") as handle:
            table = _parsed[relative] = tomllib.load(handle)
    return table


def parsed_tables() -> dict[str, dict]:
    """Every rules file parsed in this process so far, by name: what preload_tables takes."""
    return dict(_parsed)


def preload_tables(tables: dict[str, dict]) -> None:
    """Tables another process parsed from these very rules files (their data_hash) taken as its
    own: parsing the TOML of a re-scan's 25 files again took about 20 ms (engine.cache keeps them)."""
    for relative, table in tables.items():
        _parsed.setdefault(relative, table)


@lru_cache(maxsize=1)
def data_hash() -> str:
    """Hash of every shipped data file: part of the cache key, so a change to the KB or to the gate
    vocabulary (rules/idioms/, read while facts are extracted) invalidates facts."""
    return tree_hash(rules_dir())


def tree_hash(root: Path, suffix: str = "") -> str:
    """Hash of every file under `root` whose name ends with `suffix`, names and contents (read with
    os.walk: every scan computes two of these before it reads its first file)."""
    digest = hashlib.sha256()
    names: list[str] = []
    for folder, _, files in os.walk(root):
        relative = os.path.relpath(folder, root).replace(os.sep, "/")
        names.extend(name if relative == "." else f"{relative}/{name}" for name in files if name.endswith(suffix))
    for name in sorted(names):
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        with open(os.path.join(root, name), "rb") as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:16]
