"""Migration scripts, oldest first (a package so that setuptools ships them)."""
