"""The controller family: `checks` (`controller.unique`, `controller.epoch_monotonic`), `zombie` (the zombie that
names itself controller while cut off).
"""
