"""Repeats: one evaluation run N times as one group, for its run-to-run spread."""

from services.api.campaigns.repeats.group import CAMPAIGN

__all__ = ["CAMPAIGN"]
