"""IR-CoT (seed 004 §2.3; Trivedi et al., StonyBrookNLP/ircot): retrieval interleaved with a chain of thought,
then a separate reader over the paragraphs gathered.

START -> retrieve -> reason
reason -> retrieve   the new sentence is the next query (K more paragraphs, within the 15-paragraph budget)
reason -> reason     the sentence only concludes ("So ...", "Thus ..."): nothing new to search for
reason -> generate   reasoning stopped ("answer is", the iteration cap, or a reply with no usable sentence)
                     and the reader is direct (the shared reader, as NaiveRAG answers)
reason -> read_cot   reasoning stopped and the reader is the chain-of-thought one
generate -> END, read_cot -> END
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphs.ircot.context import IRCoTContext
from graphs.ircot.state import IRCoTOutput, IRCoTState
from graphs.ircot.steps import GatherParagraphs, Reason
from nodes.chain_of_thought import ChainOfThoughtReader
from nodes.context import context_of
from nodes.generate import Generate
from nodes.protocols import GraphServices
from nodes.state import QuestionInput
from prompts.ircot import is_conclusion


def after_reason(
    state: IRCoTState, runtime: Runtime[IRCoTContext]
) -> Literal["read_cot", "generate", "reason", "retrieve"]:
    if state.get("stop"):
        return "read_cot" if context_of(runtime.context, IRCoTContext).reader == "cot" else "generate"
    return "reason" if is_conclusion(state["reasoning"][-1]) else "retrieve"


def build(services: GraphServices) -> StateGraph:
    graph = StateGraph(
        IRCoTState, context_schema=IRCoTContext, input_schema=QuestionInput, output_schema=IRCoTOutput
    )
    graph.add_node("retrieve", GatherParagraphs(services.indexes))
    graph.add_node("reason", Reason(services.llm, services.nlp))
    graph.add_node("generate", Generate(services.llm))
    graph.add_node("read_cot", ChainOfThoughtReader(services.llm, services.nlp))
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "reason")
    graph.add_conditional_edges("reason", after_reason, ["retrieve", "reason", "generate", "read_cot"])
    graph.add_edge("generate", END)
    graph.add_edge("read_cot", END)
    return graph
