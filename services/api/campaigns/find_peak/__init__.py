"""Find-peak: the highest Server QPS under a latency bound, one probe after another."""

from services.api.campaigns.contract import Campaign
from services.api.campaigns.find_peak.group import KIND, continue_find_peak
from services.api.campaigns.find_peak.schema import SCHEMA

CAMPAIGN = Campaign(
    kind=KIND, queries=SCHEMA.queries, mutations=SCHEMA.mutations, next_step=continue_find_peak
)
