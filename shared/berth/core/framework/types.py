"""Node-slot arrays the extension points pass: masks, scores, slots."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    pass


Mask = npt.NDArray[np.bool_]
Scores = npt.NDArray[np.int64]
Slots = npt.NDArray[np.intp]
MAX_NODE_SCORE = 100
