"""Experiment files: the schema (frozen dataclasses) and the loader, the only YAML reader."""

from harness.experiment.loader import load_experiment, load_experiment_text, load_experiments, load_experiments_text
from harness.experiment.schema import Experiment

__all__ = ["Experiment", "load_experiment", "load_experiment_text", "load_experiments", "load_experiments_text"]
