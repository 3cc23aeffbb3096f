"""Guards on the shape of the code: imports point one way, and no module grows past 400 lines.

The import graph is read from the sources with :mod:`ast` (nothing is imported), over every
non-test module of the three source roots (``busprobe`` from ``host/``, ``busprobe.gateware``,
``busprobe.sim``). It counts module-level *and* function-level imports: a deferred import hides a
cycle from the interpreter, not from the design. Imports under ``if TYPE_CHECKING:`` never run and
are skipped. Importing ``a.b.c`` also runs the ``__init__`` of ``a.b`` (unless the importer already
lives in ``a.b``), so that is an edge too: a package whose ``__init__`` pulls in half the tree is a
dependency of everything that imports any one of its modules.
"""

import ast
from pathlib import Path

import busprobe
import busprobe.gateware
import busprobe.sim

MAX_LINES = 400
PACKAGE = Path(busprobe.__file__).resolve().parent
SOURCE_ROOTS = [PACKAGE, Path(busprobe.gateware.__file__).resolve().parent,
                Path(busprobe.sim.__file__).resolve().parent]


def _is_test(path: Path, root: Path) -> bool:
    parts = path.relative_to(root).parts
    return "tests" in parts or path.name == "conftest.py"


#: The layers, bottom first (docs/DESIGN.md §2.1): the contract and the tool locator, the
#: gateware, the host tool, the bitstream flow and the simulation.
CONTRACT = ("busprobe.protocol", "busprobe.toolchain")
GATEWARE = "busprobe.gateware"
SIM = "busprobe.sim"
BUILD_FLOW = "busprobe.bitstream"
COMMANDS = "busprobe.cli"


def _modules() -> dict[str, Path]:
    """Dotted name -> file of every non-test module of the three source roots."""
    out = {}
    for root, package in zip(SOURCE_ROOTS, ("busprobe", GATEWARE, SIM), strict=True):
        for path in sorted(root.rglob("*.py")):
            if _is_test(path, root):
                continue
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join((package, *parts))
            if root == PACKAGE and name.startswith((GATEWARE, SIM)):
                continue  # mapped in from the other roots by setup.py
            out[name] = path
    return out


def _within(name: str, prefixes: str | tuple[str, ...]) -> bool:
    prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
    return any(name == p or name.startswith(p + ".") for p in prefixes)


class _Imports(ast.NodeVisitor):
    """Every imported dotted name, with ``from X import y`` giving both ``X`` and ``X.y``."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.package = module if is_package else module.rpartition(".")[0]
        self.names: list[str] = []

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.names += [alias.name for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            base = base[:len(base) - (node.level - 1)]
            source = ".".join([*base, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        self.names.append(source)
        self.names += [f"{source}.{alias.name}" for alias in node.names if alias.name != "*"]


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of the package that importing it (or calling into it) loads."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        visitor = _Imports(name, path.name == "__init__.py")
        visitor.visit(ast.parse(path.read_text(), str(path)))
        own = {name, *_ancestors(name)}
        for target in visitor.names:
            while target and target not in modules:  # ``from x import SomeClass`` -> x
                target = target.rpartition(".")[0]
            if not target:
                continue
            for dep in (*_ancestors(target), target):
                if dep in modules and dep not in own:
                    graph[name].add(dep)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (first module repeated at the end) per strongly connected group of modules.

    Breaking that cycle may leave a smaller one in the same group: :func:`tangles` lists them all.
    """
    return [_cycle_in(group, graph) for group in tangles(graph)]


