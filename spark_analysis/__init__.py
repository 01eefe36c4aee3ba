"""PySpark verifiers: load a run history, run the checks, write the verdict report.

Entry points: `spark_analysis.verify.verify_run(run_dir, spark_master=None, spark=None)` and
`python -m spark_analysis RUN_DIR [--spark-master URL]` (exit 0 pass, 1 fail, 3 unknown, 2 usage).

Laid out by job, each layer importing only the ones before it (tests/unit/test_layers.py holds the order and
that no module imports back up, even lazily; docs/design.md "spark_analysis, by job"):
- `session/`: the Spark session (any master), the driver JVM's class-data archive, local frames;
- `ingest/`: run.json (`runinfo`) and history.jsonl -> the columnar Parquet copy (`load`, `schema`, ...);
- `facts/`: fault windows, operations, transactions, liveness, the partition timeline, completion, and
  `CheckContext`, which carries them with the history's frames;
- `result`: `CheckResult` and the `Check` protocol;
- `checks/`: the registry (`checks/__init__`), `checks/shared/` and one package per family
  (`checks/<family>/`: its checks, judges and frames);
- `inprocess/`: the in-process evaluator, the same judges on one parse of the history without Spark;
- `verdict`, `report/` (HTML, JUnit, the timeline, known bugs), `verify` (the pipeline), `trend/`,
  `compare/`, and `jvm_archive_build` and `__main__` on top.
"""
