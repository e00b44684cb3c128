"""The roles an LLM call is made for: the names `[roles.NAME]` in hopgraph.toml can give a model of its own.

One list, read at both ends: the LLM gateway refuses a call for a role not listed (so a method that adds a
role must add it here, and its tests fail until it does), and the settings refuse an override for one (so a
misspelt or imagined role, such as ReSP's "planner", is an error instead of an override that does nothing).
"""

from __future__ import annotations

ROLES: dict[str, str] = {
    "generator": "answers: the readers, sub-answers, AnsInt's integration, IR-CoT's and Iter-RetGen's chains",
    "reasoner": "ReSP's judge and planner; IR-CoT's reasoning step",
    "summarizer": "ReSP's two summaries; ChainRAG's summary of an unanswered sub-question",
    "judge": "ChainRAG's sufficiency judge",
    "rewriter": "ChainRAG's rewrite of a sub-question with the answers before it",
    "decomposer": "query decomposition, NaiveRAG w/ QD and ChainRAG: the sub-questions",
    "extractor": "Multi-Meta-RAG's metadata filter read from the question",
    "question_writer": "index time: QuOTE's and BiQOG's questions for each chunk",
    "edge_judge": "index time: BiQOG's yes / no for each question and candidate chunk",
}
