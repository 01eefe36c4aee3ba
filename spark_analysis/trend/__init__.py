"""The trend across many runs: `kafka-chaos report --trend RUNS_DIR`.

`build_trend(runs_dir, out=None, spark_master=None, spark=None) -> TrendResult` reads every run
directory under RUNS_DIR (directly or one level down), aggregates their verdict.json files with
Spark, and writes one self-contained `trend.html` plus `trend.json` with the numbers. Modules:
`discover` (run directories, run.json, reproduce line), `aggregate` (Spark), `build` (the JSON
form and the files), `page` and `plots` (HTML and inline SVG).
"""

from spark_analysis.trend.build import TREND_HTML, TREND_JSON, TrendResult, build_trend
from spark_analysis.trend.discover import TrendError

__all__ = ["TREND_HTML", "TREND_JSON", "TrendError", "TrendResult", "build_trend"]
