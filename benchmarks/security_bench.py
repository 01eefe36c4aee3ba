"""Benchmark: what security costs a failover (issue 42). Runs `experiments/secured-failover.yaml` (TLS + SCRAM + ACLs)
and its plaintext twin (the same file without `cluster.security` and without the credential_rotation fault, which
needs SCRAM) on the process backend, alternately, with the same seed within a pair, and prints per run and as
medians with the secured/plaintext ratio: the worst controller failover (`slo.controller_failover`), the ack
latency p99 and the write stall per fault (`slo.write_unavailable`), as `warm_verifier_bench.measure` reads them.

    .venv/bin/python benchmarks/security_bench.py [--variant mode=zookeeper] [--pairs 2] [--seed 42] [--workdir DIR]

Last measured: see docs/performance.md ("Secured clusters").
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.warm_verifier_bench import CLI, Run, _fmt, measure  # noqa: E402

SECURED = ROOT / "experiments" / "secured-failover.yaml"


def plaintext_twin(secured: Path, into: Path) -> Path:
    """`secured` without `cluster.security` and without the faults that need it."""
    doc = yaml.safe_load(secured.read_text(encoding="utf-8"))
    doc["cluster"].pop("security", None)
    doc["schedule"] = [f for f in doc["schedule"] if f.get("fault") != "credential_rotation"]
    doc["name"] = "plaintext-failover"
    path = into / "plaintext-failover.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def run_once(experiment: Path, variant: str, seed: int, runs_dir: Path) -> Run:
    args = [str(CLI), "run", str(experiment), "--seed", str(seed), "--backend", "process", "--runs-dir",
            str(runs_dir), "--variant", variant]
    started = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=1200, check=False)
    dirs = [line.split(": ", 1)[1].strip() for line in proc.stdout.splitlines() if line.startswith("run completed: ")]
    if not dirs:
        sys.exit(f"no completed run (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return measure(Path(dirs[-1]), True, seed, time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="mode=zookeeper")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="security-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    plain = plaintext_twin(SECURED, work)
    runs: dict[bool, list[Run]] = {True: [], False: []}
    for pair in range(args.pairs):
        seed = args.seed + pair
        for secured in ((True, False) if pair % 2 == 0 else (False, True)):
            run = run_once(SECURED if secured else plain, args.variant, seed, work / ("tls" if secured else "plain"))
            runs[secured].append(run)
            print(f"{'secured' if secured else 'plaintext':<9} seed {seed}: {run.status:<7} failover "
                  f"{_fmt(run.failover_s, 's')}, ack p99 {_fmt(run.ack_p99_ms, 'ms')}, write stall per fault "
                  f"{_fmt(run.stall_per_fault_s, 's')} (command {run.wall_s:.0f}s)", flush=True)
    print(f"\n{SECURED.name} [{args.variant}], {args.pairs} pairs, medians (secured / plaintext = ratio):")
    for field, unit in (("failover_s", "s"), ("ack_p99_ms", "ms"), ("stall_per_fault_s", "s")):
        values = {k: [getattr(r, field) for r in v if getattr(r, field) is not None] for k, v in runs.items()}
        sec = statistics.median(values[True]) if values[True] else None
        pla = statistics.median(values[False]) if values[False] else None
        ratio = f"{sec / pla:.2f}x" if sec is not None and pla else "-"
        print(f"  {field:<18} {_fmt(sec, unit):>10} / {_fmt(pla, unit):>10} = {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
