"""MLPerf's accuracy + performance pair: both passes of one evaluation on one agent."""

from services.api.campaigns.accuracy_performance_pair.group import CAMPAIGN

__all__ = ["CAMPAIGN"]
