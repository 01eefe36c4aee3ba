"""From a run directory to what the checks read: run.json and the history as Spark frames.

`runinfo` (run.json, read tolerantly: the verify selection, `verify.allow`, SLOs, the cluster mode, the writers),
`schema` (the history's columns: one explicit Spark schema, the Parquet copy's, the tiers), `json_read` (how
Spark's JSON reader reads one line: damage kinds and stored values), `arrow_split` (Arrow parses the bulk events),
`side_rows` (the small events read in Python where that is exactly Spark's reading) and `load` (history.jsonl ->
the columnar Parquet copy, once, under the damaged-line policy). Above `session` only.
"""