def tangles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (each contains a cycle)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(graph[node]):
            if dep not in index:
                connect(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return groups


def _cycle_in(group: set[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest path from the group's first module back to itself, inside the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for dep in sorted(graph[node] & group):
                if dep == start:
                    return [*paths[node], start]
                if dep not in paths:
                    paths[dep] = [*paths[node], dep]
                    nxt.append(dep)
        frontier = nxt
    raise AssertionError(f"{sorted(group)} is not strongly connected")


def test_graph_reader_sees_deferred_relative_and_package_imports():
    visitor = _Imports("busprobe.topology.pci", is_package=False)
    visitor.visit(ast.parse(
        "from ..protocol.pci_config import BDF_RE\n"
        "def f():\n    from . import hop\n"
        "if TYPE_CHECKING:\n    from busprobe.cli import main\n"))
    assert visitor.names == ["busprobe.protocol.pci_config", "busprobe.protocol.pci_config.BDF_RE",
                             "busprobe.topology", "busprobe.topology.hop"]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_no_import_cycle_in_host_gateware_or_sim():
    graph = import_graph()
    report = [f"  {' -> '.join(_cycle_in(group, graph))}"
              + (f"\n    (same tangle: {', '.join(sorted(group))})" if len(group) > 2 else "")
              for group in tangles(graph)]
    assert not report, "import cycles in busprobe (module-level or deferred):\n" + "\n".join(
        report)


def _edges(graph: dict[str, set[str]], source: str | tuple[str, ...],
           allowed: str | tuple[str, ...]) -> set[str]:
    return {f"{name} -> {dep}" for name, deps in graph.items() if _within(name, source)
            for dep in deps if not _within(dep, allowed)}


def test_the_contract_and_the_tool_locator_import_nothing_else_of_busprobe():
    outside = _edges(import_graph(), CONTRACT, CONTRACT)
    assert not outside, "the contract is the bottom layer:\n  " + "\n  ".join(sorted(outside))


def test_gateware_builds_only_on_the_contract():
    outside = _edges(import_graph(), GATEWARE, (*CONTRACT, GATEWARE))
    assert not outside, "gateware imports beyond the contract:\n  " + "\n  ".join(
        sorted(outside))


def test_the_host_tool_reaches_the_gateware_and_the_simulation_only_from_its_commands():
    graph = import_graph()
    host = [name for name in graph if not _within(name, (GATEWARE, SIM, COMMANDS))]
    wrong = {f"{name} -> {dep}" for name in host for dep in graph[name]
             if _within(dep, SIM) or (_within(dep, GATEWARE) and not _within(name, BUILD_FLOW))}
    assert not wrong, "the host tool reaches up:\n  " + "\n  ".join(sorted(wrong))


#: What the simulation may import of the host tool besides the contract and the tool locator: the
#: seams it implements or runs behind, and nothing above them (no CLI, sweep, verdict, report,
#: fit or result file: the simulation is driven by the host tool, never the other way round).
#: A module here brings its packages' ``__init__`` along.
SIM_MAY_IMPORT = {
    "busprobe.transport": "the Transport interface and its errors: sim backends implement it",
    "busprobe.backends.usb": "UsbDeviceTransport, the board's driver the sim USB transports run",
    "busprobe.backends.usb.platform": "the USB seam a simulated platform implements",
    "busprobe.backends.usb.transfers": "the transfer queue's Transfer/Completion",
    "busprobe.backends.usb.plans": "the queued stream the simulated controller carries out",
    "busprobe.backends.usb.libusb": "the VM pass runs the real libusb backend in the guest",
    "busprobe.backends.pcie.dma_transport": "the PCIe transport the sim PCIe backend runs",
    "busprobe.backends.pcie.platform": "the PCIe seam a simulated platform implements",
    "busprobe.backends.pcie.descriptor_table": "the driver's descriptor table, which the cocotb "
                                               "DMA helper writes through (one table, not two)",
    "busprobe.backends.pcie.config": "the VM guest's checks run the real VFIO backend",
    "busprobe.backends.pcie.vfio": "the VM guest's checks run the real VFIO backend",
    "busprobe.targets": "target descriptions (the sim backends are rows' factories)",
    "busprobe.selectors": "selector syntax",
    "busprobe.buses": "the bus rows",
    "busprobe.model.usb2_hosts": "host-controller profiles the simulated controller follows",
    "busprobe.model.usb3_hosts": "host-controller profiles the simulated controller follows",
    "busprobe.bitstream": "netlists and firmware come from the build flow",
    "busprobe.build_cache": "the shared build cache",
    "busprobe.stdout_guard": "utilities below the CLI",
    "busprobe.os_errors": "utilities below the CLI",
    "busprobe.signals": "utilities below the CLI",
}


def sim_reaches_beyond_its_seams(graph: dict[str, set[str]]) -> set[str]:
    """Edges from the simulation to a host module neither the contract nor one of
    :data:`SIM_MAY_IMPORT` (nor a package holding one)."""
    allowed = (*CONTRACT, GATEWARE, SIM, *SIM_MAY_IMPORT)
    packages = {p for name in SIM_MAY_IMPORT for p in _ancestors(name)}
    return {edge for edge in _edges(graph, SIM, allowed) if edge.split(" -> ")[1] not in packages}


def test_the_simulation_imports_the_host_tool_only_through_its_seams():
    wrong = sim_reaches_beyond_its_seams(import_graph())
    assert not wrong, "the simulation reaches past the host's seams:\n  " + "\n  ".join(
        sorted(wrong))
    caught = sim_reaches_beyond_its_seams({"busprobe.sim.usb2.x": {
        "busprobe.cli", "busprobe.model", "busprobe.model.ceiling", "busprobe.transport"}})
    assert caught == {"busprobe.sim.usb2.x -> busprobe.cli",
                      "busprobe.sim.usb2.x -> busprobe.model.ceiling"}


def test_no_python_file_is_over_400_lines():
    long = sorted((len(path.read_text().splitlines()), str(path))
                  for root in SOURCE_ROOTS for path in root.rglob("*.py")
                  if len(path.read_text().splitlines()) > MAX_LINES)
    assert not long, f"files over {MAX_LINES} lines (split them):\n" + "\n".join(
        f"  {lines:5d}  {path}" for lines, path in long)
