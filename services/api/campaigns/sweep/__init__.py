"""A sweep: one evaluation per value of one setting, sharing a group."""

from services.api.campaigns.contract import Campaign
from services.api.campaigns.sweep.group import KIND
from services.api.campaigns.sweep.schema import SCHEMA

CAMPAIGN = Campaign(kind=KIND, queries=SCHEMA.queries, mutations=SCHEMA.mutations)
