"""The SLO family: `checks` (controller failover, partition unavailability, rebalance), `stall` (the client-side
stall SLOs), `stall_frames` (those stalls computed in Spark), `stalls` (the stall model in pure Python: its records,
its rule on small histories and in the in-process evaluator, the cells its judge reads).
"""
