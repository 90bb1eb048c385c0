"""The worker process that runs other runtimes: every way it can fail costs one request."""

import sys
from pathlib import Path

import numpy as np
import pytest

from irscatter.targets import TargetFailure
from irscatter.targets.worker import WorkerProcess

SCRIPT = str(Path(__file__).parent / "data" / "misbehaving_worker.py")


@pytest.fixture
def worker():
    with WorkerProcess([sys.executable, SCRIPT], name="the worker", timeout=20) as w:
        yield w


def _failure(worker, request, **kw) -> TargetFailure:
    with pytest.raises(TargetFailure) as info:
        worker.request(request, **kw)
    return info.value


def test_arrays_travel_both_ways(worker):
    value = {"x": np.arange(6, dtype=np.float16).reshape(2, 3), "s": np.array(["a", "bc"])}
    back = worker.request({"do": "echo", "value": value})
    assert back["x"].dtype == np.float16 and np.array_equal(back["x"], value["x"])
    assert back["s"].tolist() == ["a", "bc"]


def test_a_crash_is_one_failure_and_the_next_request_gets_a_new_process(worker):
    failure = _failure(worker, {"do": "segfault"})
    assert failure.kind == "crashed" and "SIGSEGV" in failure.message
    assert worker.request({"do": "echo", "value": 3}) == 3


def test_an_exit_reports_the_status_and_the_last_words(worker):
    failure = _failure(worker, {"do": "exit"})
    assert failure.kind == "crashed"
    assert "status 7" in failure.message and "giving up now" in failure.message


def test_a_hang_is_stopped_at_the_time_limit(worker):
    failure = _failure(worker, {"do": "sleep", "seconds": 30}, timeout=0.5)
    assert failure.kind == "hung"
    assert worker.request({"do": "sleep", "seconds": 0}) == "woke"


def test_printing_to_stdout_does_not_corrupt_the_channel(worker):
    assert worker.request({"do": "chatter"}) == "quiet"
    assert worker.request({"do": "echo", "value": "after"}) == "after"


def test_errors_of_the_target_are_refusals_and_the_worker_goes_on(worker):
    failure = _failure(worker, {"do": "raise"})
    assert failure.kind == "refused" and "ValueError: bad input" in failure.message
    assert _failure(worker, {"do": "other"}).kind == "unstable"
    assert worker.request({"do": "echo", "value": 1}) == 1


def test_a_missing_program_is_unavailable():
    with WorkerProcess(["/nonexistent/python"], name="nothing") as w:
        assert _failure(w, {"do": "echo", "value": 1}).kind == "unavailable"


def test_openvino_missing_is_unavailable_with_how_to_install_it():
    hidden = ("import sys; sys.modules['openvino'] = None; "
              "from irscatter.targets.openvino import main; main()")
    with WorkerProcess([sys.executable, "-c", hidden], name="OpenVINO") as w:
        failure = _failure(w, {"kind": "version"})
    assert failure.kind == "unavailable" and "pip install irscatter[openvino]" in failure.message


def test_string_tensors_cross_to_openvino_and_back(tmp_path):
    """irscatter holds strings as numpy StringDType; the OpenVINO worker feeds them and returns
    them in the same form (so that a comparison needs no conversion)."""
    ov = pytest.importorskip("openvino")
    import openvino.opset15 as ops
    from helpers import oracle, save_ov

    text = ops.parameter([3], ov.Type.string, name="text")
    begins, ends, symbols = ops.string_tensor_unpack(text).outputs()
    packed = ops.string_tensor_pack(begins, ends, symbols)
    xml = save_ov(ov.Model([ops.result(packed), ops.result(ends)], [text], "strings"), tmp_path)
    feeds = {"text": np.array(["a", "", "zürich"], dtype=np.dtypes.StringDType())}
    strings, lengths = oracle().infer(xml, feeds)
    assert strings.dtype == np.dtypes.StringDType() and list(strings) == ["a", "", "zürich"]
    assert list(lengths) == [1, 1, 8]


@pytest.mark.parametrize("name, physical", [("CPU", ["CPU"]), ("GPU.1", ["GPU.1"]), ("AUTO", []),
                                            ("HETERO:GPU,CPU", ["GPU", "CPU"]), ("BATCH:GPU(4)", ["GPU"]),
                                            ("AUTO:GPU.0, CPU", ["GPU.0", "CPU"])])
def test_the_hardware_a_device_name_asks_for(name, physical):
    from irscatter.targets.openvino import physical_devices

    assert physical_devices(name) == physical
