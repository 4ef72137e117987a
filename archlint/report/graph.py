"""The gate → source → header → kernel → construct graph (networkx MultiDiGraph) and named queries.

Nodes are keyed `kind:path[:name]`; edges carry `kind` (guards, compiles, includes, contains,
calls, uses, calls-extension: a gate's code calling into a prebuilt module) and the line where the
relation is written. The graph is built from linked facts
and the gate verdicts; no rule logic lives here.
"""

from __future__ import annotations

import json
from typing import Iterable

import networkx as nx

from archlint.model.binary import BinaryFacts


def build_graph(linked, gate_filter: str = "") -> nx.MultiDiGraph:
    graph = nx.MultiDiGraph()
    ctx = linked.context
    files: set[str] = set()
    units = {memo.gate.id: memo.units for memo in linked.memos}
    for result in ctx.gate_results:
        gate = result.gate
        if gate_filter and gate_filter not in gate.text and gate_filter not in gate.function:
            continue
        gate_node = add_gate(graph, result)
        for source in result.sources:
            graph.add_edge(gate_node, file_node(graph, source), kind="compiles", line=gate.line)
            files.add(source)
        for call in units[gate.id].extensions if gate.id in units else ():
            for module in call.modules:
                graph.add_edge(gate_node, _module_node(graph, module), kind="calls-extension", line=gate.line, name=call.what)
    _add_cuda(graph, linked.index, ctx.kb, _closure(linked.index, files) if gate_filter else set(linked.index.files))
    return graph


def rebased(graph: nx.MultiDiGraph, prefix: str) -> nx.MultiDiGraph:
    """The graph with every file path `prefix/`-ed: paths from the repository root, as reports give them."""
    if not prefix:
        return graph

    def move(node: str) -> str:
        kind, _, rest = node.partition(":")
        return f"{kind}:{prefix}/{rest}" if kind in ("gate", "file", "function", "construct") else node

    moved = nx.relabel_nodes(graph, move, copy=True)
    for _, data in moved.nodes(data=True):
        if "path" in data:
            if data.get("label") == data["path"]:
                data["label"] = f"{prefix}/{data['label']}"
            data["path"] = f"{prefix}/{data['path']}"
    return moved


def add_gate(graph: nx.MultiDiGraph, result) -> str:
    gate = result.gate
    verdicts = {v.target: v.verdict.value for v in result.excluded}
    node = f"gate:{gate.path}:{gate.line}:{gate.col}"
    graph.add_node(node, kind="gate", label=gate.text, path=gate.path, line=gate.line,
                   admits=",".join(str(cc) for cc in gate.admits), verdicts=json.dumps(verdicts, sort_keys=True))
    return node


def file_node(graph: nx.MultiDiGraph, path: str) -> str:
    node = f"file:{path}"
    if node not in graph:
        graph.add_node(node, kind="source" if path.endswith((".cu", ".jinja")) else "header", label=path, path=path)
    return node


def _module_node(graph: nx.MultiDiGraph, module: BinaryFacts) -> str:
    """A prebuilt extension module, with the images it carries."""
    node = f"file:{module.path}"
    if node not in graph:
        graph.add_node(node, kind="extension", label=module.path, path=module.path,
                       images=",".join(item.image.name for item in module.images))
    return node


def _closure(index, sources: Iterable[str]) -> set[str]:
    seen, stack = set(), list(sources)
    while stack:
        path = stack.pop()
        if path in seen or path not in index.files:
            continue
        seen.add(path)
        stack.extend(r.target for r in index.resolved(path) if r.target)
    return seen


