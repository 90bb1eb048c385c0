"""The worker process that runs other runtimes: every way it can fail costs one request."""

import sys
from pathlib import Path

import ml_dtypes
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


class _Port:
    """An OpenVINO port as `_in_port_type` reads it: its element type."""

    def __init__(self, name):
        self.name = name

    def get_element_type(self):
        return self

    def get_type_name(self):
        return self.name

    def to_dtype(self):  # as OpenVINO's: f16 for bf16
        return {"bf16": np.float16, "f16": np.float16, "f32": np.float32, "i32": np.int32}[self.name]


@pytest.mark.parametrize("port, array, converted", [
    ("f32", np.array([1.5, -np.inf, np.nan], ml_dtypes.bfloat16), np.float32),  # the plugin's f32 for bf16
    ("bf16", np.array([1.5, 3.0], ml_dtypes.bfloat16), ml_dtypes.bfloat16),  # (not OpenVINO's to_dtype: f16)
    ("f16", np.array([1.5, 3.0], ml_dtypes.bfloat16), np.float16),
    ("f16", np.array([1e-30], ml_dtypes.bfloat16), ml_dtypes.bfloat16),  # f16 does not hold it: as it is
    ("i32", np.array([7, -1]), np.int32),
    ("i32", np.array([2**40]), np.int64),
    ("dynamic", np.array([1.0]), np.float64),
])
def test_a_feed_goes_in_the_ports_type_where_that_type_holds_it(port, array, converted):
    from irscatter.targets.openvino import _in_port_type

    kept = array.copy()
    fed = _in_port_type(array, _Port(port))
    assert fed.dtype == np.dtype(converted)
    assert np.array_equal(fed.astype(np.float64), kept.astype(np.float64), equal_nan=True)
    assert array.tobytes() == kept.tobytes()


@pytest.mark.parametrize("name, physical", [("CPU", ["CPU"]), ("GPU.1", ["GPU.1"]), ("AUTO", []),
                                            ("HETERO:GPU,CPU", ["GPU", "CPU"]), ("BATCH:GPU(4)", ["GPU"]),
                                            ("AUTO:GPU.0, CPU", ["GPU.0", "CPU"])])
def test_the_hardware_a_device_name_asks_for(name, physical):
    from irscatter.targets.openvino import physical_devices

    assert physical_devices(name) == physical


# --- a user's own runtime: --target python:MODULE:NAME --------------------------------------------


def _compare_user_target(capsys, name: str, *more: str) -> tuple[int, str]:
    from irscatter import cli as command_line

    small_cnn = Path(__file__).resolve().parent.parent / "models" / "small_cnn"
    status = command_line.main(["compare", str(small_cnn / "model.xml"), "--inputs", str(small_cnn / "inputs.npz"),
                                "--target", f"python:user_runtime:{name}", *more])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_a_runtime_of_ones_own_passes_clean_and_its_planted_fault_is_found(capsys):
    """tests/user_runtime.py: irscatter itself as the user's runtime passes every layer; with a
    planted fault the MatMul is named, and a runtime that raises costs its layer, not the run."""
    status, out = _compare_user_target(capsys, "Honest", "--all")
    assert status == 0 and "mine" in out and "FAIL" not in out, out
    status, out = _compare_user_target(capsys, "WrongMatMul")
    assert status == 1, out
    failed = [line for line in out.splitlines() if line.startswith(">") or " FAIL " in line or "crashed" in line]
    assert any("MatMul" in line for line in failed) and any("ReduceMean" in line for line in failed), out
    assert "RuntimeError: no kernel for ReduceMean" in out
    status, out = _compare_user_target(capsys, "WrongMatMul", "--whole")
    assert status == 1 and "my runtime at f32" in out


@pytest.mark.parametrize("name, says", [("nowhere", "has no class or function nowhere"),
                                        ("needs_arguments", "making the target failed: TypeError"),
                                        ("not_a_runtime", "lacks the Target protocol's infer")])
def test_a_runtime_that_does_not_fit_is_one_usage_error(capsys, name, says):
    status, out = _compare_user_target(capsys, name)
    assert status == 2 and says in out and "Traceback" not in out, out
