"""Writing a matcher's mask row into an engine's torch bitmask.

The core's matchers write numpy rows only (the core imports no torch); engines hand torch
tensors. A CPU tensor is filled through its numpy view (no copy); a device tensor gets the row
copied over."""
from __future__ import annotations

from typing import Any

import numpy as np


def fill_row(matcher: Any, bitmask: Any, index: int) -> None:
    """`matcher.fill_next_token_bitmask` into row `index` of a numpy array or torch tensor."""
    if isinstance(bitmask, np.ndarray):
        matcher.fill_next_token_bitmask(bitmask, index)
        return
    if bitmask.device.type == "cpu":
        matcher.fill_next_token_bitmask(bitmask.numpy(), index)
        return
    import torch

    row = np.zeros((1, bitmask.shape[1]), dtype=np.int32)
    matcher.fill_next_token_bitmask(row, 0)
    bitmask[index].copy_(torch.from_numpy(row[0]).to(bitmask.device))
