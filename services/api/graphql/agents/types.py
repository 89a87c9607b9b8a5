"""GraphQL types of the agents domain."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from services.api.graphql.scalars import copied, to_json
from shared.db.evaluations import Agent


@strawberry.type(name="Agent")
class AgentType:
    id: str
    hostname: str
    queue: str
    framework: str
    framework_version: str
    device: str
    hardware: JSON
    software: JSON
    # How the worker is set up, e.g. {"intra_op_threads": 2}.
    settings: JSON
    started_at: datetime
    last_heartbeat: datetime
    live: bool

    @classmethod
    def from_row(cls, row: Agent, live: bool) -> AgentType:
        return copied(
            cls,
            row,
            hardware=to_json(row.hardware),
            software=to_json(row.software),
            settings=to_json(row.settings or {}),
            live=live,
        )
