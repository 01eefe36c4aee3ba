"""What the checks know about a run besides their own plans: indexes over the history, and the context that
carries them.

`fault_effect` / `faults_legacy` / `faults` (fault windows, what each fault did, attribution), `operations`
(reassignments, preferred elections), `transactions` (how each transaction ended), `liveness` (brokers and voters
up or down, the authoritative sources, the controller events), `partitions` (the authoritative partition timeline
and its leader elections, clean or not), `completion` (whether the run completed, and why not) and `context`
(`CheckContext`: the events as frames and rows plus all of the above). Read the same way from Spark rows and from
the in-process evaluator's parse. Above `ingest`; below the checks, the in-process evaluator and the verdict.
"""
