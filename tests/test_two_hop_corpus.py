"""The two-hop corpus is what its tests take it for (no LLM): the paragraph that answers the bridge question
is out of reach of the question's own search in every retrieval mode, at the multi-hop methods' default k,
while the first hop's paragraph leads it."""

from __future__ import annotations

import pytest

from hopgraph import Settings, services_for
from nodes.retrieve import search_evidence
from tests import two_hop

# the largest per-query k among the methods whose tests assert a second hop (IR-CoT's top_k, 6) with a
# margin of two
REACH = 8


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_the_second_hop_is_not_among_the_questions_own_results(
    settings: Settings, two_hop_index: str, mode: str
) -> None:
    index = services_for(settings).indexes.open(two_hop_index)
    found = [item["doc_id"] for item in search_evidence(index, two_hop.BRIDGE, REACH, 1, mode=mode)]
    assert two_hop.BRIDGE_SECOND not in found and found[:2].count(two_hop.BRIDGE_FIRST) == 1, found


def test_each_paragraph_is_one_chunk_with_its_source_and_date(settings: Settings, two_hop_index: str) -> None:
    chunks = services_for(settings).indexes.open(two_hop_index).all_chunks()
    sources = two_hop.source_of()
    assert sorted(chunk.doc_id for chunk in chunks) == sorted(sources)
    assert all(chunk.metadata["published_at"] for chunk in chunks) and two_hop.SOURCE in sources.values()
    assert {two_hop.BRIDGE_FIRST, two_hop.BRIDGE_SECOND, two_hop.SOURCE_DOC} <= sources.keys()
    assert sources.keys() >= two_hop.COMPARISON_DOCS
