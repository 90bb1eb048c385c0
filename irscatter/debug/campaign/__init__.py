"""Conformance campaigns: every model of a corpus judged against a target, on one machine or a
Ray cluster (`irscatter campaign`).

* `corpus`: the model folders below the folders given, and their content hashes;
* `task`: the settings of a campaign and the picklable task a worker runs;
* `isolate`: a task in a forked process of its own, within a time and a memory limit;
* `judge`: one model: validate, run, compare whole, the first layer at fault, reduce;
* `ops`: each distinct layer signature of a corpus judged once, as a one-layer model;
* `runner`: the worker function (`run_task`), the local pool and Ray, the campaign itself;
* `store`: the results in SQLite, so an interrupted campaign resumes where it stopped;
* `report`: the table, the JSON records, the HTML page, and the difference of two campaigns.
"""

from irscatter.debug.campaign.runner import run_campaign, run_task
from irscatter.debug.campaign.store import STATUSES, CaseRecord, Store, read_records
from irscatter.debug.campaign.task import (
    Settings,
    TargetFactory,
    Task,
    check_spelling,
    default_memory_mb,
    openvino_target,
)

__all__ = ["STATUSES", "CaseRecord", "Settings", "Store", "TargetFactory", "Task", "check_spelling", "default_memory_mb",
           "openvino_target", "read_records", "run_campaign", "run_task"]
