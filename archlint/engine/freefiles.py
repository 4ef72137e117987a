"""The CUDA files no gate builds: outside the include closure of every gate's units. The file rules
check them as in a scan without gates, every scan target building them (`Context.free`); with gates
they read in full only the files whose directives-only facts say a target can get a finding there.

A file read for its directives only carries `RuleSites` (extract.cuda.screen): whether it defines a
kernel, its arch-sensitive constructs and constant shared-memory requests, each with its region.
Each test below is what the file rule itself asks of the full facts, so reading no other file in
full changes no report (tests/test_demand.py):

- AL201: a construct some scan target lacks, under conditions that hold for that target;
- AL202: a kernel, and a condition false for some scan target and not for another (a kernel empty
  on some targets but not all has one; its body lines and its own region are the file's);
- AL204: a constant request over some target's limit, under conditions that may hold for it.

AL203 reads conditions only: the directives suffice.
"""

from __future__ import annotations

from collections.abc import Iterable

from archlint.judge.analysis import HOST_SMEM_KINDS, Judging, TargetView, smem_limit
from archlint.knowledge.arch import Target
from archlint.model.cuda import CudaFacts, RuleSites


def free_files(cuda_paths: Iterable[str], reached: frozenset[str]) -> frozenset[str]:
    """The CUDA files outside every gate's units' include closure (`reached`)."""
    return frozenset(path for path in cuda_paths if path not in reached)


def worth_reading(judging: Judging, targets: tuple[Target, ...], free: frozenset[str]) -> frozenset[str]:
    """The free files, read for their directives, where a file rule can report something for a scan
    target once they are read in full."""
    views = [judging.view(target) for target in targets]
    wanted = set()
    for path in free:
        facts = judging.index.files.get(path)
        if facts is not None and facts.rule_sites is not None and _can_report(facts, facts.rule_sites, views):
            wanted.add(path)
    return frozenset(wanted)


def _can_report(facts: CudaFacts, sites: RuleSites, views: list[TargetView]) -> bool:
    return _unguarded(facts.path, sites, views) or _over_budget(facts.path, sites, views) or (
        sites.kernels and _arch_dependent(facts, views))


def _unguarded(path: str, sites: RuleSites, views: list[TargetView]) -> bool:
    """AL201: some construct compiled for a target that lacks it."""
    for kind, name, region in sites.constructs:
        requirement = views[0].kb.requirement(kind, name) if views else None
        if requirement is not None and any(not requirement.supports(view.target) and view.truth(path, region) == 1
                                           for view in views):
            return True
    return False


def _over_budget(path: str, sites: RuleSites, views: list[TargetView]) -> bool:
    """AL204: some constant request above a target's limit, where it may be compiled."""
    for request in sites.smem:
        host = request.kind in HOST_SMEM_KINDS
        if any(request.nbytes is not None and request.nbytes > smem_limit(view.kb, view.target, request)
               and view.truth(path, request.region, host=host) != 0 for view in views):
            return True
    return False


def _arch_dependent(facts: CudaFacts, views: list[TargetView]) -> bool:
    """AL202: some condition of the file is false for one target and not for another."""
    for region in range(len(facts.regions)):
        if len({view.truth(facts.path, region) == 0 for view in views}) > 1:
            return True
    return False
