"""What more than one check family reads: below every family, above `facts`.

`common` (event normalisation, distributions, evidence rows), `permits` (what the run's configuration permits:
the rule every delivery, consumer and group judge applies), `frames` and `txn_frames` (the Spark intermediates the
big checks share, cached per run), `bitsets` (the delivery counters as set arithmetic; the write-stall check reads
them too) and `damage` (the damaged-history rule of the checks that read the bulk events, applied by `verify` and
the in-process evaluator).
"""
