"""The delivery family: `checks` (lost writes, duplicates, inconsistent offsets, key order, in Spark), `judge` and
`placement_judge` (their verdicts from facts either evaluator gathers), `slots` (the fast paths over positions in
order), `fatal` (`delivery.fatal_error`).
"""
