"""CUTLASS tactic knowledge (rules/kb/cutlass.toml): the vocabulary generator lists are read with,
element sizes, block scale factors and stage policies."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from archlint.knowledge.resources import load_toml

__all__ = ["Element", "BlockScale", "StagePolicy", "Probe", "Launcher", "CxxTiles", "CutlassKnowledge", "load_cutlass"]


@dataclass(frozen=True)
class Element:
    name: str
    bits: int
    source: str
    cuda: str = ""  # the C++ type a generator instantiates it as


@dataclass(frozen=True)
class BlockScale:
    operands: tuple[str, str]  # element names (activation, weight)
    sf: str
    sf_bits: int
    vector: int
    min_cc: int
    source: str
    mx: bool = False


@dataclass(frozen=True)
class StagePolicy:
    name: str
    min_stages: int
    source: str


@dataclass(frozen=True)
class Probe:
    """How the compile probe measures a launcher's tactics: after the statement `after` (a regex)
    a `Show<size>` is declared; each tactic is one `instantiate` line (`str.format` fields: arch,
    act, weight, output, fusion, m, n, k, cluster_m/n/k, mx, swap), inside `prefix` ... `suffix`."""

    after: str
    size: str
    instantiate: str
    prefix: str = ""
    suffix: str = ""
    output: str = ""
    fusions: tuple[tuple[str, str], ...] = ()
    file: str = ""  # the file holding `after`, where it is not the launcher itself (a header the template includes)


@dataclass(frozen=True)
class Launcher:
    names: tuple[str, ...]
    archs: tuple[int, ...]  # the generator archs whose instantiations include it
    stage_policy: str
    source: str
    runtime_filter: str = ""  # where it drops a tactic over the device's opt-in limit at run time
    probe: Probe | None = None
    elements: tuple[str, ...] = ()  # (A, B) element names where the launcher fixes them, not the generator
    scale: BlockScale | None = None  # the launcher's own block scaling, where it fixes it
    swaps: tuple[str, ...] = ()  # the swap_ab values its template instantiates every tile with ('False', 'True')


@dataclass(frozen=True)
class CxxTiles:
    """How tiles written in C++ are read and measured: the kernel alias (a regex, group 1 its name),
    the architecture tag, what a CTA tile extent is at least, the alias names that hold no CTA tile,
    the Show's size and tile expressions, the template loops by role ('m', 'n', 'k') and the values
    a JIT renders each kernel template with (template file name -> variable -> values)."""

    kernel_alias: str = ""
    arch_tag: str = ""
    min_extent: int = 16
    not_tile: str = ""
    show_size: str = ""
    show_tile: str = ""
    loops: tuple[tuple[str, str], ...] = ()  # (loop variable, role)
    renders: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()

    def loop_role(self, name: str) -> str:
        return dict(self.loops).get(name, "")

    def render_values(self, template: str) -> dict[str, tuple[str, ...]] | None:
        for name, values in self.renders:
            if template == name or template.endswith("/" + name):
                return dict(values)
        return None


@dataclass(frozen=True)
class CutlassKnowledge:
    tile_lists: frozenset[str]
    axes: dict[str, str]  # a list or loop variable name -> its role
    arch_names: frozenset[str]
    stage_names: frozenset[str]
    auto_stages: int
    combinations_limit: int
    launchers: tuple[Launcher, ...]
    policies: dict[str, StagePolicy]
    elements: dict[str, Element]  # every spelling -> the element
    block_scales: tuple[BlockScale, ...]
    cxx: CxxTiles = CxxTiles()

    def element(self, spelling: str) -> Element | None:
        spelling = spelling.strip()
        return self.elements.get(spelling) or self.elements.get(spelling.split("::")[-1])

    def block_scale(self, a: Element, b: Element, cc: int) -> BlockScale | None:
        for row in self.block_scales:
            if row.operands in ((a.name, b.name), (b.name, a.name)) and cc >= row.min_cc:
                return row
        return None

    def launcher_for(self, text: str, arch: int | None) -> Launcher | None:
        """The launcher a string names, for the generator's arch (None: a generator with no arch
        of its own, which takes the launcher's)."""
        for launcher in self.launchers:
            if any(name in text for name in launcher.names) and (arch is None or arch in launcher.archs):
                return launcher
        return None

    def markers(self) -> tuple[bytes, ...]:
        """Bytes a Python file spells when it can hold a tile list."""
        return tuple(sorted(name.encode() for name in self.tile_lists))


@lru_cache(maxsize=1)
def load_cutlass() -> CutlassKnowledge:
    data = load_toml("kb/cutlass.toml")
    generator = data.get("generator", {})
    elements: dict[str, Element] = {}
    for row in data.get("element", []):
        element = Element(row["name"], int(row["bits"]), row["source"], row.get("cuda", ""))
        for spelling in (row["name"], *row.get("names", ())):
            elements.setdefault(spelling, element)
    return CutlassKnowledge(
        tile_lists=frozenset(name for row in data.get("tile_list", []) for name in row["names"]),
        axes={name: row["role"] for row in data.get("axis", []) for name in row["names"]},
        arch_names=frozenset(generator.get("arch_names", ())),
        stage_names=frozenset(generator.get("stage_names", ())),
        auto_stages=int(generator.get("auto_stages", 0)),
        combinations_limit=int(generator.get("combinations_limit", 4096)),
        launchers=tuple(Launcher(tuple(row["names"]), tuple(int(a) for a in row["archs"]), row["stage_policy"],
                                 row["source"], row.get("runtime_filter", ""), _probe(row), tuple(row.get("elements", ())),
                                 _scale(row), tuple(row.get("swaps", ()))) for row in data.get("launcher", [])),
        policies={row["name"]: StagePolicy(row["name"], int(row["min_stages"]), row["source"])
                  for row in data.get("stage_policy", [])},
        elements=elements,
        block_scales=tuple(BlockScale((row["operands"][0], row["operands"][1]), row["sf"], int(row["sf_bits"]),
                                      int(row["vector"]), int(row["min_cc"]), row["source"], bool(row.get("mx", False)))
                           for row in data.get("block_scale", [])),
        cxx=_cxx(data),
    )


def _cxx(data: dict) -> CxxTiles:
    row = data.get("cxx", {})
    if not row:
        return CxxTiles()
    return CxxTiles(row["kernel_alias"], row.get("arch_tag", ""), int(row.get("min_extent", 16)), row.get("not_tile", ""),
                    row["show_size"], row["show_tile"],
                    tuple((name, loop["role"]) for loop in data.get("template_loop", []) for name in loop["names"]),
                    tuple((render["template"], tuple((k, tuple(v)) for k, v in sorted(render["values"].items())))
                          for render in data.get("template_render", [])))


def _probe(row: dict) -> Probe | None:
    if "instantiate" not in row:
        return None
    return Probe(row["probe_after"], row["probe_size"], row["instantiate"], row.get("probe_prefix", ""),
                 row.get("probe_suffix", ""), row.get("probe_output", ""), tuple(sorted(row.get("fusions", {}).items())),
                 row.get("probe_file", ""))


def _scale(row: dict) -> BlockScale | None:
    scale = row.get("scale")
    if not scale:
        return None
    operands = tuple(row.get("elements", ("", "")))
    return BlockScale((operands[0], operands[-1]), scale["sf"], int(scale["sf_bits"]), int(scale["vector"]), 0, row["source"])
