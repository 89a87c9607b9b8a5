"""MLPerf's accuracy + performance pair through the API: two evaluations of one model with
the same settings, one per pass, pinned to one agent (the first matching one, as a gang
of one each) because a submission needs both passes from the same system. The kind
itself (record, plan, verdict) is services/core/campaigns/accuracy_performance_pair.py,
as ``benchstack bench --submission`` runs it."""

from services.api.campaigns.accuracy_performance_pair.types import PairType
from services.api.campaigns.group_schema import planned_campaign
from services.core.campaigns import accuracy_performance_pair as pair

CAMPAIGN = planned_campaign(
    pair,
    shown=PairType,
    what="the pair runs one model in accuracy and in performance mode",
    descriptions=(
        "An accuracy + performance pair; the owner's only.",
        "MLPerf's accuracy and performance passes of one evaluation, on one agent, as "
        "`benchstack bench --submission` runs them.",
    ),
)
