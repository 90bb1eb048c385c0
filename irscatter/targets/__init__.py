"""Other runtimes, driven from a separate process so that their failures cost one request.

irscatter compares itself with native runtimes (OpenVINO's plugins first). A native library can
crash the interpreter that loaded it, hang, or hand back memory it never wrote; none of that may
take irscatter (or a test run) down with it. Each target therefore lives in a worker process
spoken to through a pipe, and every way a request can go wrong ends as a `TargetFailure` whose
`kind` says which.
"""

from irscatter.targets.worker import TargetFailure

__all__ = ["TargetFailure"]
