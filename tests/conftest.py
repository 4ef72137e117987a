"""Shared pytest options and helpers."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import archlint.engine.pipeline as pipeline


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-snapshots", action="store_true", help="rewrite fixtures/snapshots from the current output")


def settle(path: Path, age: float = 3600) -> None:
    """Back-date a file `age` seconds, past the racy window: its hash and the scan's result are stored."""
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))


def settled_copy(source: Path, root: Path) -> Path:
    """A copy of the folder `source` at `root`, every file back-dated an hour (settle)."""
    shutil.copytree(source, root)
    for path in [root, *root.rglob("*")]:
        settle(path)
    return root


@contextlib.contextmanager
def inside_fixture(folder: Path) -> Iterator[None]:
    """Run with `folder` as the working directory and git kept from seeing this checkout above it:
    archlint then reports paths from the fixture's own folder, as in a repository of its own."""
    previous, ceiling = Path.cwd(), os.environ.get("GIT_CEILING_DIRECTORIES")
    os.chdir(folder)
    os.environ["GIT_CEILING_DIRECTORIES"] = str(Path(folder).resolve().parent)
    try:
        yield
    finally:
        os.chdir(previous)
        if ceiling is None:
            os.environ.pop("GIT_CEILING_DIRECTORIES", None)
        else:
            os.environ["GIT_CEILING_DIRECTORIES"] = ceiling


@pytest.fixture
def full_scans(monkeypatch):
    """Counts full scans; the store and the partial re-scan are what is under test."""
    calls = []
    real = pipeline._full_scan

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(pipeline, "_full_scan", counted)
    return calls
