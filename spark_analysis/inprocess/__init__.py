"""The in-process evaluator: every check run in one Python process on the parsed history, without Spark.

The verifiers' second evaluator (it was `spark_analysis/reference*.py`): it gathers from one parse of history.jsonl
(`lines`, reading each line as Spark's JSON reader does) the facts the Spark checks gather with their plans, and
hands them to the same judges (`checks/<family>/judge.py`, `checks/shared/permits.py`, `checks/slo/stalls.py`):
`evaluator.inprocess_checks` is the entry point, `txn` and `txn_eos` the transaction checks' facts. The benchmark
times Spark against it, and the cross-check tests hold both paths to the same words. Above `checks`; nothing below
imports it.
"""
