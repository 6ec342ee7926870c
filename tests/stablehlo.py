"""Reading lowered programs in tests: the StableHLO text of a module."""

import re


def batched_indexing(text: str) -> int:
    """The gathers and scatters of a StableHLO module that index at positions that differ along a batch axis
    (``operand_batching_dims`` of a gather, ``input_batching_dims`` of a scatter)."""
    return len(re.findall(r"operand_batching_dims = \[", text)) + len(re.findall(r"input_batching_dims = \[", text))
