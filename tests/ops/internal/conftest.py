import pytest
from harness import save_ir
from helpers import run_internal_ops_openvino
from internal_openvino import all_cases


@pytest.fixture(scope="session")
def openvino_results(tmp_path_factory):
    """Every case of internal_openvino.py run once by OpenVINO's CPU plugin, out of process: the
    outputs of each, by case id, in output order."""
    root = tmp_path_factory.mktemp("internal-openvino")
    cases, jobs = all_cases(), []
    for case in cases:
        folder = root / case.id
        folder.mkdir()
        xml, feeds = save_ir(case, folder)
        jobs.append({"kind": "ir", "xml": xml, "feeds": feeds})
    runs = run_internal_ops_openvino(root, jobs)
    return {case.id: [run[f"out/{k}"] for k in range(sum(key.startswith("out/") for key in run))]
            for case, run in zip(cases, runs)}
