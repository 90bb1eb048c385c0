"""Runs one-layer IR files of OpenVINO's internal state-space ops (SelectiveSSM,
PagedSelectiveSSM, PagedCausalConv1D) on OpenVINO's CPU plugin at f32 inference precision.

    python state_space_openvino.py FOLDER

FOLDER holds <case>.xml and <case>.npz (the feeds `in0`, `in1`, ... in input order). For each
case this writes <case>.out.npz: the outputs (`out0`, ...) and each input as the plugin left
it after the run (`in0`, ...: the paged ops update their state table in place), or
<case>.refused.txt with the plugin's message when it refuses the case. npz files cannot hold
bf16, so a bf16 array goes as its bits (uint16) under its name with `@bf16` appended.

OpenVINO's IR reader knows these `version="extension"` types only through the extensions its
CPU plugin registers, so the plugin's library is added to the Core as an extension library.
The tests write the files with this module's `pack` and read them with its `unpack`.
"""

import sys
from pathlib import Path

import ml_dtypes
import numpy as np


def unpack(stored) -> dict[str, np.ndarray]:
    """An npz file's arrays by name, bf16 ones restored."""
    return {k.removesuffix("@bf16"): stored[k].view(ml_dtypes.bfloat16) if k.endswith("@bf16") else stored[k]
            for k in stored.files}


def pack(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Arrays by name as an npz file can hold them, bf16 ones as their bits."""
    return {(k + "@bf16" if a.dtype == ml_dtypes.bfloat16 else k): (a.view(np.uint16) if a.dtype == ml_dtypes.bfloat16
                                                                     else a) for k, a in arrays.items()}


def main(folder: Path) -> None:
    import openvino as ov  # here, so that the tests can import pack and unpack without OpenVINO

    from irscatter.targets.openvino import _from_tensor, _in_port_type, _to_tensor

    core = ov.Core()
    core.add_extension(str(Path(ov.__file__).parent / "libs" / "libopenvino_intel_cpu_plugin.so"))
    for xml in sorted(folder.glob("*.xml")):
        feeds = unpack(np.load(xml.with_suffix(".npz")))
        arrays = [feeds[f"in{i}"] for i in range(len(feeds))]
        try:
            compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
            request = compiled.create_infer_request()
            # (the plugin takes some bf16 inputs as f32 where the CPU computes in bf16)
            tensors = [_to_tensor(ov, _in_port_type(array, port).copy()) for array, port in zip(arrays, compiled.inputs)]
            for i, tensor in enumerate(tensors):
                request.set_input_tensor(i, tensor)
            request.infer()
        except Exception as e:  # the plugin's refusal, kept for the test to read
            xml.with_suffix(".refused.txt").write_text(str(e))
            continue
        results = {f"out{k}": _from_tensor(ov, request.get_output_tensor(k)) for k in range(len(compiled.outputs))}
        results.update({f"in{i}": _from_tensor(ov, tensor) for i, tensor in enumerate(tensors)})
        np.savez(xml.with_suffix(".out.npz"), **pack(results))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
