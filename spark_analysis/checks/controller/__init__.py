"""The controller family: `checks` (`controller.unique`, `controller.epoch_monotonic`), `migration`
(`controller.migration_handover`: one controller across a ZooKeeper-to-KRaft migration's hand-over), `zombie` (the
zombie that names itself controller while cut off).
"""
