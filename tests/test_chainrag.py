"""ChainRAG over a real sentence graph (real spaCy, MiniLM, Chroma): the loop's stopping rules and
ablations with a scripted chat model (the run with the real local LLM: tests/test_chainrag_local.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langgraph.runtime import Runtime

from graphs import chainrag
from graphs.chainrag.context import ChainRAGContext
from graphs.chainrag.steps import ExpandSentences, word_count
from hopgraph import Settings, index_corpus, services_for
from hopgraph.providers import EmbeddingSimilarityReranker
from stores.evidence import evidence_from
from stores.sentence_graph.extra import SentenceGraphExtra
from tests.scripted import ScriptedChatModel, ScriptedServices, scripted_gateway, stream_run

DOCS = [
    {
        "id": "jaws",
        "title": "Jaws (film)",
        "text": "Jaws is a 1975 American thriller film. It was directed by Steven Spielberg. "
        "The film is set in the fictional town of Amity Island. Roy Scheider plays the police chief. "
        "The score was composed by John Williams. It became the highest-grossing film of its time. "
        + " ".join(f"In week {n} of the shoot the crew filmed scene {n} on the water." for n in range(1, 19)),
    },
    {
        "id": "spielberg",
        "title": "Steven Spielberg",
        "text": "Steven Spielberg is an American filmmaker. Spielberg was born in Cincinnati, Ohio, in 1946. "
        "His family later moved to Phoenix, Arizona. He studied film at California State University.",
    },
    {
        "id": "bees",
        "title": "Honeybee",
        "text": "Honeybees live in colonies. A colony has one queen. Worker bees collect nectar.",
    },
]


@pytest.fixture(scope="module")
def jaws_index(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("jaws") / "docs.jsonl"
    path.write_text("".join(json.dumps(doc) + "\n" for doc in DOCS))
    index_corpus(path, "jaws", settings, method="chainrag")
    return "jaws"


def test_reindexing_without_a_method_keeps_the_sentence_graph(
    settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("keep") / "docs.jsonl"
    path.write_text("".join(json.dumps(doc) + "\n" for doc in DOCS[1:]))
    built = index_corpus(path, "keep-graph", settings, method="chainrag")
    assert "sentence_graph" in built.manifest.extras

    again = index_corpus(path, "keep-graph", settings)  # what `hopgraph index PATH --name N` does
    assert again.status == "unchanged"
    assert again.manifest.extras == built.manifest.extras

    path.write_text(path.read_text() + json.dumps(DOCS[0]) + "\n")  # the corpus grows: a new build
    grown = index_corpus(path, "keep-graph", settings)
    assert grown.status != "unchanged" and grown.manifest.documents == 3
    graph = "sentence_graph"
    assert grown.manifest.extras[graph].sentences > built.manifest.extras[graph].sentences

    dropped = index_corpus(path, "keep-graph", settings, method="naive")  # asked for explicitly
    assert dropped.manifest.extras == {}


def script(judge: list[str]) -> Any:
    """Replies by prompt kind: decomposition, rewrite, judge verdicts in order, then short answers."""
    verdicts = iter(judge)

    def reply(prompt: str) -> str:
        if "JSON array" in prompt:
            return '["Who directed Jaws?", "Where was he born?"]'
        if "Follow-up:" in prompt:
            return "Where was Steven Spielberg born?"
        if "Reply with Yes or No only" in prompt:
            return next(verdicts, "Yes")
        if "Sub-questions and answers" in prompt:
            return "Cincinnati"
        return "Steven Spielberg" if "Who directed" in prompt.split("Question:")[-1] else "Cincinnati"

    return reply


def trace(
    settings: Settings, index: str, judge: list[str], **context: Any
) -> tuple[list[str], dict, ScriptedChatModel]:
    services = services_for(settings)
    llm, model = scripted_gateway(script(judge))
    wired = ScriptedServices(services, llm, reranker=EmbeddingSimilarityReranker(services.embedder))
    graph = chainrag.build(wired).compile()
    steps, values = stream_run(graph, "Where was the director of Jaws born?", {"index": index, **context})
    return steps, values, model


def test_expansion_continues_until_the_judge_is_satisfied(settings: Settings, jaws_index: str) -> None:
    # adjacency edges only, so each expansion reaches a little further along the long Jaws article
    steps, values, _ = trace(
        settings, jaws_index, judge=["No", "No", "Yes"], ec_edges=False, ss_edges=False, word_limit=3000
    )
    first = steps[: steps.index("answer_sub") + 1]
    assert first == ["decompose", "prepare", "seed"] + ["expand", "judge"] * 3 + ["answer_sub"]
    assert steps[-1] == "integrate" and steps.count("prepare") == 2
    first_hop = [item for item in values["evidence"] if item["hop"] == 1]
    assert any("directed by Steven Spielberg" in item["text"] for item in first_hop)
    assert [s["question"] for s in values["solved"]] == [
        "Who directed Jaws?",
        "Where was Steven Spielberg born?",
    ]
    assert values["answer"] == "Cincinnati"
    assert all(item["id"].split("#s")[0] in {"jaws", "spielberg", "bees"} for item in values["evidence"])


def test_expansion_stops_at_the_word_limit_without_asking_the_judge(
    settings: Settings, jaws_index: str
) -> None:
    steps, values, _ = trace(settings, jaws_index, judge=[], word_limit=40)
    assert "judge" not in steps
    assert steps[:5] == ["decompose", "prepare", "seed", "expand", "answer_sub"]
    for hop in (1, 2):
        words = sum(len(item["text"].split()) for item in values["evidence"] if item["hop"] == hop)
        assert 0 < words <= 40


def test_expansion_adds_the_best_first_neighbours_that_fit_the_word_limit(
    settings: Settings, jaws_index: str
) -> None:
    """The longest run of neighbours, most similar to the query first, whose words still fit."""
    services = services_for(settings)
    graph = services.indexes.open(jaws_index).extra(SentenceGraphExtra)
    query = "Who composed the score of Jaws?"
    gathered = [
        evidence_from(seed, 1.0, 1) for seed in graph.spans([i for i, _ in graph.candidates(query, 2)])
    ]
    context = ChainRAGContext(index=jaws_index, word_limit=word_count(gathered) + 25)
    state = {"query": query, "gathered": gathered, "step": 0}
    update = ExpandSentences(services.indexes, services.embedder)(state, Runtime(context=context))
    taken = [item["id"] for item in update["gathered"][len(gathered) :]]
    query_vector = services.embedder.embed([query])[0]
    neighbours = list(graph.neighbors([item["id"] for item in gathered]))
    ranked = sorted(neighbours, key=lambda i: -float(graph.embeddings([i])[0] @ query_vector))
    assert taken == ranked[: len(taken)] and 0 < len(taken) < len(ranked)
    words = word_count(update["gathered"])
    assert words <= context.word_limit < words + int(graph.word_counts([ranked[len(taken)]])[0])
    assert update["stop"] == "word_limit" and update["expansions"] == 1


def test_edge_ablations_restrict_expansion_to_the_enabled_kinds(settings: Settings, jaws_index: str) -> None:
    graph = services_for(settings).indexes.open(jaws_index).extra(SentenceGraphExtra)
    for kinds in (
        {"sa_edges": True, "ec_edges": False, "ss_edges": False},
        {"sa_edges": False, "ec_edges": False, "ss_edges": True},
    ):
        _, values, _ = trace(settings, jaws_index, judge=["Yes", "Yes"], **kinds)
        hop1 = [item for item in values["evidence"] if item["hop"] == 1]
        seeds, expanded = hop1[:3], hop1[3:]
        kind = "SA" if kinds["sa_edges"] else "SS"
        assert expanded, f"{kind} edges alone expanded nothing: the check below would hold vacuously"
        for item in expanded:
            assert any(kind in graph.edge(item["id"], seed["id"]) for seed in seeds)
    _, none, _ = trace(settings, jaws_index, judge=[], ec_edges=False, ss_edges=False, sa_edges=False)
    assert (
        len([item for item in none["evidence"] if item["hop"] == 1]) == 3
    )  # seeds only: nothing to expand to


def test_without_the_graph_sub_questions_retrieve_chunks_and_never_expand(
    settings: Settings, jaws_index: str
) -> None:
    steps, values, _ = trace(settings, jaws_index, judge=[], use_graph=False, top_k=2)
    assert "expand" not in steps and "judge" not in steps
    assert all("#s" not in item["id"] for item in values["evidence"])  # chunk ids, not sentence ids


def test_without_rewriting_the_second_sub_question_keeps_its_pronoun(
    settings: Settings, jaws_index: str
) -> None:
    _, values, model = trace(settings, jaws_index, judge=["Yes", "Yes"], rewrite=False)
    assert values["solved"][1]["question"] == "Where was he born?"
    assert not any("Follow-up:" in prompt for prompt in model.prompts)


def test_context_integration_answers_from_reranked_sentences(settings: Settings, jaws_index: str) -> None:
    _, _, model = trace(settings, jaws_index, judge=["Yes", "Yes"], integration="contexts")
    final_prompt = model.prompts[-1]
    assert "Sub-questions and answers" not in final_prompt
    assert "Question: Where was the director of Jaws born?" in final_prompt
    assert "Spielberg was born in Cincinnati" in final_prompt
