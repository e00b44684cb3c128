"""Metadata for filters, as an index extra: what a corpus says about its documents, made searchable.

Documents carry their metadata into every chunk's Chroma metadata (stores.index), so an equality filter
such as {"source": "TechCrunch"} works on any index. Two things do not:
- dates: MultiHop-RAG's `published_at` is an ISO string, and Chroma compares only numbers with `$gte` /
  `$lte`, so a date range needs a numeric twin. This extra adds `<date field>_ts` (seconds since the epoch,
  UTC; a date without a zone is read as UTC) to the metadata of every chunk whose date parses;
- knowing what there is to filter on: a filter naming a source the index does not hold matches nothing,
  and an LLM asked for a filter must be shown the sources that exist. The extra records in the manifest
  the document metadata fields, the distinct values of the source field and the range of the dates.

It is an extra rather than part of every build so that indexes built before it keep their build ids (the
numeric field would otherwise have to enter the chunk part's id): adding it to an index (`hopgraph index
PATH --name NAME --with metadata`) copies the chunks and only writes the new field. The store never
interprets the fields: which is the source and which the date are the extra's parameters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from stores.extras import Extra, ExtraBuild, ExtraSource
from stores.files import batches

if TYPE_CHECKING:
    from stores.chunking import Chunk

TIMESTAMP_SUFFIX = "_ts"
_UPDATE_BATCH = 500


@dataclass(frozen=True)
class MetadataParams:
    """Which document metadata field names the source and which the publication date (MultiHop-RAG's)."""

    source_field: str = "source"
    date_field: str = "published_at"


@dataclass(frozen=True)
class MetadataInfo:
    """The manifest's record of an index's metadata, and what queries open: the filterable fields.

    `fields`: every document metadata field some chunk has (the numeric twin included); `sources`: the
    distinct values of the source field, sorted (empty when no document has one); `dated`: chunks whose
    date parsed; `first_date` / `last_date`: the range of those dates (ISO dates, None when none parsed).
    """

    params: MetadataParams
    fields: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    dated: int = 0
    first_date: str | None = None
    last_date: str | None = None

    @property
    def timestamp_field(self) -> str:
        """The numeric field a date range filters on."""
        return self.params.date_field + TIMESTAMP_SUFFIX

    @property
    def filterable(self) -> bool:
        """Whether the index has anything to filter by (a corpus without metadata has not)."""
        return bool(self.sources) or self.dated > 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MetadataInfo:
        return cls(**{**data, "params": MetadataParams(**data["params"])})


def timestamp(value: Any) -> int | None:
    """Seconds since the epoch of an ISO date or date-time (UTC when it names no zone); None otherwise."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp())


def describe(chunks: Sequence[Chunk], params: MetadataParams) -> tuple[MetadataInfo, dict[str, int]]:
    """The metadata record of `chunks`, and the timestamp of each chunk whose date parses, by chunk id."""
    twin = params.date_field + TIMESTAMP_SUFFIX
    stamps = {
        chunk.id: stamp
        for chunk in chunks
        if (stamp := timestamp(chunk.metadata.get(params.date_field))) is not None
    }
    fields = {key for chunk in chunks for key in chunk.metadata} | ({twin} if stamps else set())
    sources = {
        value.strip()
        for chunk in chunks
        if isinstance(value := chunk.metadata.get(params.source_field), str) and value.strip()
    }
    days = [datetime.fromtimestamp(stamp, UTC).date().isoformat() for stamp in stamps.values()]
    info = MetadataInfo(
        params=params,
        fields=sorted(fields),
        sources=sorted(sources),
        dated=len(stamps),
        first_date=min(days, default=None),
        last_date=max(days, default=None),
    )
    return info, stamps


class MetadataExtra(Extra[MetadataParams, MetadataInfo, MetadataInfo]):
    """Numeric dates on the chunks and the manifest's record of sources and fields (module docstring)."""

    name = "metadata"
    description = "filterable metadata: numeric dates and the list of sources, for metadata filters"
    params_type = MetadataParams
    directory = "metadata"

    def build(self, job: ExtraBuild[MetadataParams]) -> tuple[MetadataInfo, bool]:
        """Write the numeric date of every dated chunk into the chunks collection.

        Writing a chunk's full metadata again is idempotent, so an interrupted build simply runs again.
        """
        chunks = job.chunks()
        info, stamps = describe(chunks, job.params)
        collection = job.chroma.get("chunks")
        dated = [chunk for chunk in chunks if chunk.id in stamps]
        done = 0
        job.report("metadata", done, len(dated))
        for batch in batches(dated, _UPDATE_BATCH):
            current = collection.get(ids=[chunk.id for chunk in batch], include=["metadatas"])
            collection.update(
                ids=current["ids"],
                metadatas=[
                    {**meta, info.timestamp_field: stamps[chunk_id]}
                    for chunk_id, meta in zip(current["ids"], current["metadatas"], strict=True)
                ],
            )
            done += len(batch)
            job.report("metadata", done, len(dated))
        return info, False

    def open(self, source: ExtraSource[MetadataInfo]) -> MetadataInfo:
        return source.info

    def info_from_dict(self, data: dict[str, Any]) -> MetadataInfo:
        return MetadataInfo.from_dict(data)


METADATA = MetadataExtra()
