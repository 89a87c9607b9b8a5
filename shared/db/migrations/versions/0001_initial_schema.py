"""initial schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-22 12:55:28.896901
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# JSONB on Postgres (indexable), JSON elsewhere; the same type as shared.db.base.JSONType.
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Embedded databases created before migrations existed already hold runs and metrics.
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    if "runs" not in existing:
        _create_results_tables()
    op.create_table(
        "agents",
        sa.Column("id", sa.String(length=300), nullable=False),
        sa.Column("hostname", sa.String(length=200), nullable=False),
        sa.Column("queue", sa.String(length=200), nullable=False),
        sa.Column("framework", sa.String(length=50), nullable=False),
        sa.Column("framework_version", sa.String(length=100), nullable=False),
        sa.Column("device", sa.String(length=50), nullable=False),
        sa.Column("hardware", JSON, nullable=False),
        sa.Column("software", JSON, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_heartbeat", sa.DateTime(timezone=True), nullable=False),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agents")),
    )
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_agents_hostname"), ["hostname"], unique=False)
        batch_op.create_index(batch_op.f("ix_agents_queue"), ["queue"], unique=False)

    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("spec", sa.String(length=500), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("sample_count", sa.Integer(), nullable=False),
        sa.Column("class_names", JSON, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_datasets")),
        sa.UniqueConstraint("spec", "count", "seed", name="uq_datasets_spec_count_seed"),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("name", name=op.f("uq_users_name")),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("label", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_api_tokens_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_api_tokens_token_hash")),
    )
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_tokens_user_id"), ["user_id"], unique=False)

    op.create_table(
        "evaluations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("model_name", sa.String(length=200), nullable=False),
        sa.Column("model_version", sa.String(length=100), nullable=False),
        sa.Column("manifest", JSON, nullable=False),
        sa.Column("framework", sa.String(length=50), nullable=False),
        sa.Column("device", sa.String(length=50), nullable=False),
        sa.Column("scenario", JSON, nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("dataset", sa.String(length=500), nullable=False),
        sa.Column("dataset_count", sa.Integer(), nullable=True),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("trace_level", sa.String(length=20), nullable=False),
        sa.Column("constraints", JSON, nullable=False),
        sa.Column("backend_options", JSON, nullable=False),
        sa.Column("queue", sa.String(length=200), nullable=False),
        sa.Column("agent_id", sa.String(length=300), nullable=True),
        sa.Column("run_id", sa.String(length=36), nullable=True),
        sa.Column("shards_total", sa.Integer(), nullable=False),
        sa.Column("shards_ready", sa.Integer(), nullable=False),
        sa.Column("preprocess_reused", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_evaluations_owner_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evaluations")),
    )
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_evaluations_agent_id"), ["agent_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_evaluations_framework"), ["framework"], unique=False)
        batch_op.create_index(batch_op.f("ix_evaluations_model_name"), ["model_name"], unique=False)
        batch_op.create_index(batch_op.f("ix_evaluations_owner_id"), ["owner_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_evaluations_state"), ["state"], unique=False)

    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("framework", sa.String(length=50), nullable=False),
        sa.Column("manifest_yaml", sa.Text(), nullable=False),
        sa.Column("manifest", JSON, nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["users.id"], name=op.f("fk_models_owner_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_models")),
        sa.UniqueConstraint("name", "version", name="uq_models_name_version"),
    )
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_models_name"), ["name"], unique=False)

    op.create_table(
        "shards",
        sa.Column("evaluation_id", sa.String(length=36), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("sample_count", sa.Integer(), nullable=False),
        sa.Column("ready", sa.Boolean(), nullable=False),
        sa.Column("reused", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["evaluation_id"],
            ["evaluations.id"],
            name=op.f("fk_shards_evaluation_id_evaluations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("evaluation_id", "index", name=op.f("pk_shards")),
    )
    with op.batch_alter_table("shards", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_shards_key"), ["key"], unique=False)


def _create_results_tables() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("evaluation_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("model_name", sa.String(length=200), nullable=False),
        sa.Column("model_version", sa.String(length=100), nullable=False),
        sa.Column("framework", sa.String(length=50), nullable=False),
        sa.Column("framework_version", sa.String(length=100), nullable=False),
        sa.Column("scenario", sa.String(length=20), nullable=False),
        sa.Column("mode", sa.String(length=20), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("dataset", sa.String(length=500), nullable=False),
        sa.Column("validity", sa.String(length=20), nullable=False),
        sa.Column("samples_per_second", sa.Float(), nullable=True),
        sa.Column("preprocess_reused", sa.Boolean(), nullable=False),
        sa.Column("manifest", JSON, nullable=False),
        sa.Column("settings", JSON, nullable=False),
        sa.Column("environment", JSON, nullable=False),
        sa.Column("report", JSON, nullable=False),
        sa.Column("log_prefix", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_runs_evaluation_id"), ["evaluation_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_framework"), ["framework"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_model_name"), ["model_name"], unique=False)

    op.create_table(
        "metrics",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("unit", sa.String(length=30), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_metrics_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_metrics")),
    )
    with op.batch_alter_table("metrics", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_metrics_run_id"), ["run_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("shards", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_shards_key"))

    op.drop_table("shards")
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_models_name"))

    op.drop_table("models")
    with op.batch_alter_table("metrics", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_metrics_run_id"))

    op.drop_table("metrics")
    with op.batch_alter_table("evaluations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_evaluations_state"))
        batch_op.drop_index(batch_op.f("ix_evaluations_owner_id"))
        batch_op.drop_index(batch_op.f("ix_evaluations_model_name"))
        batch_op.drop_index(batch_op.f("ix_evaluations_framework"))
        batch_op.drop_index(batch_op.f("ix_evaluations_agent_id"))

    op.drop_table("evaluations")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_tokens_user_id"))

    op.drop_table("api_tokens")
    op.drop_table("users")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_runs_model_name"))
        batch_op.drop_index(batch_op.f("ix_runs_framework"))
        batch_op.drop_index(batch_op.f("ix_runs_evaluation_id"))

    op.drop_table("runs")
    op.drop_table("datasets")
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_agents_queue"))
        batch_op.drop_index(batch_op.f("ix_agents_hostname"))

    op.drop_table("agents")
