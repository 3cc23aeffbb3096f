"""The first schema: runs (the document byte for byte + query columns), hops, points, verdicts.

Written out column by column rather than from :mod:`busprobe.store.tables`, so that this
revision stays what it was when tables.py moves on.

Revision ID: 0001
Revises: (none)
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _child(name: str, *columns: sa.Column) -> None:
    """A table hanging off a run: (run_id, position) is its key, gone with the run."""
    op.create_table(
        name,
        sa.Column("run_id", sa.Uuid, sa.ForeignKey("runs.run_id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True),
        *columns)


def upgrade() -> None:
    text, integer, number = sa.Text, sa.Integer, sa.Float
    op.create_table(
        "runs",
        sa.Column("run_id", sa.Uuid, primary_key=True),
        sa.Column("document", sa.LargeBinary, nullable=False),
        sa.Column("document_sha256", sa.String(64), nullable=False),
        sa.Column("pushed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started", sa.DateTime(timezone=True)),
        sa.Column("host_name", text), sa.Column("kernel", text),
        sa.Column("busprobe_version", text), sa.Column("design", text),
        sa.Column("device", text, nullable=False), sa.Column("bus_kind", text, nullable=False),
        sa.Column("bus_speed", text), sa.Column("bus_width", integer),
        sa.Column("protocol", text), sa.Column("host_profile", text),
        sa.Column("controller", text), sa.Column("root_port", text), sa.Column("chipset", text),
        sa.Column("complete", sa.Boolean, nullable=False),
        sa.Column("errors", integer, nullable=False),
        sa.Column("flagged", sa.Boolean, nullable=False),
        sa.Column("points", integer, nullable=False))
    for column in ("started", "host_name", "kernel", "bus_kind", "controller", "root_port",
                   "chipset"):
        op.create_index(f"ix_runs_{column}", "runs", [column])
    _child("hops", sa.Column("kind", text), sa.Column("name", text), sa.Column("driver", text),
           sa.Column("description", text), sa.Column("vendor_id", sa.String(4)),
           sa.Column("device_id", sa.String(4)), sa.Column("speed", text),
           sa.Column("width", integer), sa.Column("speed_cap", text),
           sa.Column("width_cap", integer), sa.Column("mps", integer),
           sa.Column("mrrs", integer), sa.Column("slot", text),
           sa.Column("chipset_path", text))
    _child("points", sa.Column("direction", text, nullable=False),
           sa.Column("length", integer, nullable=False),
           sa.Column("queue_depth", integer, nullable=False), sa.Column("mps", integer),
           sa.Column("mrrs", integer), sa.Column("protocol", text),
           sa.Column("throughput", number, nullable=False),
           sa.Column("device_throughput", number), sa.Column("efficiency", number),
           sa.Column("verdict", text), sa.Column("errors", integer, nullable=False))
    _child("verdicts", sa.Column("direction", text, nullable=False), sa.Column("mps", integer),
           sa.Column("mrrs", integer), sa.Column("queue_depth", integer),
           sa.Column("plateau", number), sa.Column("model", number),
           sa.Column("efficiency", number), sa.Column("verdict", text, nullable=False))
    op.create_index("ix_verdicts_verdict", "verdicts", ["verdict"])


def downgrade() -> None:
    for name in ("verdicts", "points", "hops", "runs"):
        op.drop_table(name)
