"""Rerun: a stored run submitted again with its evaluation's request, compared against noise."""

from services.api.campaigns.contract import Campaign
from services.api.campaigns.rerun.group import KIND
from services.api.campaigns.rerun.schema import SCHEMA

CAMPAIGN = Campaign(kind=KIND, queries=SCHEMA.queries, mutations=SCHEMA.mutations)
