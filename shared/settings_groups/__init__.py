"""The themed groups of fields that ``shared.settings.Settings`` joins into one class."""
