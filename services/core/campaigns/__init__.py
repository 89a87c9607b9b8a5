"""One definition per campaign kind, driven by both launchers: the typed group record its
members store, its request's bounds, its plan and its summary. Pure: no request model, no
database, no launcher; the embedded drivers (services/campaigns) and the stack's group
submissions (services/api/campaigns) apply the members to their own requests."""
