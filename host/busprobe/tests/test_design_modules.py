"""docs/DESIGN.md §2.2 lists every module of the three source roots, and nothing that is gone.

The module table is the map a newcomer reads before opening a file; a module added without a row,
or a row whose module was removed or renamed, makes the map wrong. This reads the table's first
column and the tree (tests, ``conftest.py`` and package ``__init__`` files aside) and compares.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCE_ROOTS = ("host/busprobe", "gateware", "sim")
_ROW = re.compile(r"^\| `([^`]+\.py)` \|", re.M)


def _modules_in_tree() -> set[str]:
    found = set()
    for root in SOURCE_ROOTS:
        for path in (ROOT / root).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if ("tests" in rel.parts or path.name in ("conftest.py", "__init__.py")
                    or path.name.startswith("test_") or "__pycache__" in rel.parts):
                continue
            found.add(rel.as_posix())
    return found


def _modules_in_table() -> set[str]:
    design = (ROOT / "docs" / "DESIGN.md").read_text()
    section = design.split("### 2.2 Modules", 1)[1].split("\n### ", 1)[0]
    return set(_ROW.findall(section))


def test_design_module_table_lists_every_module_and_no_missing_one():
    tree, table = _modules_in_tree(), _modules_in_table()
    assert len(table) > 100, "docs/DESIGN.md §2.2 has no module table"
    assert not tree - table, f"modules without a row in docs/DESIGN.md §2.2: {sorted(tree - table)}"
    assert not table - tree, f"rows of docs/DESIGN.md §2.2 naming no module: {sorted(table - tree)}"
