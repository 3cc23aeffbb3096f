"""The store's tables (SQLAlchemy Core): one row per run, per hop, per point and per verdict.

The run row keeps the result document byte for byte (``document``) and its SHA-256, so an export
gives back the file that was pushed; every other column is a copy of what the document says,
taken out once (:mod:`.columns`) so that ``ls``, ``compare`` and ``report`` filter and group in
SQL. Alembic's first revision (``migrations/versions/0001_results.py``) creates exactly these.

``flagged`` marks a run whose figures must not enter a group's: data errors in any point, or a
run that stopped early.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    Uuid,
)

__all__ = ["metadata", "runs", "hops", "points", "verdicts"]

metadata = MetaData()

runs = Table(
    "runs", metadata,
    Column("run_id", Uuid, primary_key=True),
    Column("document", LargeBinary, nullable=False),
    Column("document_sha256", String(64), nullable=False),
    Column("pushed_at", DateTime(timezone=True), nullable=False),
    Column("started", DateTime(timezone=True), index=True),
    Column("host_name", Text, index=True),
    Column("kernel", Text, index=True),
    Column("busprobe_version", Text),
    Column("design", Text),
    Column("device", Text, nullable=False),
    Column("bus_kind", Text, nullable=False, index=True),
    Column("bus_speed", Text),
    Column("bus_width", Integer),
    Column("protocol", Text),
    Column("host_profile", Text),
    Column("controller", Text, index=True),
    Column("root_port", Text, index=True),
    Column("chipset", Text, index=True),
    Column("complete", Boolean, nullable=False),
    Column("errors", Integer, nullable=False),
    Column("flagged", Boolean, nullable=False),
    Column("points", Integer, nullable=False),
)

hops = Table(
    "hops", metadata,
    Column("run_id", Uuid, ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("kind", Text),
    Column("name", Text),
    Column("driver", Text),
    Column("description", Text),
    Column("vendor_id", String(4)),
    Column("device_id", String(4)),
    Column("speed", Text),
    Column("width", Integer),
    Column("speed_cap", Text),
    Column("width_cap", Integer),
    Column("mps", Integer),
    Column("mrrs", Integer),
    Column("slot", Text),
    Column("chipset_path", Text),
)

points = Table(
    "points", metadata,
    Column("run_id", Uuid, ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("direction", Text, nullable=False),
    Column("length", Integer, nullable=False),
    Column("queue_depth", Integer, nullable=False),
    Column("mps", Integer),
    Column("mrrs", Integer),
    Column("protocol", Text),
    Column("throughput", Float, nullable=False),
    Column("device_throughput", Float),
    Column("efficiency", Float),
    Column("verdict", Text),
    Column("errors", Integer, nullable=False),
)

verdicts = Table(
    "verdicts", metadata,
    Column("run_id", Uuid, ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("direction", Text, nullable=False),
    Column("mps", Integer),
    Column("mrrs", Integer),
    Column("queue_depth", Integer),
    Column("plateau", Float),
    Column("model", Float),
    Column("efficiency", Float),
    Column("verdict", Text, nullable=False, index=True),
)
