"""The CUDA files no gate builds: outside the include closure of every gate's units. The file rules
check them (`Context.free`) for every scan target, where the file's own conditions select targets:
AL202 and AL203 are about such conditions, and AL201 and AL204 count only a construct or request
under a condition that depends on the target (`checks.context.selects_targets`; an unguarded one
may be built for the one target that has it, by a build archlint cannot read). A scan with gates
reads in full only the free files whose directives-only facts say a target can get a finding there.

A file read for its directives only carries `RuleSites` (extract.cuda.screen): whether it defines a
kernel, its arch-sensitive constructs and constant shared-memory requests, each with its region.
Each test below is what the file rule itself asks of the full facts, so reading no other file in
full changes no report (tests/test_demand.py):

- AL201: a construct under a condition that selects targets, some scan target lacking it while the
  condition holds for it;
- AL202: a kernel whose first line of code is compiled out for some scan target (a kernel empty
  there has every line of its body compiled out);
- AL204: a constant request under a condition that selects targets, over some scan target's limit
  where the condition may hold for it.

AL203 reads conditions only: the directives suffice.
"""

from __future__ import annotations

from collections.abc import Iterable

from archlint.checks.context import selects_targets
from archlint.judge.analysis import Judging, TargetView
from archlint.judge.smem import HOST_SMEM_KINDS, smem_limit
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
        if facts is not None and facts.rule_sites is not None and _can_report(judging, facts, facts.rule_sites, views):
            wanted.add(path)
    return frozenset(wanted)


def _can_report(judging: Judging, facts: CudaFacts, sites: RuleSites, views: list[TargetView]) -> bool:
    return _unguarded(judging, facts.path, sites, views) or _over_budget(judging, facts.path, sites, views) \
        or _emptied(facts, sites, views)


def _unguarded(judging: Judging, path: str, sites: RuleSites, views: list[TargetView]) -> bool:
    """AL201: some construct compiled for a target that lacks it."""
    for kind, name, region in sites.constructs:
        requirement = judging.kb.requirement(kind, name)
        if requirement is not None and any(not requirement.supports(view.target) and view.truth(path, region) == 1
                                           for view in views) and selects_targets(judging, path, region):
            return True
    return False


def _over_budget(judging: Judging, path: str, sites: RuleSites, views: list[TargetView]) -> bool:
    """AL204: some constant request above a target's limit, where it may be compiled."""
    for request in sites.smem:
        host = request.kind in HOST_SMEM_KINDS
        if any(request.nbytes is not None and request.nbytes > smem_limit(view.kb, view.target, request)
               and view.truth(path, request.region, host=host) != 0 for view in views) \
                and selects_targets(judging, path, request.region):
            return True
    return False


def _emptied(facts: CudaFacts, sites: RuleSites, views: list[TargetView]) -> bool:
    """AL202: some kernel whose first line of code is compiled out for a target; where a kernel's
    body was not found lexically, some condition of the file false for one target and not another."""
    if any(view.truth(facts.path, region) == 0 for region in sites.kernels for view in views):
        return True
    return sites.unread_kernels and any(len({view.truth(facts.path, region) == 0 for view in views}) > 1
                                        for region in range(len(facts.regions)))
