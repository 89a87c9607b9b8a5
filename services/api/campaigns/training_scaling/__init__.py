"""Training scaling: data-parallel training across agents, one gang per world size."""

from services.api.campaigns.contract import Campaign
from services.api.campaigns.training_scaling.group import KIND, continue_training_scaling
from services.api.campaigns.training_scaling.schema import SCHEMA

CAMPAIGN = Campaign(
    kind=KIND,
    queries=SCHEMA.queries,
    mutations=SCHEMA.mutations,
    next_step=continue_training_scaling,
)
