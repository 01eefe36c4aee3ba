"""PySpark verifiers: load a run history, run the checks, write the verdict report.

Entry points: `spark_analysis.verify.verify_run(run_dir, spark_master=None, spark=None)` and
`python -m spark_analysis RUN_DIR [--spark-master URL]` (exit 0 pass, 1 fail, 3 unknown, 2 usage).
Modules: `session` (the SparkSession), `load` (explicit schema, torn lines, Parquet once),
`runinfo` (run.json, verify.allow/checks/slo), `context` (what checks see), `result` (CheckResult,
the `Check` protocol), `checks/` (one module per family, registry in `checks/__init__`),
`faults` (fault windows, attribution), `timeline`, `verdict`, `report/` (HTML, JUnit),
`reference` (pure-Python implementation used by the benchmark and cross-check tests).
"""
