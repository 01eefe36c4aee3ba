"""What the single-process reference (`spark_analysis.reference`) makes of the lines it reads as Spark's JSON
reader does (`spark_analysis.json_read`): the per-run tally of damaged lines (`Damage`, reported as
`spark_analysis.load.read_damage` reports them), and a small event shaped as the row a Spark-collected check
receives (`spark_row`)."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from spark_analysis.context import Row
from spark_analysis.context import _decode as decode_row
from spark_analysis.json_read import LEADER_TEXT, READ_TYPES, as_read
from spark_analysis.load import MAX_LISTED_DAMAGE, DamagedLine, HistoryDamage
from spark_analysis.schema import T_IN_TEXT, TYPE_IN_TEXT

_TYPE_IN_TEXT = re.compile(TYPE_IN_TEXT)  # what Spark's conversion reads from a damaged line's text
_T_IN_TEXT = re.compile(T_IN_TEXT)


def spark_row(ev: Row) -> Row:
    """A small event as Spark's rows provider hands it to a check (`context.spark_rows_provider`): the
    schema's columns only, typed as Spark read them, without nulls, JSON-valued fields decoded."""
    row = {k: as_read(v, READ_TYPES[k]) for k, v in ev.items()
           if k in READ_TYPES and v is not None and k != "leader"}
    leader = ev.get("leader")
    if leader is not None and LEADER_TEXT.fullmatch(str(leader)):  # else a member id (group.state): null
        row["leader"] = int(leader)
    row["seq"] = ev["seq"]
    return decode_row(row)


def _text_time(text: str) -> float | None:
    m = _T_IN_TEXT.search(text)
    try:
        return float(m.group(1)) if m else None
    except ValueError:
        return None


@dataclass
class Damage:
    """The damaged lines of one parse, as `spark_analysis.load.read_damage` reports them."""

    by_kind: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    by_type: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    listed: list[DamagedLine] = field(default_factory=list)

    def add(self, seq: int, text: str, kind: str, event_type: str | None, t: float | None) -> None:
        if event_type is None:
            m = _TYPE_IN_TEXT.search(text)
            event_type = m.group(1) if m else "?"
        self.by_kind[kind] += 1
        self.by_type[event_type] += 1
        if len(self.listed) < MAX_LISTED_DAMAGE:
            self.listed.append(DamagedLine(seq + 1, t if t is not None else _text_time(text), kind, event_type,
                                           text.rstrip("\r\n")[:120]))

    def history_damage(self, total_lines: int) -> HistoryDamage:
        skipped = sum(self.by_kind.values())
        return HistoryDamage(total_lines, skipped, dict(self.by_kind), dict(self.by_type), tuple(self.listed))
