"""The partition family: `checks` (`partition.leader_in_isr`, `partition.election_conforms`,
`partition.leader_epoch_monotonic`), `isr` (`partition.offline_replica_leaves_isr`,
`partition.unclean_only_when_enabled`), `shutdown` (`partition.controlled_shutdown_moves_leaders`), `dual_write`
(`partition.dual_write_agrees`: ZooKeeper and the brokers agree in a migration's dual-write phase). The timeline
and the leader elections they judge are `facts.partitions`.
"""
