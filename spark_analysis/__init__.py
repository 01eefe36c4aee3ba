"""PySpark verifiers: load a run history, run the checks, write the verdict report."""
