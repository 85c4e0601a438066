"""keras_rs.layers: BruteForceRetrieval."""
from chorus import _chorus

BruteForceRetrieval = _chorus.BruteForceRetrieval

__all__ = ["BruteForceRetrieval"]
