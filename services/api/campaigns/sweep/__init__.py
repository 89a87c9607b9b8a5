"""A sweep through the API: one evaluation per value of one setting, sharing a group, run
by the workers like any evaluation; the curve is read back from their runs. The kind
itself (record, parameters and bounds, curve) is services/core/campaigns/sweep.py, as
``benchstack sweep`` runs it. On one agent the points run one after the other on one
loaded model (services/inference/model_cache.py): the model loads once.
"""

from services.api.campaigns.group_schema import planned_campaign
from services.api.campaigns.sweep.types import SweepType
from services.core.campaigns import sweep

CAMPAIGN = planned_campaign(
    sweep,
    shown=SweepType,
    what="a sweep runs one model on one agent",
    descriptions=(
        "A sweep's points in value order; the owner's only.",
        "One evaluation per value of one setting, sharing a group; on one agent the points "
        "run on one loaded model.",
    ),
)
