import importlib.util
import os
import sys
from pathlib import Path

# No test reads or writes the probes' answers kept on disk (`ops/common/probe_cache.py`): each
# process probes its BLAS, and the cache's own tests give it a directory of their own.
os.environ["IRSCATTER_CACHE_DIR"] = ""

sys.path.insert(0, str(Path(__file__).parent))

import helpers  # noqa: E402
import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "early: a long test that starts before the others (see below)")


@pytest.fixture(params=[False, True], ids=["one-part", "parts"])
def compiled_split(request, monkeypatch):
    """Layers' second calls take their compiled loops however small (`accel.loads`); `parts`:
    in parts on three helpers, whatever the work, products cut however small."""
    from irscatter.ops.common import accel, products, threads

    monkeypatch.setattr(accel, "LOAD_ELEMENTS", 0)
    if request.param:
        monkeypatch.setattr(threads, "SPLIT_WORK", 0)
        monkeypatch.setattr(threads, "CORES", 3)
        monkeypatch.setattr(threads, "_policy", "split")
        monkeypatch.setattr(products, "LEAST_CUT_WORK", 0)  # (small products: one kind of BLAS kernel)


def pytest_collection_modifyitems(items):
    # pytest-xdist hands tests out in collection order: a long test collected first runs beside
    # the rest of the suite rather than after it (the sort is stable, the rest keep their order).
    items.sort(key=lambda item: item.get_closest_marker("early") is None)


def pytest_report_header(config):
    if importlib.util.find_spec("openvino") is None:
        return ["oracle: openvino is not installed, so the differential tests against it are skipped "
                "(`pip install -e '.[test]'` installs the pinned version)"]
    from importlib.metadata import version

    return [f"oracle: OpenVINO {version('openvino')}, run in a worker process (a crash costs one case)"]


def pytest_terminal_summary(terminalreporter):
    # Skips grouped by reason, one line each (pytest's own -rs lists every module apart).
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith("could not import 'openvino'"):
            reason = "openvino is not installed, so the differential tests against it did not run"
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        terminalreporter.section("skipped")
        for reason, count in sorted(reasons.items()):
            terminalreporter.write_line(f"{count} skipped: {reason}")
    import harness

    cases: dict[str, set[str]] = {}
    cpu_lines, oracle_lines = [], []
    for section, line in _NOTES:
        if section == "cpu":
            cpu_lines.append(line)
        elif section == "oracle":
            oracle_lines.append(line)
        else:
            cases.setdefault(section, set()).add(line)
    cpu_lines = harness.harness_notes(cases) + cpu_lines
    if cpu_lines:
        terminalreporter.section("checks that depend on this CPU")
        for line in cpu_lines:
            terminalreporter.write_line(line)
    if oracle_lines:
        terminalreporter.section("cases not checked against OpenVINO's CPU plugin")
        for line in oracle_lines:
            terminalreporter.write_line(line)


# The notes of every test, gathered from the reports (pytest-xdist's workers send theirs here).
_NOTES: list[tuple[str, str]] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if helpers.PENDING_NOTES:  # what this test noted travels with its report
        outcome.get_result().user_properties.append(("irscatter_notes", list(helpers.PENDING_NOTES)))
        helpers.PENDING_NOTES.clear()


def pytest_runtest_logreport(report):
    for name, value in report.user_properties:
        if name == "irscatter_notes":
            _NOTES.extend(tuple(note) for note in value)


def pytest_unconfigure(config):
    if helpers._ORACLE is not None:
        helpers._ORACLE.close()
