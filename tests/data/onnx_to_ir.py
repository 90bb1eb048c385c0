"""Converts ONNX models to IR with OpenVINO's `convert_model` (its ONNX frontend), weights kept
in f32, so that tests never import openvino themselves.

    python onnx_to_ir.py MODEL.onnx OUT.xml [MODEL.onnx OUT.xml ...]
"""

import sys

import openvino as ov

for source, target in zip(sys.argv[1::2], sys.argv[2::2]):
    ov.save_model(ov.convert_model(source), target, compress_to_fp16=False)
