"""What a sentence graph is built with and what an index manifest records about it.

The build, the reader and the extra's declaration all need these two types, and none of them should have
to import another's machinery (threads, Chroma) to get them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SentenceGraphParams:
    """The paper's graph parameters (section 4.1: alpha=60, m=10; SA spans three sentences).

    They enter the build id, so changing one builds a new index (reusing spaCy's output and embeddings).
    """

    alpha: int = 60
    similar_m: int = 10
    window: int = 3

    def __post_init__(self) -> None:
        if not 0 < self.alpha <= 100:
            raise ValueError(f"alpha is a percentage of a sentence's entities: 1..100, got {self.alpha}")
        if self.similar_m < 0 or self.window < 0:
            raise ValueError(f"similar_m and window must be >= 0, got {self.similar_m} and {self.window}")


@dataclass
class SentenceGraphInfo:
    """The sentence graph's part of an index manifest: how it was made, its size, where the time went."""

    params: SentenceGraphParams
    nlp: str
    sentences: int
    entities: int
    key_entities: int
    ec_edges: int
    ss_edges: int
    sa_edges: int
    seconds: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SentenceGraphInfo:
        """Inverse of `dataclasses.asdict`, restoring the nested params."""
        return cls(**{**data, "params": SentenceGraphParams(**data["params"])})