def _add_cuda(graph: nx.MultiDiGraph, index, kb, paths: set[str]) -> None:
    for path in sorted(paths):
        facts = index.files[path]
        node = file_node(graph, path)
        for resolved in index.resolved(path):
            if resolved.target in paths:
                graph.add_edge(node, file_node(graph, resolved.target), kind="includes", line=resolved.include.line)
        functions = {}
        for function in facts.functions:
            if function.kind == "host":
                continue
            fnode = f"function:{path}:{function.qualname}"
            functions[function.qualname] = fnode
            graph.add_node(fnode, kind="kernel" if function.kind == "global" else "device-function",
                           label=function.name, path=path, line=function.line)
            graph.add_edge(node, fnode, kind="contains", line=function.line)
        for construct in facts.constructs:
            requirement = kb.requirement(construct.kind, construct.name)
            if requirement is None:
                continue
            cnode = f"construct:{path}:{construct.line}:{construct.col}:{construct.name}"
            graph.add_node(cnode, kind="construct", label=construct.name, path=path, line=construct.line,
                           requirement=requirement.id)
            graph.add_edge(functions.get(construct.function, node), cnode, kind="uses", line=construct.line)
    _add_calls(graph, index, paths)


def _add_calls(graph: nx.MultiDiGraph, index, paths: set[str]) -> None:
    for path in sorted(paths):
        for function in index.files[path].functions:
            caller = f"function:{path}:{function.qualname}"
            if caller not in graph:
                continue
            for name, _region in function.calls:
                for callee_path, callee in index.functions_by_name.get(name, ()):
                    target = f"function:{callee_path}:{callee.qualname}"
                    if callee_path in paths and target in graph and target != caller:
                        graph.add_edge(caller, target, kind="calls", line=function.line)


# ------------------------------------------------------------------ queries


def guarded_constructs(graph: nx.MultiDiGraph, gate_node: str) -> list[str]:
    """Construct nodes reachable from a gate: what the gate guards, as a reachability query."""
    return sorted(n for n in nx.descendants(graph, gate_node) if graph.nodes[n].get("kind") == "construct")


def evidence_path(graph: nx.MultiDiGraph, gate_node: str, target: str) -> list[str]:
    """The shortest chain gate → source → header → function → construct."""
    return nx.shortest_path(graph, gate_node, target)


# ------------------------------------------------------------------ export


def export(graph: nx.MultiDiGraph, fmt: str) -> str:
    if fmt == "json":
        data = nx.node_link_data(graph, edges="edges")
        data["nodes"] = sorted(data["nodes"], key=lambda n: n["id"])
        data["edges"] = sorted(data["edges"], key=lambda e: (e["source"], e["target"], e.get("kind", ""), e.get("line", 0)))
        return json.dumps(data, indent=2, sort_keys=True) + "\n"
    if fmt == "graphml":
        return "\n".join(nx.generate_graphml(_sorted_copy(graph))) + "\n"
    if fmt == "dot":
        return _dot(graph)
    raise ValueError(f"unknown graph format {fmt!r}: use graphml, json or dot")


def _sorted_copy(graph: nx.MultiDiGraph) -> nx.MultiDiGraph:
    copy = nx.MultiDiGraph()
    for node in sorted(graph.nodes):
        copy.add_node(node, **graph.nodes[node])
    for source, target, data in sorted(graph.edges(data=True), key=lambda e: (e[0], e[1], e[2].get("kind", ""), e[2].get("line", 0))):
        copy.add_edge(source, target, **data)
    return copy


_SHAPES = {"gate": "diamond", "source": "box", "header": "note", "kernel": "ellipse", "device-function": "ellipse", "construct": "octagon"}


def _dot(graph: nx.MultiDiGraph) -> str:
    lines = ["digraph archlint {", "  rankdir=LR;"]
    for node in sorted(graph.nodes):
        data = graph.nodes[node]
        label = str(data.get("label", node)).replace('"', '\\"')[:80]
        lines.append(f'  "{node}" [label="{label}", shape={_SHAPES.get(data.get("kind"), "ellipse")}];')
    for source, target, data in sorted(graph.edges(data=True), key=lambda e: (e[0], e[1], e[2].get("kind", ""))):
        lines.append(f'  "{source}" -> "{target}" [label="{data.get("kind", "")}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"
