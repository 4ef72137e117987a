"""Project configuration: `[tool.archlint]` in pyproject.toml, or top-level keys in archlint.toml.

Found by walking up from the scan root; archlint.toml wins over pyproject.toml in the same
folder, and a pyproject.toml without `[tool.archlint]` is passed over. Command-line flags
override what the file says.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from archlint.knowledge.arch import TargetError, parse_target, parse_toolkit
from archlint.knowledge.rules import effective_levels, load_rules, resolve_all
from archlint.model.findings import Level
from archlint.model.scan import ScanOptions
from archlint.postprocess.apply import PostprocessSettings

KNOWN_KEYS = (
    "targets",
    "exclude",
    "include-dirs",
    "select",
    "ignore",
    "per-file-ignores",
    "fail-on",
    "levels",
    "max-file-bytes",
    "toolkit",
)
LEVEL_NAMES = tuple(level.value for level in Level)


class ConfigError(ValueError):
    """A configuration file archlint cannot use; the message names the file and the key."""


@dataclass(frozen=True)
class Config:
    path: str = ""  # the file it came from; "" when none was found
    targets: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()  # resolved against the config file's folder
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    fail_on: str | None = None
    levels: tuple[tuple[str, str], ...] = ()  # (id or name, level), as written
    max_file_bytes: int | None = None
    toolkit: str = ""  # the CUDA toolkit the project builds with ('12.8'); '' = the newest archlint knows


def find_config(start: str | Path) -> Path | None:
    """The nearest archlint.toml, or pyproject.toml with [tool.archlint], at or above `start`."""
    here = Path(start).resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "archlint.toml"
        if candidate.is_file():
            return candidate
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and "archlint" in _read(candidate).get("tool", {}):
            return candidate
    return None


def load_config(path: str | Path) -> Config:
    """A config file of either shape, whatever its name: the `[tool.archlint]` table when it has
    one, else its top-level keys (archlint.toml's shape); a pyproject.toml without the table is empty."""
    path = Path(path)
    return _parse(_archlint_table(_read(path), path), path)


def _archlint_table(data: dict, path: Path) -> Mapping:
    tool = data.get("tool")
    if isinstance(tool, dict) and "archlint" in tool:
        table = tool["archlint"]
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: `tool.archlint` must be a table")
        return table
    if path.name == "pyproject.toml":
        return {}
    if isinstance(tool, dict):
        raise ConfigError(f"{path}: has a [tool] table but no [tool.archlint]; nothing in it is archlint's")
    return data


def discover_config(start: str | Path) -> Config:
    found = find_config(start)
    return load_config(found) if found else Config()


def _read(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _parse(table: Mapping, path: Path) -> Config:
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        known = ", ".join(KNOWN_KEYS)
        raise ConfigError(f"{path}: unknown key `{unknown[0]}` in archlint config (known: {known})")
    base = path.parent
    return Config(
        path=str(path),
        targets=_strings(table, "targets", path),
        exclude=_strings(table, "exclude", path),
        include_dirs=tuple(str((base / d).resolve()) for d in _strings(table, "include-dirs", path)),
        select=_strings(table, "select", path),
        ignore=_strings(table, "ignore", path),
        per_file_ignores=_per_file_ignores(table.get("per-file-ignores", {}), path),
        fail_on=_level(table.get("fail-on"), "fail-on", path),
        levels=_levels(table.get("levels", {}), path),
        max_file_bytes=_positive_int(table.get("max-file-bytes"), path),
        toolkit=_toolkit(table.get("toolkit"), path),
    )


def _toolkit(value: object, path: Path) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConfigError(f"{path}: `toolkit` must be a string such as \"12.8\"")
    _check_toolkit(value, str(path))
    return value


def _strings(table: Mapping, key: str, path: Path) -> tuple[str, ...]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: `{key}` must be a list of strings")
    return tuple(value)


def _per_file_ignores(value: object, path: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: `per-file-ignores` must be a table of glob = [rule ids]")
    return tuple((glob, _strings(value, glob, path)) for glob in sorted(value))


def _level(value: object, key: str, path: Path) -> str | None:
    if value is None:
        return None
    if value not in LEVEL_NAMES:
        raise ConfigError(f"{path}: `{key}` must be one of {', '.join(LEVEL_NAMES)}, not {value!r}")
    return str(value)


def _levels(value: object, path: Path) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: `levels` must be a table of rule = level")
    levels = []
    for rule, level in sorted(value.items()):
        checked = _level(level, f"levels.{rule}", path)
        if checked is not None:  # TOML has no null: a level is always given
            levels.append((rule, checked))
    return tuple(levels)


def _positive_int(value: object, path: Path) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{path}: `max-file-bytes` must be a positive integer")
    return value


# ---------------------------------------------------------------- settings: config + flags


@dataclass(frozen=True)
class Settings:
    """The config file merged with command-line flags, rule names resolved to ids."""

    targets: tuple[str, ...]
    exclude: tuple[str, ...]
    include_dirs: tuple[str, ...]
    select: tuple[str, ...]  # resolved ids; empty = all
    ignore: tuple[str, ...]
    active: frozenset[str]  # rules that run: select (or all) minus ignore
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...]
    fail_on: Level
    levels: Mapping[str, Level]
    max_file_bytes: int
    toolkit: str = ""

    def scan_options(
        self, paths: tuple[str, ...], *, jobs: int = 0, use_cache: bool = True, report_paths: tuple[str, ...] = ()
    ) -> ScanOptions:
        """What the engine is asked for: these paths, with the targets, folders, rules and limits set here."""
        return ScanOptions(
            paths=paths,
            targets=self.targets,
            jobs=jobs,
            use_cache=use_cache,
            include_dirs=self.include_dirs,
            exclude=self.exclude,
            select=self.select,
            ignore=self.ignore,
            report_paths=report_paths,
            max_file_bytes=self.max_file_bytes,
            toolkit=self.toolkit,
        )

    def postprocess_settings(
        self,
        *,
        no_suppress: bool = False,
        show_suppressed: bool = False,
        report_paths: tuple[str, ...] = (),
        baseline: Mapping[str, int] | None = None,
    ) -> PostprocessSettings:
        """What post-processing needs from here (rules, levels, per-file ignores), with the front end's own choices."""
        return PostprocessSettings(
            active=self.active,
            levels=self.levels,
            per_file_ignores=self.per_file_ignores,
            no_suppress=no_suppress,
            show_suppressed=show_suppressed,
            report_paths=report_paths,
            baseline=baseline,
        )


def read_settings(
    start: str | Path,
    config_file: str | Path | None = None,
    *,
    targets: tuple[str, ...] = (),
    include_dirs: tuple[str, ...] = (),
    select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
    fail_on: str | None = None,
    toolkit: str = "",
) -> Settings:
    """The config file (`config_file`, else the nearest one at or above `start`) merged with the flags.

    Every front end reads its settings here, so `scan`, `runtime` and `graph` see the same config."""
    config = load_config(config_file) if config_file else discover_config(start)
    return merge_settings(
        config, targets=targets, include_dirs=include_dirs, select=select, ignore=ignore, fail_on=fail_on,
        toolkit=toolkit,
    )


def merge_settings(
    config: Config,
    *,
    targets: tuple[str, ...] = (),
    include_dirs: tuple[str, ...] = (),
    select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
    fail_on: str | None = None,
    rules: Mapping | None = None,
    toolkit: str = "",
) -> Settings:
    """Flags override the file key by key. Raises ConfigError naming an unknown rule or target."""
    rules = load_rules() if rules is None else rules
    where = config.path or "command line"
    select_ids = _resolve(resolve_all, select or config.select, rules, f"{where}: select")
    ignore_ids = _resolve(resolve_all, ignore or config.ignore, rules, f"{where}: ignore")
    per_file = tuple(
        (glob, frozenset(_resolve(resolve_all, ids, rules, f"{config.path}: per-file-ignores.{glob}")))
        for glob, ids in config.per_file_ignores
    )
    try:
        levels = effective_levels(dict(config.levels), rules)
    except KeyError as error:
        raise ConfigError(f"{config.path}: levels: unknown rule {error.args[0]!r}") from None
    chosen = targets or config.targets
    _check_targets(chosen, where)
    if toolkit:
        _check_toolkit(toolkit, where)
    return Settings(
        targets=chosen,
        exclude=config.exclude,
        include_dirs=include_dirs or config.include_dirs,
        select=select_ids,
        ignore=ignore_ids,
        active=frozenset(select_ids or rules) - frozenset(ignore_ids),
        per_file_ignores=per_file,
        fail_on=Level(fail_on or config.fail_on or "warning"),
        levels=levels,
        max_file_bytes=config.max_file_bytes or 4 * 1024 * 1024,
        toolkit=toolkit or config.toolkit,
    )


def _resolve(resolve_all, ids: tuple[str, ...], rules: Mapping, where: str) -> tuple[str, ...]:
    try:
        return resolve_all(ids, rules)
    except KeyError as error:
        raise ConfigError(f"{where}: unknown rule {error.args[0]!r} (see `archlint rules`)") from None


def _check_toolkit(toolkit: str, where: str) -> None:
    try:
        parse_toolkit(toolkit)
    except TargetError as error:
        raise ConfigError(f"{where}: {error}") from None


def _check_targets(targets: tuple[str, ...], where: str) -> None:
    for target in targets:
        try:
            parse_target(target)
        except TargetError as error:
            raise ConfigError(f"{where}: {error}") from None
