"""MLPerf's accuracy + performance pair: both passes of one evaluation on one agent."""

from services.api.campaigns.accuracy_performance_pair.group import KIND
from services.api.campaigns.accuracy_performance_pair.schema import SCHEMA
from services.api.campaigns.contract import Campaign

CAMPAIGN = Campaign(kind=KIND, queries=SCHEMA.queries, mutations=SCHEMA.mutations)
