"""The partition family: `checks` (`partition.leader_in_isr`, `partition.election_conforms`,
`partition.leader_epoch_monotonic`), `isr` (`partition.offline_replica_leaves_isr`,
`partition.unclean_only_when_enabled`), `shutdown` (`partition.controlled_shutdown_moves_leaders`). The timeline
and the leader elections they judge are `facts.partitions`.
"""
