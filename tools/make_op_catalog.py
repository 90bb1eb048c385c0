"""Writes irscatter/ops/catalog.py: which module registers each op, so that a layer's op is
imported when a model first names it rather than every op at start-up.

Run it after adding, moving or removing an op: `python tools/make_op_catalog.py`.
tests/test_registry.py fails while the catalog and the registrations disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from irscatter.ops import catalog, registry  # noqa: E402

HEADER = '''"""Which module registers each op: `registry` imports a module when a layer first names one of
its ops, so that start-up does not import the whole op library. Written by
tools/make_op_catalog.py; tests/test_registry.py holds it to what the modules register.
"""

# The op families: the subpackages of irscatter.ops that hold ops (`registry.load_all` imports
# every module of them).
FAMILIES = (
{families})

# (domain in lower case, type in lower case) -> the modules that register versions of it.
MODULES: dict[tuple[str, str], tuple[str, ...]] = {{
{modules}}}

# The custom-domain ops (domain as registered, type, version), declared before their modules
# are imported, so that a model's version tags resolve to the right domain.
CUSTOM: tuple[tuple[str, str, int], ...] = (
{custom})
'''


def render() -> str:
    registry.load_all()
    modules: dict[tuple[str, str], set[str]] = {}
    custom = []
    for cls in registry.supported():
        key = (cls.domain.strip().lower(), cls.type_name.lower())
        modules.setdefault(key, set()).add(cls.__module__)
        if key[0] != "opset":
            custom.append((cls.domain, cls.type_name, cls.version))
    module_lines = "".join(f"    {key!r}: {tuple(sorted(names))!r},\n" for key, names in sorted(modules.items()))
    custom_lines = "".join(f"    {entry!r},\n" for entry in sorted(custom))
    families = "".join(f"    {name!r},\n" for name in catalog.FAMILIES)
    return HEADER.format(families=families, modules=module_lines, custom=custom_lines)


if __name__ == "__main__":
    target = ROOT / "irscatter" / "ops" / "catalog.py"
    target.write_text(render())
    print(f"wrote {target.relative_to(ROOT)}")
