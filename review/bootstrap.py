"""A bootstrap 95% interval of micro F1, resampling products (the values of one product are
correlated: one misread title spoils several attributes). Pure numpy; no Django.

F1 of each resample is computed by extraction.engine.metric (the one metric implementation) from
the resample's summed outcome counts. The seed is fixed, so a page shows the same interval on
every load and two runs scored on the same products are resampled alike.
"""

from collections.abc import Sequence

import numpy as np

from extraction.engine.metric import Counts

SAMPLES = 1000
SEED = 14
# Over fewer products a bootstrap interval means little (over one product it is a point, "0.250-0.250"):
# none is given, and pages say how many products are missing. Auto-accept uses the same floor.
MIN_PRODUCTS = 20
CONFIDENCE = 0.95
OUTCOMES = ("VC", "VW", "NV", "VN")  # NN adds to no F1 term


def f1_interval(
    per_product: Sequence[Counts], samples: int = SAMPLES, seed: int = SEED
) -> tuple[float, float] | None:
    """(low, high) percentile interval of micro F1 over `samples` resamples of the products;
    None with fewer than MIN_PRODUCTS products."""
    if len(per_product) < MIN_PRODUCTS:
        return None
    table = np.array([[getattr(c, k) for k in OUTCOMES] for c in per_product], dtype=np.int64)
    rng = np.random.default_rng(seed)
    f1s = np.empty(samples)
    for b in range(samples):
        total = table[rng.integers(0, len(table), size=len(table))].sum(axis=0)
        f1s[b] = Counts(**{k: int(n) for k, n in zip(OUTCOMES, total, strict=True)}).f1
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(f1s, [tail, 100 - tail])
    return float(low), float(high)
