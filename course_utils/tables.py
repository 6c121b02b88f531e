"""How a lab's tables show a value to a student (issue 55): a yes/no as 是/否, a missing value as —.

Labs 01-05 and 08 pass a table through :func:`shown` just before displaying it; the table the cell computes
with (its assertions, its sums) keeps its booleans.
"""

from __future__ import annotations

import math


def _one(value):
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "是" if value else "否"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return value


def shown(table):
    """A copy of the DataFrame ``table`` with True/False as 是/否 and None/NaN as —, for display only."""
    return table.map(_one)
