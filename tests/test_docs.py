"""The README and the pages under docs/ stay true: every relative link reaches a file (and a
heading, where it names one), and the README's commands run as written (its Quickstart's run
is test_cli's; the debugging page's transcripts are test_extract's and test_compare's)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from helpers import cli

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\[[^\]]+\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation gone, spaces to hyphens."""
    return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", heading.strip().lower()))


def _anchors(page: Path) -> set[str]:
    return {_anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", page.read_text(), re.M)}


def test_the_readme_is_short_and_links_every_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 120
    linked = {Path(target.partition("#")[0]).name for target in _LINK.findall(readme)}
    assert {p.name for p in PAGES[1:]} <= linked


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    broken = []
    for target in _LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(target)
    assert broken == []


_FILE = re.compile(r"\.(xml|bin|npz|npy|rst|md)$")


def _runnable_commands():
    """`irscatter` commands of shell blocks, and `$ irscatter` lines of transcripts, whose input
    files are all in the repository (synopses with MODEL.xml or [--flag] are left out)."""
    for page in PAGES[:1]:
        text = page.read_text()
        lines = [line for block in re.findall(r"```sh\n(.*?)```", text, re.S) for line in block.splitlines()]
        lines += [m.group(1) for m in re.finditer(r"^\$ (irscatter .*)$", text, re.M)]
        for line in lines:
            command = line.split(" #")[0].split("&&")[-1].strip()
            if not command.startswith("irscatter "):
                continue
            words = shlex.split(command)[1:]
            if any(w.isupper() or "..." in w or w.startswith("[") for w in words):
                continue
            named = [w.partition("=")[2] or w for w in words if _FILE.search(w)]
            inputs = [w for w in named if not _written(words, w)]
            if all((ROOT / f).exists() for f in inputs) and words[0] != "run":
                yield pytest.param(words, id=f"{page.name}: {' '.join(words[:3])}")


def _written(words: list[str], name: str) -> bool:
    i = words.index(name) if name in words else -1
    return i > 0 and words[i - 1] in ("-o", "--output", "--report", "--dump")


@pytest.mark.parametrize("args", list(_runnable_commands()))
def test_commands_of_the_pages_run_as_written(args, tmp_path):
    """Run from a scratch folder (what they write lands there), the repository's files named
    absolutely. Exit 1 is a finding (a transcript of compare finding a divergence shows one)."""
    words = [str(ROOT / w) if (ROOT / w).exists() and "/" in w else w for w in args]
    for i, w in enumerate(words[:-1]):
        if w in ("-o", "--output") and "/" in words[i + 1]:
            (tmp_path / words[i + 1]).parent.mkdir(parents=True, exist_ok=True)
    proc = cli(*words, *(["--quiet"] if words[0] in ("compare", "reduce") else []), cwd=tmp_path)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr[-2000:]
