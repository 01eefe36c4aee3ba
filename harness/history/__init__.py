"""The ground floor: what a run records and how it is read back and folded.

- `jsonl`: the event type (`Event`), the `EventSink` every observer, workload and fault injector writes to,
  the crash-safe append-only writer of `history.jsonl`, and the tolerant reader (torn last line, unknown
  fields);
- `events`: the typed events, one frozen dataclass per `type` (`events_engine`, `events_cluster`,
  `events_client`, on `events_base`), with structured targets; `reference` prints docs/design.md's history
  event reference from them;
- `nodes`: who a run names, one type each for the whole harness: a cluster node (`NodeId`), a client
  (`ClientRef`), a link (`LinkRef`);
- `state`: `ClusterState`, the fold of observed events the probes and dynamic fault targets read;
- `probes`: the named steady-state probes over that state;
- `bulk` and `columnar`: the bulk events in columns (which types are bulk, their Arrow schema, the splitter of
  history lines into per-type Parquet files) and the recorder's columnar copy beside `history.jsonl`, which the
  verifiers take instead of parsing those lines again.

It imports nothing of the project but `harness.errors`; every other layer may import it
(tests/unit/test_layers.py enforces both).
"""
