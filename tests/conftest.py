import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import helpers  # noqa: E402


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

    cpu_lines = harness.harness_notes() + helpers.CPU_NOTES
    if cpu_lines:
        terminalreporter.section("checks that depend on this CPU")
        for line in cpu_lines:
            terminalreporter.write_line(line)
    if helpers.ORACLE_NOTES:
        terminalreporter.section("cases not checked against OpenVINO's CPU plugin")
        for line in helpers.ORACLE_NOTES:
            terminalreporter.write_line(line)


def pytest_unconfigure(config):
    if helpers._ORACLE is not None:
        helpers._ORACLE.close()
