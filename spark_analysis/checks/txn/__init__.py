"""The transaction family: `checks` (aborted reads, atomic visibility, lost commits, in Spark), `eos` (zombie fencing
and
exactly-once pipelines), `judge` and `eos_judge` (their verdicts from facts either evaluator gathers),
`verification` (`txn.verification_retriable`).
"""
