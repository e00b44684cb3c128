"""Run options from the command line: typed against each method's context_schema, clear errors otherwise."""

from __future__ import annotations

import pytest

from graphs.chainrag.context import ChainRAGContext
from hopgraph import Settings, build_graph
from hopgraph.evaluate import _variant_contexts
from hopgraph.options import parse_assignments, parse_methods, typed_options
from hopgraph.providers import ConfigError


def test_variants_name_a_method_and_the_parameters_they_fix() -> None:
    variants = parse_methods(" naive, chainrag ,chainrag+integration=contexts+word_limit=300")
    assert [(v.label, v.method, dict(v.options)) for v in variants] == [
        ("naive", "naive", {}),
        ("chainrag", "chainrag", {}),
        (
            "chainrag+integration=contexts+word_limit=300",
            "chainrag",
            {"integration": "contexts", "word_limit": "300"},
        ),
    ]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("", "No methods"), ("naive,naive", "once"), ("chainrag+rewrite", "KEY=VALUE")],
)
def test_malformed_method_lists_are_refused(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        parse_methods(text)


def test_text_values_take_the_types_the_schema_declares() -> None:
    typed = typed_options(
        ChainRAGContext,
        {"word_limit": "300", "rewrite": "false", "ec_edges": "Yes", "integration": "contexts", "top_k": 4},
        "--set",
    )
    assert typed == {
        "word_limit": 300,
        "rewrite": False,
        "ec_edges": True,
        "integration": "contexts",
        "top_k": 4,
    }
    assert ChainRAGContext(**typed).word_limit == 300


@pytest.mark.parametrize(
    ("options", "fragments"),
    [
        ({"word_limit": "3k"}, ["word_limit='3k'", "integer"]),
        ({"integration": "both"}, ["answers", "contexts"]),
        ({"retrieval_mode": "sparse"}, ["dense", "bm25", "hybrid"]),
        ({"use_graph": "perhaps"}, ["true or false"]),
        ({"wordlimit": "3"}, ["'wordlimit'", "word_limit"]),
    ],
)
def test_bad_values_name_the_option_and_what_it_accepts(
    options: dict[str, str], fragments: list[str]
) -> None:
    with pytest.raises(ConfigError) as raised:
        typed_options(ChainRAGContext, options, "--set")
    for fragment in fragments:
        assert fragment in str(raised.value)


def test_assignments_need_a_key_and_a_value() -> None:
    assert parse_assignments(["word_limit = 300", "integration=contexts"], "--set") == {
        "word_limit": "300",
        "integration": "contexts",
    }
    with pytest.raises(ConfigError, match="--set: 'word_limit' is not KEY=VALUE"):
        parse_assignments(["word_limit"], "--set")


def test_shared_options_go_to_the_methods_that_declare_them(settings: Settings) -> None:
    variants = parse_methods("naive,chainrag+integration=contexts")
    graphs = {m: build_graph(m, settings, checkpointer=False) for m in ("naive", "chainrag")}
    contexts = _variant_contexts(variants, graphs, {"word_limit": "300", "top_k": 2})
    assert contexts == {
        "naive": {"top_k": 2},
        "chainrag+integration=contexts": {"word_limit": 300, "top_k": 2, "integration": "contexts"},
    }
    with pytest.raises(ConfigError, match="widht"):
        _variant_contexts(variants, graphs, {"widht": 3})
