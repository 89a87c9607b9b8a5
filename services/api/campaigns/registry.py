"""Every group kind the API submits, found by its folder:
``services/api/campaigns/<name>/__init__.py`` declaring ``CAMPAIGN`` (contract.Campaign).

Nothing else registers one: the schema and the aggregator's group steps both ask
``campaigns()``, as the inference backends are found (services/inference/backends/
registry.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from services.api import campaigns as campaigns_package
from services.api.campaigns.contract import Campaign


@cache
def campaigns() -> dict[str, Campaign]:
    """Group kind -> its campaign, in folder-name order (the schema's field order)."""
    found: dict[str, Campaign] = {}
    folders = sorted(m.name for m in pkgutil.iter_modules(campaigns_package.__path__) if m.ispkg)
    for folder in folders:
        package = f"{campaigns_package.__name__}.{folder}"
        campaign = getattr(importlib.import_module(package), "CAMPAIGN", None)
        if not isinstance(campaign, Campaign):
            raise TypeError(f"{package}.CAMPAIGN must be a Campaign, not {campaign!r}")
        if campaign.kind in found:
            raise ValueError(f"{package}: group kind {campaign.kind!r} is declared twice")
        found[campaign.kind] = campaign
    return found
