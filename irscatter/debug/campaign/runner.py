"""Running a campaign: the tasks of every case, on a local process pool or a Ray cluster.

Nothing here schedules: the local pool is `concurrent.futures.ProcessPoolExecutor` (its
workers forked from this process, so they start with irscatter imported), Ray runs each task
as a remote call of `run_task`, and both hand results back as they come. `run_task` is the one
function a worker runs: it keeps one target per worker process (an OpenVINO worker process,
started once and used by every case the worker runs), and runs the task in a forked child
within the case's time and memory limits (`isolate.py`), so that a case that crashes, hangs
or runs out of memory is a result, and the worker goes on to the next case.

Only this process writes the database, as each result comes back.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from irscatter.debug.campaign import judge, ops
from irscatter.debug.campaign.corpus import ModelCase, content_hash, find_models
from irscatter.debug.campaign.isolate import isolated
from irscatter.debug.campaign.store import CaseRecord, Store
from irscatter.debug.campaign.task import Settings, TargetFactory, Task, irscatter_version
from irscatter.errors import Argument, UsageError
from irscatter.targets.protocol import Target
from irscatter.targets.worker import TargetFailure

_WORK: dict[str, Callable[[tuple[Task, Target]], Any]] = {
    "model": judge.judge_model, "signatures": ops.signatures, "prepare": ops.prepare, "op": ops.judge_op,
}
_OUTCOMES = {"hung": "hung", "crashed": "crashed", "out of memory": "out of memory", "error": "failed"}

# How a record begins that says nothing about its case: such a record is not stored.
TARGET_DOWN = "the target could not start"

# This worker process's target: (what made it, the target), kept from case to case.
_target: tuple[tuple[Any, ...], Target] | None = None


def run_task(task: Task) -> Any:
    """What a worker runs for one task: a `CaseRecord` for a case ("model", "op"), else the
    step's own value, or an `(status, message)` pair saying why the step did not end."""
    try:
        target = _worker_target(task) if task.kind in ("model", "op") else None  # (the other steps run irscatter only)
    except (TargetFailure, OSError) as e:
        message = e.message if isinstance(e, TargetFailure) else str(e)
        return _failed(task, "failed", f"{TARGET_DOWN}: {message}", 0.0, None)
    outcome = isolated(_WORK[task.kind], (task, target), seconds=task.settings.timeout,
                       memory_mb=task.settings.memory_mb)
    if outcome.status != "done" or (isinstance(outcome.value, dict) and outcome.value.get("target_failed")):
        _drop_target()  # it may be in the middle of a request, or was replaced inside the case
    if outcome.status != "done":
        return _failed(task, _OUTCOMES[outcome.status], outcome.message or "", outcome.seconds, outcome.peak_mb)
    value = outcome.value
    if task.kind not in ("model", "op"):
        return value
    value.pop("target_failed", None)
    return CaseRecord(task.kind, task.name, task.folder, task.identity, task.settings.target,
                      task.settings.key(), irscatter_version(), seconds=round(outcome.seconds, 3),
                      peak_mb=round(outcome.peak_mb, 1) if outcome.peak_mb is not None else None,
                      **_extra(task), **value)


def _failed(task: Task, status: str, message: str, seconds: float, peak_mb: float | None) -> Any:
    if task.kind not in ("model", "op"):
        return (status, message)
    return CaseRecord(task.kind, task.name, task.folder, task.identity, task.settings.target,
                      task.settings.key(), irscatter_version(), status=status, message=message,
                      seconds=round(seconds, 3), peak_mb=round(peak_mb, 1) if peak_mb is not None else None,
                      **_extra(task))


def _extra(task: Task) -> dict[str, Any]:
    if task.kind != "op":
        return {}
    text, holders = task.extra
    return {"signature": text, "holders": list(holders)}


def _worker_target(task: Task) -> Target:
    """This worker's target for `task`, started (and asked to describe itself, which starts
    OpenVINO's worker) before any case forks, so that every case uses the same one."""
    global _target
    key = task.target_key()
    if _target is not None and _target[0] == key:
        return _target[1]
    _drop_target()
    target = task.make_target()
    target.describe()
    _target = (key, target)
    return target


def _drop_target() -> None:
    global _target
    if _target is not None:
        held, _target = _target[1], None
        try:
            held.close()
        except Exception:  # (a target that cannot even close is replaced all the same)
            pass


# --- where the tasks run -----------------------------------------------------------------------


