"""Running experiments from pytest: the session (backend, seed, runs dir, Spark master), one run
end to end into an `Outcome` with a readable failure, collected experiment files, and the shared
cluster that `chaos_cluster` lends to several experiments. `harness.pytest_plugin` wires it in."""
