"""Links as dict indexes or as a networkx graph: the cost of each on a real tree.

    python bench/link_graph.py [TREE] [--include-dir DIR ...]

Scans TREE (default: the FlashInfer 0.7.2.post1 wheel that bench/scan_bench.py unpacks) with the
facts cache, then, on the same linked facts, measures:
  - building link.cuda's CudaIndex (the dict adjacency that judge/ queries) against building a
    networkx MultiDiGraph holding the same include and call edges (calls link a function to the
    names it calls, and a name to the functions that define it, as the index does);
  - the memory each holds (tracemalloc, in a separate pass so timing is not skewed);
  - judge's hottest query, each unit's include closure for each target (include edges whose
    `#if` region is live), answered from each.
Figures are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections import deque
from pathlib import Path

import networkx as nx

from archlint.engine.linking import link
from archlint.engine.steps import relative_dirs
from archlint.judge.view import Judging, TargetView
from archlint.link.cuda import CudaIndex, build_index
from archlint.model.scan import ScanOptions

DEFAULT_TREE = Path("/tmp/wheels/fi-0.7.2.post1/flashinfer")


def to_graph(index: CudaIndex) -> nx.MultiDiGraph:
    """The include and call edges of the index as a networkx graph, edge data as judge would read it."""
    graph = nx.MultiDiGraph()
    for path, facts in index.files.items():
        graph.add_node(path, kind="file")
        for resolved in index.resolved(path):
            if resolved.target is not None:
                graph.add_edge(path, resolved.target, kind="includes", line=resolved.include.line,
                               region=resolved.include.region)
        for function in facts.functions:
            node = (path, function.qualname)
            graph.add_node(node, kind="function")
            graph.add_edge(path, node, kind="contains")
            graph.add_edge(("name", function.name), node, kind="names")
            for name, region in function.calls:
                # A call links to the name, not to every definition of it: the unit's closure decides
                # which definitions a name reaches, so resolving here would link every same-named
                # function of the tree to every caller.
                graph.add_edge(node, ("name", name), kind="calls", region=region)
    return graph


def closure_index(view: TargetView, source: str) -> int:
    return len(view.closure(source))


def closure_graph(view: TargetView, graph: nx.MultiDiGraph, source: str) -> int:
    """TargetView.closure, walking the networkx graph's include edges instead of the index."""
    seen, queue = {source}, deque([source])
    while queue:
        path = queue.popleft()
        for _, target, data in graph.out_edges(path, data=True):
            if data["kind"] != "includes" or target in seen:
                continue
            if view.truth(path, data["region"]) == 0 and view.truth(path, data["region"], host=True) == 0:
                continue
            seen.add(target)
            queue.append(target)
    return len(seen)


def timed(function, *args):
    start = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - start


def allocated(function, *args) -> int:
    gc.collect()
    tracemalloc.start()
    value = function(*args)
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del value
    return size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", nargs="?", default=str(DEFAULT_TREE))
    parser.add_argument("--include-dir", action="append", default=[])
    args = parser.parse_args(argv)
    linked = link(ScanOptions(paths=(args.tree,), include_dirs=tuple(args.include_dir)))
    cuda = [f.cuda for f in linked.facts if f.cuda is not None]
    dirs = relative_dirs(tuple(args.include_dir), linked.root)
    generated = dict(linked.pyindex.generated) if linked.pyindex is not None else {}
    index, t_index = timed(build_index, cuda, dirs, generated)
    graph, t_graph = timed(to_graph, index)
    print(f"files {len(index.files)}; graph nodes {graph.number_of_nodes()}, edges {graph.number_of_edges()}")
    print(f"build: CudaIndex {t_index:.2f} s; networkx graph from it {t_graph:.2f} s (x{t_graph / t_index:.1f})")
    m_index = allocated(build_index, cuda, dirs, generated)
    m_graph = allocated(to_graph, index)
    print(f"memory: CudaIndex {m_index / 2**20:.0f} MiB; networkx graph {m_graph / 2**20:.0f} MiB (x{m_graph / m_index:.1f})")
    sources = sorted({s for r in linked.context.gate_results for s in r.sources if s in index.files})
    judging = Judging(index, linked.context.kb)
    views = [judging.view(t) for t in linked.context.targets]
    pairs = [(v, s) for v in views for s in sources]
    a, t_dict = timed(lambda: [closure_index(v, s) for v, s in pairs])
    b, t_nx = timed(lambda: [closure_graph(v, graph, s) for v, s in pairs])
    assert a == b, "the two closures differ"
    print(f"unit closures ({len(pairs)} unit x target): dict {t_dict:.2f} s; networkx {t_nx:.2f} s (x{t_nx / t_dict:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
