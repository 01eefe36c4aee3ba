"""The consumer-group family: `checks` (generations, ownership, assignment, coordinator, commit order), `holdings`
(who held which partitions in which generation), `judge` (`group.commit_monotonic`'s verdict from facts either
evaluator gathers), `offsets` (`group.offsets_kept`).
"""
