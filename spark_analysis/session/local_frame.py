"""`local_frame`: a small DataFrame of rows the driver already holds (keys to join, a transaction table).

Built from an Arrow table, so Spark holds it as a local relation in the JVM (`LocalTableScan`). Built
from a Python list instead (`createDataFrame(rows)`), it is an RDD of pickled rows that every query
reading it hands to a Python worker process: a join with a handful of such rows cost 190-245 ms a
query against 80-130 ms (2 cores, warm). The columns take the plain types the checks use.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructType,
)

_ARROW: dict[DataType, pa.DataType] = {
    StringType(): pa.string(),
    LongType(): pa.int64(),
    IntegerType(): pa.int32(),
    DoubleType(): pa.float64(),
    BooleanType(): pa.bool_(),
}


def local_frame(spark: SparkSession, rows: Iterable[Sequence[Any]], ddl: str) -> DataFrame:
    """The `rows` (tuples in the order of `ddl`'s columns, e.g. "who string, n long") as a DataFrame."""
    schema = DataType.fromDDL(ddl)
    if not isinstance(schema, StructType):
        raise TypeError(f"local_frame: {ddl!r} is not a list of columns")
    types = []
    for f in schema.fields:
        if f.dataType not in _ARROW:
            raise TypeError(f"local_frame: column {f.name} has type {f.dataType.simpleString()}, not one of "
                            f"{', '.join(sorted(t.simpleString() for t in _ARROW))}")
        types.append(_ARROW[f.dataType])
    materialized = list(rows)
    columns = list(zip(*materialized, strict=True)) if materialized else [() for _ in schema.fields]
    table = pa.table([pa.array(list(c), type=t) for c, t in zip(columns, types, strict=True)],
                     names=schema.names)
    return spark.createDataFrame(table, schema)
