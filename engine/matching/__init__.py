"""The generic matcher: encode a query, rank records, and judge how likely the best one is right.

Nothing here knows about coding agents; ``engine.catalog`` feeds it the capability records.
"""

from .encoder import Encoder, EncoderUnavailableError
from .index import Index
from .results import Candidate, Match
from .scoring import Record, Tuning

__all__ = ["Candidate", "Encoder", "EncoderUnavailableError", "Index", "Match", "Record", "Tuning"]
