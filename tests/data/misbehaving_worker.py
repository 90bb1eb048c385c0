"""A worker that misbehaves on request, to show that the parent survives each way of failing."""

import os
import signal
import sys
import time

from irscatter.targets.worker import TargetFailure, serve


def handle(request):
    what = request["do"]
    if what == "echo":
        return request["value"]
    if what == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if what == "exit":
        sys.stderr.write("giving up now\n")
        sys.stderr.flush()
        os._exit(7)
    if what == "sleep":
        time.sleep(request["seconds"])
        return "woke"
    if what == "chatter":  # native code printing to stdout must not corrupt the channel
        os.write(1, b"noise on stdout\n")
        print("more noise", flush=True)
        return "quiet"
    if what == "raise":
        raise ValueError("bad input")
    raise TargetFailure("unstable", "two answers")


serve(handle)
