"""The engine: runs an experiment's phases against a backend and records the history."""
