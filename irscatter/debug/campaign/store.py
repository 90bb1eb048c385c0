"""A campaign's results in SQLite, one row per case, written as each case ends.

Only the process that drives the campaign writes (workers hand their records back), so one
connection in WAL mode is enough, and each row is committed on its own: an interrupted
campaign keeps every case it finished, and the next run with the same file skips them. A case
is the same case when its identity (a model's content hash, or an op signature's digest), its
target and its settings are; the row says which irscatter version judged it, but a new
version does not make a case new (a campaign against a new irscatter takes a new file, and
`campaign diff` compares the two).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

SCHEMA = 1

# The statuses of a case, in the order a report lists them: everything but `passed` fails a campaign.
STATUSES = ("passed", "diverged", "expected differs", "refused", "invalid", "failed", "crashed", "hung",
            "out of memory")


@dataclass
class CaseRecord:
    """What one case came to. `metric` is the worst tensor's error over the error its tolerance
    allows (over 1 fails; inf for NaN or infinity on one side, or exact values that differ)."""

    kind: str  # "model" or "op"
    name: str  # the model folder below its corpus argument, or "Type-version/<digest>" for an op
    path: str  # the model folder (an op: the folder of its one-layer model)
    identity: str  # the model's content hash, or the op signature's digest
    target: str
    settings: str
    version: str = ""
    status: str = "failed"
    metric: float | None = None
    tensor: str | None = None  # the tensor the metric is of
    layer: str | None = None  # the first diverging layer, `name (Type-version)`
    layer_op: str | None = None  # its op type
    reproducer: str | None = None
    seconds: float = 0.0
    peak_mb: float | None = None
    message: str | None = None
    target_detail: str | None = None  # the target's own description (runtime, version, device, precision)
    ops: list[str] = field(default_factory=list)  # the op types (Type-version) the case holds
    signature: str | None = None  # an op case: its signature as text
    holders: list[str] = field(default_factory=list)  # an op case: the models holding the signature
    resumed: bool = False  # read back from the database rather than judged in this run

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.kind, self.identity, self.target, self.settings)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_json(self) -> dict[str, Any]:
        record = asdict(self)
        if record["metric"] is not None and record["metric"] == float("inf"):
            record["metric"] = "inf"
        return record


_COLUMNS = [f.name for f in fields(CaseRecord) if f.name != "resumed"]
_JSON_COLUMNS = ("ops", "holders")


class Store:
    """The results file; `Store(":memory:")` keeps nothing."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        self._db = sqlite3.connect(self.path)
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        with self._db:
            self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS cases (kind TEXT, name TEXT, path TEXT, identity TEXT, target TEXT, "
                "settings TEXT, version TEXT, status TEXT, metric REAL, tensor TEXT, layer TEXT, layer_op TEXT, "
                "reproducer TEXT, seconds REAL, peak_mb REAL, message TEXT, target_detail TEXT, ops TEXT, "
                "signature TEXT, holders TEXT, finished TEXT DEFAULT CURRENT_TIMESTAMP, "
                "PRIMARY KEY (kind, identity, target, settings))")
            self._db.execute("CREATE TABLE IF NOT EXISTS hashes (path TEXT PRIMARY KEY, size INTEGER, "
                             "mtime_ns INTEGER, hash TEXT)")
            self._db.execute("CREATE TABLE IF NOT EXISTS signatures (identity TEXT, version TEXT, data TEXT, "
                             "PRIMARY KEY (identity, version))")
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA),))

    def close(self) -> None:
        self._db.close()

    # --- cases ---

    def put(self, record: CaseRecord) -> None:
        """Record a case, replacing an earlier judgement of it; committed at once."""
        values = [json.dumps(getattr(record, c)) if c in _JSON_COLUMNS else getattr(record, c) for c in _COLUMNS]
        with self._db:
            self._db.execute(f"INSERT OR REPLACE INTO cases ({', '.join(_COLUMNS)}) VALUES "
                             f"({', '.join('?' * len(_COLUMNS))})", values)

    def get(self, key: tuple[str, str, str, str]) -> CaseRecord | None:
        row = self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM cases WHERE kind=? AND identity=? AND target=? "
                               "AND settings=?", key).fetchone()
        return None if row is None else _record(row)

    def set_holders(self, key: tuple[str, str, str, str], holders: list[str]) -> None:
        with self._db:
            self._db.execute("UPDATE cases SET holders=? WHERE kind=? AND identity=? AND target=? AND settings=?",
                             (json.dumps(holders), *key))

    def records(self) -> Iterator[CaseRecord]:
        for row in self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM cases ORDER BY kind, name, target"):
            yield _record(row)

    # --- what the campaign keeps between runs ---

    def set_meta(self, key: str, value: str) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def known_hash(self, path: str, size: int, mtime_ns: int) -> str | None:
        row = self._db.execute("SELECT hash FROM hashes WHERE path=? AND size=? AND mtime_ns=?",
                               (path, size, mtime_ns)).fetchone()
        return None if row is None else row[0]

    def remember_hash(self, path: str, size: int, mtime_ns: int, digest: str) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO hashes VALUES (?, ?, ?, ?)", (path, size, mtime_ns, digest))

    def signatures(self, identity: str, version: str) -> list[dict[str, Any]] | None:
        row = self._db.execute("SELECT data FROM signatures WHERE identity=? AND version=?",
                               (identity, version)).fetchone()
        return None if row is None else json.loads(row[0])

    def remember_signatures(self, identity: str, version: str, found: list[dict[str, Any]]) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO signatures VALUES (?, ?, ?)", (identity, version, json.dumps(found)))


def _record(row: Iterable[Any]) -> CaseRecord:
    values = dict(zip(_COLUMNS, row))
    for column in _JSON_COLUMNS:
        values[column] = json.loads(values[column] or "[]")
    return CaseRecord(**values)


def read_records(path: str | os.PathLike) -> list[CaseRecord]:
    """Every case of a results file, which must exist (`campaign diff`); of two cases of one
    name (a model that changed between runs), the later last."""
    if not Path(path).is_file():
        raise FileNotFoundError(path)
    db = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
    try:
        rows = db.execute(f"SELECT {', '.join(_COLUMNS)} FROM cases ORDER BY kind, name, finished").fetchall()
    finally:
        db.close()
    return [_record(row) for row in rows]
