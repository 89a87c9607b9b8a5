"""A sweep: one evaluation per value of one setting, sharing a group."""

from services.api.campaigns.sweep.group import CAMPAIGN

__all__ = ["CAMPAIGN"]
