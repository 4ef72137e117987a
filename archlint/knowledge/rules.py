"""The rule table: rules/AL*.toml loaded into RuleInfo, id/name resolution, effective levels."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from archlint.knowledge.resources import load_toml, rules_dir
from archlint.model.findings import Level

DOCS_URL = "https://github.com/archlint/archlint/blob/main/rules/{id}.toml"
ID_RE = re.compile(r"^AL\d{3}$")
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
STATUSES = ("preview", "stable", "deprecated")
REQUIRED_HEADINGS = (
    "## What it does",
    "## Why is this bad?",
    "## Example",
    "## Use instead",
    "## References",
)


@dataclass(frozen=True)
class RuleInfo:
    id: str
    name: str
    severity: Level  # the default level, before config overrides
    confidence: str  # high | medium | low
    languages: tuple[str, ...]
    status: str
    since: str
    message: str  # template with {named} fields
    help: str
    tags: tuple[str, ...]
    description: str  # markdown with the REQUIRED_HEADINGS

    @property
    def url(self) -> str:
        return DOCS_URL.format(id=self.id)

    @property
    def summary(self) -> str:
        """The message template with its fields shown as <name>: a one-line description."""
        return _placeholder_text(self.message)

    def format_message(self, **fields: object) -> str:
        return self.message.format_map(_Defaulting(fields))


class _Defaulting(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _placeholder_text(template: str) -> str:
    parts = []
    for literal, field, _spec, _conv in string.Formatter().parse(template):
        parts.append(literal)
        if field is not None:
            parts.append(f"<{field}>")
    return "".join(parts)


@lru_cache(maxsize=1)
def load_rules() -> dict[str, RuleInfo]:
    """Every rule in rules/AL*.toml, keyed and ordered by id."""
    rules = {}
    for path in sorted(rules_dir().glob("AL*.toml")):
        info = _rule_from_toml(load_toml(path.name))
        rules[info.id] = info
    return rules


def _rule_from_toml(data: Mapping) -> RuleInfo:
    return RuleInfo(
        id=data["id"],
        name=data["name"],
        severity=Level(data["severity"]),
        confidence=data["confidence"],
        languages=tuple(data["languages"]),
        status=data["status"],
        since=data["since"],
        message=data["message"],
        help=data["help"],
        tags=tuple(data["tags"]),
        description=data["description"].strip() + "\n",
    )


@lru_cache(maxsize=1)
def retired_ids() -> dict[str, dict]:
    return {entry["id"]: entry for entry in load_toml("_retired.toml").get("retired", [])}


def resolve(id_or_name: str, rules: Mapping[str, RuleInfo] | None = None) -> str:
    """The rule id for an id ('AL101', any case) or a name ('policy-gate'). KeyError if unknown."""
    rules = load_rules() if rules is None else rules
    text = id_or_name.strip()
    if text.upper() in rules:
        return text.upper()
    for info in rules.values():
        if info.name == text.lower():
            return info.id
    raise KeyError(id_or_name)


def resolve_all(ids_or_names: Iterable[str], rules: Mapping[str, RuleInfo] | None = None) -> tuple[str, ...]:
    """Resolve several; a family prefix such as 'AL1' selects every rule whose id starts with it."""
    rules = load_rules() if rules is None else rules
    out: list[str] = []
    for text in ids_or_names:
        prefix = text.strip().upper()
        if re.fullmatch(r"AL\d{0,2}", prefix):
            matched = [rule_id for rule_id in rules if rule_id.startswith(prefix)]
            if not matched:
                raise KeyError(text)
            out.extend(matched)
        else:
            out.append(resolve(text, rules))
    return tuple(dict.fromkeys(out))


def effective_levels(
    overrides: Mapping[str, str] | None = None, rules: Mapping[str, RuleInfo] | None = None
) -> dict[str, Level]:
    """rule id -> level after `[tool.archlint.levels]` overrides (keys are ids or names)."""
    rules = load_rules() if rules is None else rules
    levels = {rule_id: info.severity for rule_id, info in rules.items()}
    for key, value in (overrides or {}).items():
        levels[resolve(key, rules)] = Level(value)
    return levels


def effective_level(rule_id: str, overrides: Mapping[str, str] | None = None) -> Level:
    return effective_levels(overrides)[resolve(rule_id)]