class LocalPool:
    """`workers` processes on this machine (default: one per core)."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else None)
        self._pool = ProcessPoolExecutor(self.workers, mp_context=context)

    def results(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, Any]]:
        submitted = {self._pool.submit(run_task, task): task for task in tasks}
        for future in as_completed(submitted):
            task = submitted[future]
            try:
                yield task, future.result()
            except Exception as e:  # the worker process itself died (a case never runs in it)
                yield task, _failed(task, "crashed", f"the worker running it died: {e}", 0.0, None)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


_RAY = Argument("ray")  # the argument of `run_campaign` that names the cluster
_IN_FLIGHT = 4  # Ray tasks submitted per CPU of the cluster ahead of their results


class RayCluster:
    """A Ray cluster (`ray.init(address)`): every task a remote call of `run_task`, one CPU
    each, never retried (a case that kills its worker is a result, not a reason to run it
    again)."""

    def __init__(self, address: str) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError(_RAY, " needs Ray, which is not installed: pip install irscatter[ray]",
                             value=address) from None
        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            started_here = {"include_dashboard": False} if address == "local" else {}
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False, **started_here)
            except (ConnectionError, ValueError, RuntimeError) as e:
                said = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise UsageError(_RAY, f" {address}: {said}", value=address) from None
        self._remote = ray.remote(run_task).options(num_cpus=1, max_retries=0)
        self.workers = int(ray.cluster_resources().get("CPU", 1))

    def results(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, Any]]:
        """Results as they come, with a few tasks per CPU in flight: the cluster stays busy,
        and neither the driver nor Ray holds a million pending calls at once."""
        ray = self._ray
        waiting = iter(tasks)
        pending: dict[Any, Task] = {}
        while True:
            for task in itertools.islice(waiting, max(0, _IN_FLIGHT * self.workers - len(pending))):
                pending[self._remote.remote(task)] = task
            if not pending:
                return
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                task = pending.pop(ref)
                try:
                    yield task, ray.get(ref)
                except ray.exceptions.RayError as e:
                    yield task, _failed(task, "crashed", f"the Ray task died: {str(e).splitlines()[0]}", 0.0, None)

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()


# --- the campaign --------------------------------------------------------------------------------


class _Executor:
    """The pool or the cluster, started at the first task (a campaign resumed with every case
    judged starts none)."""

    def __init__(self, workers: int | None, ray: str | None) -> None:
        self._workers, self._ray = workers, ray
        self._running: LocalPool | RayCluster | None = None

    def results(self, tasks: list[Task]) -> Iterator[tuple[Task, Any]]:
        if not tasks:
            return iter(())
        if self._running is None:
            self._running = RayCluster(self._ray) if self._ray else LocalPool(self._workers)
        return self._running.results(tasks)

    def close(self) -> None:
        if self._running is not None:
            self._running.close()


Progress = Callable[[int, int | None], None]


def run_campaign(corpora: Iterable[str], settings: Settings, *, store: Store, out: str,
                 factory: TargetFactory | None = None, workers: int | None = None, ray: str | None = None,
                 progress: Progress | None = None,
                 on_record: Callable[[CaseRecord], None] | None = None) -> list[CaseRecord]:
    """Judge every model below `corpora` (or, with `settings.ops`, every distinct layer
    signature of them) on the target, skipping the cases `store` already holds; each record
    goes into `store` and to `on_record` as it is made. Returns every case's record, by name.
    Raises `TargetFailure("unavailable")` when the target cannot start in a worker."""
    models = find_models(list(corpora), exclude=[out])
    cache = (store.known_hash, store.remember_hash)
    identities = {m.folder: content_hash(m, cache) for m in models}
    executor = _Executor(workers, ray)
    records: list[CaseRecord] = []
    total = [len(models)]  # the cases; with --ops, known once the signatures are

    def emit(record: CaseRecord) -> None:
        records.append(record)
        if on_record is not None:
            on_record(record)
        if progress is not None:
            progress(len(records), total[0])

    try:
        if settings.ops:
            _op_cases(models, identities, settings, store, out, factory, executor, emit, progress, total)
        else:
            tasks = []
            for m in models:
                old = store.get(("model", identities[m.folder], settings.target, settings.key()))
                if old is not None:
                    old.resumed, old.name, old.path = True, m.name, m.folder
                    emit(old)
                else:
                    tasks.append(Task("model", m.name, m.folder, identities[m.folder], settings, out, factory))
            for _, record in executor.results(tasks):
                _keep(store, record)
                emit(record)
    finally:
        executor.close()
    return sorted(records, key=lambda r: (r.kind, r.name))


def _op_cases(models: list[ModelCase], identities: dict[str, str], settings: Settings, store: Store, out: str,
              factory: TargetFactory | None, executor: _Executor, emit: Callable[[CaseRecord], None],
              progress: Progress | None, total: list[int]) -> None:
    version = irscatter_version()
    found: dict[str, list[dict[str, Any]]] = {}
    asks = []
    for m in models:
        known = store.signatures(identities[m.folder], version)
        if known is not None:
            found[m.folder] = known
        else:
            asks.append(Task("signatures", m.name, m.folder, identities[m.folder], settings, out, factory))
    by_folder = {m.folder: m for m in models}
    unread = 0
    for done, (task, value) in enumerate(executor.results(asks), 1):
        if isinstance(value, tuple):  # the model could not be read: a case that failed, kept out of the store
            unread += 1
            emit(CaseRecord("model", task.name, task.folder, task.identity, settings.target, settings.key(),
                            version, status=value[0], message=f"its layers could not be listed: {value[1]}"))
        else:
            store.remember_signatures(task.identity, version, value)
            found[task.folder] = value
        if progress is not None:
            progress(done, len(asks))
    signatures: dict[str, dict[str, Any]] = {}
    for m in models:
        for sig in found.get(m.folder, []):
            entry = signatures.setdefault(sig["digest"], {**sig, "holders": [], "layers": []})
            entry["holders"].append(m.name)
            entry["layers"].append((m.folder, sig["layer"]))
    total[0] = unread + len(signatures)
    pending = []
    for digest, entry in signatures.items():
        key = ("op", digest, settings.target, settings.key())
        old = store.get(key)
        if old is None:
            pending.append(digest)
            continue
        if old.holders != entry["holders"]:
            store.set_holders(key, entry["holders"])
            old.holders = entry["holders"]
        old.resumed = True
        emit(old)
    folders = {d: str(Path(out) / "ops" / f"{signatures[d]['op']}-{d}") for d in pending}
    tried = dict.fromkeys(pending, 0)  # how many of its holders were asked to prepare it
    why: dict[str, tuple[str, str]] = {}
    judge = []
    while pending:
        assigned: dict[str, list[tuple[str, int, str]]] = {}
        for digest in pending:
            model_folder, lid = signatures[digest]["layers"][tried[digest]]
            tried[digest] += 1
            assigned.setdefault(model_folder, []).append((digest, lid, folders[digest]))
        tasks = [Task("prepare", by_folder[f].name, f, identities[f], settings, out, factory, extra=assigned[f])
                 for f in assigned]
        retry = []
        for task, value in executor.results(tasks):
            for digest, _, _ in task.extra:
                failure = value if isinstance(value, tuple) else (("failed", value[digest]) if value[digest] else None)
                if failure is None:
                    judge.append(digest)
                    continue
                why[digest] = (failure[0], f"while preparing it from {task.name}: {failure[1]}")
                if tried[digest] < len(signatures[digest]["layers"]):
                    retry.append(digest)  # another model holding it may do better
                else:
                    emit(_unprepared(digest, signatures[digest], folders[digest], settings, version, why[digest]))
        pending = retry
    ops = [Task("op", f"{signatures[d]['op']}/{d}", folders[d], d, settings, out, factory,
                extra=(signatures[d]["text"], signatures[d]["holders"])) for d in judge]
    for _, record in executor.results(ops):
        _keep(store, record)
        emit(record)


def _keep(store: Store, record: CaseRecord) -> None:
    """Store a case's record; a target that cannot start ends the campaign (every case would
    say the same)."""
    message = record.message or ""
    if message.startswith(TARGET_DOWN):
        raise TargetFailure("unavailable", message.removeprefix(TARGET_DOWN + ": "))
    store.put(record)


def _unprepared(digest: str, entry: dict[str, Any], folder: str, settings: Settings, version: str,
                why: tuple[str, str]) -> CaseRecord:
    """A signature no model holding it could cut out: a failed case, not stored (a later run tries again)."""
    return CaseRecord("op", f"{entry['op']}/{digest}", folder, digest, settings.target, settings.key(), version,
                      status=why[0], message=why[1], ops=[entry["op"]], signature=entry["text"],
                      holders=entry["holders"])
