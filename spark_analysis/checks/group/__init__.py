"""The consumer-group family: `checks` (ownership, assignment, coordinator, commit order), `generations`
(`group.generation_monotonic`), `holdings`
(who held which partitions in which generation), `judge` (`group.commit_monotonic`'s verdict from facts either
evaluator gathers), `offsets` (`group.offsets_kept`).
"""
