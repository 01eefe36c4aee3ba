"""`local_frame` holds driver-side rows in the JVM (a local relation, no Python worker) with the rows and
types a Python-list `createDataFrame` gives, and refuses a column type it does not map."""

from __future__ import annotations

from typing import Any

import pytest

from spark_analysis.session.local_frame import local_frame

pytestmark = [pytest.mark.integration, pytest.mark.spark]

DDL = "who string, n long, small int, t double, ok boolean"
ROWS = [("a", 1, 2, 0.5, True), (None, None, None, None, None), ("c", -(2**40), 7, float("inf"), False)]


def test_local_frame_has_the_rows_and_schema_of_a_python_list_frame(spark: Any) -> None:
    """Same schema (nullable columns), same rows, nulls and extreme values included."""
    frame = local_frame(spark, ROWS, DDL)
    listed = spark.createDataFrame(ROWS, DDL)
    assert frame.schema == listed.schema
    assert frame.collect() == listed.collect()


def test_local_frame_is_a_local_relation_not_an_rdd_of_pickled_rows(spark: Any) -> None:
    """The plan scans a LocalTableScan; a list-built frame is an ExistingRDD that needs a Python worker."""
    assert "LocalTableScan" in local_frame(spark, ROWS, DDL)._jdf.queryExecution().executedPlan().toString()
    assert "ExistingRDD" in spark.createDataFrame(ROWS, DDL)._jdf.queryExecution().executedPlan().toString()


def test_local_frame_without_rows_is_empty_with_its_columns(spark: Any) -> None:
    frame = local_frame(spark, [], DDL)
    assert frame.columns == ["who", "n", "small", "t", "ok"]
    assert frame.count() == 0


def test_local_frame_refuses_a_column_type_it_does_not_map(spark: Any) -> None:
    with pytest.raises(TypeError, match="column ts has type timestamp"):
        local_frame(spark, [], "ts timestamp")
