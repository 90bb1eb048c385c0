"""onnxruntime's worker, except that running a model whose file name contains "crash_here"
kills it and one whose name contains "hang_here" never answers: a runtime that dies or hangs,
as a native library may."""

import os
import signal
import time

from irscatter.targets.onnxruntime import _Handler
from irscatter.targets.worker import serve

onnxruntime = _Handler()


def handle(request):
    if request["kind"] == "values" and "crash_here" in request["onnx"]:
        os.kill(os.getpid(), signal.SIGKILL)
    if request["kind"] == "values" and "hang_here" in request["onnx"]:
        time.sleep(600)
    return onnxruntime(request)


serve(handle)
