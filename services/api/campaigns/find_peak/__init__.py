"""Find-peak: the highest Server QPS under a latency bound, one probe after another."""

from services.api.campaigns.find_peak.group import CAMPAIGN

__all__ = ["CAMPAIGN"]
