"""Repeats through the API: one evaluation run N times as one group, for its run-to-run
spread; read back with each figure's spread over the runs and its 95 % interval over them.
The kind itself (record, bounds, summary) is services/core/campaigns/repeats.py, as
``--repeats`` runs it.

Each repeat is routed like any evaluation. To keep them on one machine, give a constraint
that only it meets (``agent=ID`` or ``hostname=...``); the view names the agents that ran
them and says when there were several, since a spread over machines is not run-to-run
noise.
"""

from services.api.campaigns.group_schema import planned_campaign
from services.api.campaigns.repeats.types import RepeatsType
from services.core.campaigns import repeats

CAMPAIGN = planned_campaign(
    repeats,
    shown=RepeatsType,
    what="repeats run one evaluation again",
    descriptions=(
        "Repeats with their spread and intervals; the owner's only.",
        "One evaluation run COUNT times as one group, for its run-to-run spread and 95 % "
        "intervals over runs.",
    ),
)
