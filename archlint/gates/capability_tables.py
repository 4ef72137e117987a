"""Attribute tables: the function a module-level dict names for an attribute.

`get_platform().is_sm100` reads, through a table such as `_PLATFORM_PROBES = {"is_sm100":
"is_sm100_supported", ...}`, as the call of the function the table names. Finding that function
searches the index's modules, not values, so it is kept apart from the evaluator that asks for it.
"""

from __future__ import annotations


def table_function(index, tables: tuple[str, ...], name: str) -> tuple[str, str] | None:
    """(module, name) of the function a module-level dict literal named in `tables` maps `name` to
    (`_PLATFORM_PROBES = {"is_sm100": "is_sm100_supported", ...}`): a module-level def or binding of
    that name, in a module the table's module imports when several modules define one."""
    def wanted(targets: tuple[str, ...], function: str) -> bool:
        return not function and not set(targets).isdisjoint(tables)

    for module in index.spelling(set(tables)):
        facts = index.modules.get(module)
        for assign in facts.assigns.having(wanted) if facts is not None else ():
            if assign.value.kind != "dict":
                continue
            value = next((kw.args[0] for kw in assign.value.args if kw.kind == "kw" and kw.text == name), None)
            if value is not None and value.kind == "str":
                return _function_named(index, facts, value.text)
    return None


def _function_named(index, facts, name: str) -> tuple[str, str] | None:
    found = [module for module in index.spelling({name}) if _defines(index.modules[module], name)]
    if len(found) > 1:
        imported = {imp.module for imp in facts.imports} | {
            f"{imp.module}.{n}" if imp.module else n for imp in facts.imports for n in imp.names}
        found = [module for module in found if module in imported]
    return (found[0], name) if len(found) == 1 else None


def _defines(facts, name: str) -> bool:
    return (any(fn.qualname == name for fn in facts.functions)
            or any(not function and name in targets for targets, function in zip(facts.assigns.targets, facts.assigns.functions)))
