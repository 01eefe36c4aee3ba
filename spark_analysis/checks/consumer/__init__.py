"""The consumer family: `checks` (`consumer.nonmonotonic_poll`, `consumer.poll_skip`, in Spark) and `judge` (their
verdicts from facts either evaluator gathers).
"""
