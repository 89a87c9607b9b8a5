"""The workload.py of a throw-away workload folder that tests drop into services/workloads/:
an options model and the three entries, nothing else declared (every other Workload field
takes its default)."""

from __future__ import annotations

WORKLOAD_TEMPLATE = """
from pydantic import BaseModel, ConfigDict, Field

from services.core.workload import Workload


class EchoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    repeats: int = Field(default=1, ge=1, le=5)


WORKLOAD = Workload(
    name="{name}",
    summary="{summary}",
    options=EchoOptions,
    needs_dataset=False,
    dataset_label="none",
    measure="services.workloads.{name}.outcome:measure",
    read="services.workloads.{name}.outcome:read",
    save="services.workloads.{name}.outcome:save",
)
"""


def workload_source(name: str, summary: str) -> str:
    """The folder's workload.py for a workload called ``name``."""
    return WORKLOAD_TEMPLATE.replace("{name}", name).replace("{summary}", summary)
