"""Repeats: one evaluation run N times as one group, for its run-to-run spread."""

from services.api.campaigns.contract import Campaign
from services.api.campaigns.repeats.group import KIND
from services.api.campaigns.repeats.schema import SCHEMA

CAMPAIGN = Campaign(kind=KIND, queries=SCHEMA.queries, mutations=SCHEMA.mutations)
