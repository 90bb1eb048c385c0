"""Save an IR again with OpenVINO, as a user's conversion pipeline would: `resaved.xml` as it
reads it, `f16.xml` with its f32 weights compressed to f16 (a Const of f16 and a Convert back
for each). Run in a subprocess, so that the tests never import OpenVINO themselves.

    python resave_openvino.py MODEL.xml OUT_FOLDER
"""

import sys
from pathlib import Path

import openvino as ov

source, out = sys.argv[1], Path(sys.argv[2])
model = ov.Core().read_model(source)
ov.save_model(model, str(out / "resaved.xml"), compress_to_fp16=False)
ov.save_model(model, str(out / "f16.xml"), compress_to_fp16=True)
