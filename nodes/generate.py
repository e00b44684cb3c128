"""Generate: answer the question from the gathered evidence, never with a refusal when there is evidence."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime

from nodes.context import PassageOrder, RetrievalContext, context_of
from nodes.llm import LLMGateway, LLMReply
from nodes.state import LLMUsage
from nodes.window import MESSAGE_TOKENS, estimated_tokens
from prompts import answer, refusal_check
from prompts.echo import NUDGE, EchoGuard
from stores.evidence import Evidence

# answered: the reply answered; unanswerable: a refusal kept on purpose (context `unanswerable`; with
# `refusal_check`, only after the check found a fact missing or could not be read); checked: a refusal the
# check overturned, every fact the question needs stated, the answer the check's; best_span: a refusal
# replaced by the reply to one nudge for the best answer from the evidence; refused: a refusal with no
# evidence to answer from, or a second refusal (the answer is then empty).
AnswerOutcome = Literal["answered", "unanswerable", "checked", "best_span", "refused"]
# How a reply longer than a short span became the answer (`answer_shortening`; the reply itself is kept as
# `answer_sentence`): yes_no, the Yes / No a yes-no question's reply opens with; restatement, the words
# after the verb of a reply that restates the question; model, the generator's own words when asked which
# words of its reply answer; kept, none of these gave a usable span and the reply stands; choice, a question
# offering two options whose answer named neither, replaced by the option whose passages name the answer,
# or else by the one the generator chose when asked (a yes-no question's options are Yes and No).
Shortening = Literal["yes_no", "restatement", "model", "kept", "choice"]
SHORTEN_TOKENS = 24  # a span, never a sentence
CHECK_TOKENS = 320  # a few facts and a short answer: on MultiHop-RAG 3 of 29 checks ran past 200 (long facts)


def shortened(
    llm: LLMGateway,
    question: str,
    conversation: Sequence[BaseMessage],
    text: str,
    passages: Sequence[Evidence] = (),
) -> dict:
    """The update that makes `text`, the cleaned last reply of `conversation`, the answer the benchmarks
    score: its short span (`cut_to_span`), then, for a question offering two options whose span names
    neither, one of them: the option whose own passages (of `passages`, what the reader read) name the
    span, else the one the generator chooses (`chosen`); for a yes-no question whose span is neither word,
    the word the generator chooses. Empty when `text` already is that answer."""
    cut = cut_to_span(llm, question, conversation, text)
    span = cut.get("answer", text)
    if answer.is_yes_no_question(question):
        if answer.yes_no(question, span) is not None:
            return cut
        return chosen(
            llm,
            conversation,
            text,
            cut,
            answer.yes_no_request(),
            lambda said: answer.yes_no(question, said),
            "the answer was neither yes nor no",
        )
    options = answer.choices(question)
    if options is None or answer.named_options(span, options):
        return cut
    if option := answer.option_of(span, options, passages):
        return {**cut, **_shortened(text, option, "choice")}
    return chosen(
        llm,
        conversation,
        text,
        cut,
        answer.choice_request(options),
        lambda said: named[0] if len(named := answer.named_options(said, options)) == 1 else None,
        "the answer named neither option",
    )


def chosen(
    llm: LLMGateway,
    conversation: Sequence[BaseMessage],
    text: str,
    cut: dict,
    request: str,
    pick: Callable[[str], str | None],
    lacking: str,
) -> dict:
    """The generator asked by `request`, the conversation continued, for the one of the question's options
    its answer `text` lacks (`lacking` says how): the option `pick` reads in its reply (as the question
    words it, or yes / no) becomes the answer, `text` kept as `answer_sentence`. A reply naming none, or
    more than one, leaves `cut` (the span update of `text`, empty when `text` was one) as it was, recorded
    in `fallbacks`."""
    asked = [*conversation, HumanMessage(request)]
    reply = llm.complete("generator", asked, max_tokens=SHORTEN_TOKENS, guard=answer.GUARD)
    said = answer.clean(reply.text)
    usage = [*cut.get("usage", []), reply.usage]
    if option := pick(said):
        return {**cut, **_shortened(text, option, "choice"), "usage": usage}
    note = f"choice: {lacking}; asked for one, the model replied {said!r}: the answer kept"
    return {**cut, "usage": usage, "fallbacks": [*cut.get("fallbacks", []), note]}


def cut_to_span(llm: LLMGateway, question: str, conversation: Sequence[BaseMessage], text: str) -> dict:
    """The update that makes `text`, the cleaned last reply of `conversation`, the short span the benchmarks
    score (EM and F1 credit "Rome", not "Ronzalli left Venice for the conclave in Rome"); empty when it
    already is one (at most `answer.SHORT_WORDS` words, and not a Yes / No with more after it).

    Rules first, since they cost nothing and cannot invent: the Yes / No a yes-no question's reply opens
    with; the words after the verb of a reply that restates the question. Otherwise the generator is
    asked, the conversation continued so its KV prefix is reused, to copy the words of its reply that
    answer the question; a reply that is empty, a refusal, an echo or no shorter is not used and the
    sentence stands, recorded in `fallbacks`.
    """
    said = answer.yes_no(question, text)
    if said is not None:
        return {} if said == text.lower() else _shortened(text, said, "yes_no")
    if len(text.split()) <= answer.SHORT_WORDS:
        return {}
    restated = answer.after_restatement(question, text)
    if restated:
        return _shortened(text, restated, "restatement")
    asked = [*conversation, HumanMessage(answer.shorten_request(question))]
    reply = llm.complete("generator", asked, max_tokens=SHORTEN_TOKENS, guard=answer.GUARD)
    short = answer.clean(reply.text)
    if short and not answer.is_refusal(short) and len(short.split()) < len(text.split()):
        said = answer.yes_no(question, short)  # "No inconsistency": the word the benchmarks score
        return {**_shortened(text, said or short, "yes_no" if said else "model"), "usage": [reply.usage]}
    return {
        **_shortened(text, text, "kept"),
        "usage": [reply.usage],
        "fallbacks": [f"shorten: asked which words answer, the model replied {short!r}: the reply kept"],
    }


def answered(
    llm: LLMGateway,
    question: str,
    asked: Sequence[BaseMessage],
    reply: LLMReply,
    text: str,
    passages: Sequence[Evidence] = (),
) -> dict:
    """The update of a final reader whose cleaned reply `text` answered: its span (`shortened`, over the
    `passages` the reader read), outcome "answered", and the usage of both calls, for readers that ask
    outside `final_answer`."""
    cut = shortened(llm, question, [*asked, AIMessage(reply.text)], text, passages)
    update = {"answer": text, "answer_outcome": "answered", **cut}
    return {**update, "usage": [reply.usage, *cut.get("usage", [])]}


def _shortened(sentence: str, span: str, how: Shortening) -> dict:
    return {"answer": span, "answer_sentence": sentence, "answer_shortening": how}


def best_answer(
    llm: LLMGateway, conversation: Sequence[BaseMessage], max_tokens: int, guard: EchoGuard
) -> tuple[list[BaseMessage], str, LLMUsage]:
    """The reader asked once more, after its refusal (the last turn of `conversation`), for its best answer
    from the passages (answer.REFUSAL_NUDGE, the KV prefix reused): the conversation continued, the cleaned
    reply and the call's usage."""
    asked = [*conversation, HumanMessage(answer.REFUSAL_NUDGE)]
    reply = llm.complete("generator", asked, max_tokens=max_tokens, guard=guard)
    return [*asked, AIMessage(reply.text)], answer.clean(reply.text), reply.usage


def checked_refusal(llm: LLMGateway, conversation: Sequence[BaseMessage], max_tokens: int) -> dict:
    """The refusal check (prompts.refusal_check) on a reader's refusal, the last turn of `conversation`:
    an update with `refusal_check` (the verdict and the facts) and the calls' usage, plus `answer`,
    `answer_outcome` "checked" and the conversation continued (`conversation`, for `shortened`) when
    every fact was stated. The answer is the check's; when it gave none (the 1.5B model sometimes leaves
    it empty with every fact stated), the reader is asked once more, in the same conversation, for its
    best answer (up to `max_tokens`), recorded in `fallbacks`. Otherwise the refusal stands: a fact
    missing is the check's verdict; a reply with no usable fact list, or a second refusal, is a fallback,
    recorded."""
    asked = [*conversation, refusal_check.request()]
    reply = llm.complete(
        "generator", asked, max_tokens=CHECK_TOKENS, guard=refusal_check.GUARD, shape=refusal_check.REPLY
    )
    found, notes = refusal_check.parse(reply.text, structured=reply.structured)
    fallbacks = [f"refusal check: {note}" for note in notes]
    update: dict[str, Any] = {"usage": [reply.usage]}
    if found is None:
        update["refusal_check"] = {"verdict": "unread", "facts": []}
        return {**update, "fallbacks": [*fallbacks, "refusal check: reply unread: the refusal kept"]}
    verdict = "stated" if found.all_stated else "missing"
    update["refusal_check"] = {"verdict": verdict, "facts": found.record()}
    asked = [*asked, AIMessage(reply.text)]
    text = answer.clean(found.answer)
    if verdict == "stated" and (not text or answer.is_refusal(text)):
        asked, text, usage = best_answer(llm, asked, max_tokens, answer.GUARD)
        update["usage"].append(usage)
        kept = answer.is_refusal(text)
        fallbacks.append(
            "refusal check: every fact stated but no answer given: asked for the best answer, "
            + ("which refused again: the refusal kept" if kept else "which answered")
        )
    if verdict == "stated" and not answer.is_refusal(text):
        update |= {"answer": text, "answer_outcome": "checked", "conversation": asked}
    return {**update, "fallbacks": fallbacks} if fallbacks else update


def follow_up_tokens(
    question: str, max_tokens: int, count: Callable[[Sequence[BaseMessage]], int] = estimated_tokens
) -> int:
    """Tokens that `final_answer`'s later turns may add to its first prompt, the turns counted by `count`
    (the reader's own: nodes.llm.RoleModel.count_prompt): a reader's prompt fits its window only if these
    fit beside it.

    Every turn any of its paths appends, summed, since each path appends some of them: the reply, the
    nudge for a best answer and its reply, the refusal check and its reply, the request for the span and
    its reply, a choice or yes-no question's request for one of its options and its reply, and an echo's
    retry (its nudge and one more reply of the longest of these caps)."""
    asked = [
        HumanMessage(answer.REFUSAL_NUDGE),
        refusal_check.request(),
        HumanMessage(answer.shorten_request(question)),
        HumanMessage(NUDGE),
    ]
    replies = [max_tokens, max_tokens, CHECK_TOKENS, SHORTEN_TOKENS, max(max_tokens, CHECK_TOKENS)]
    if answer.is_yes_no_question(question):
        asked.append(HumanMessage(answer.yes_no_request()))
        replies.append(SHORTEN_TOKENS)
    elif (options := answer.choices(question)) is not None:
        asked.append(HumanMessage(answer.choice_request(options)))
        replies.append(SHORTEN_TOKENS)
    return count(asked) + sum(replies) + MESSAGE_TOKENS * len(replies)


def final_answer(
    llm: LLMGateway,
    question: str,
    messages: Sequence[BaseMessage],
    *,
    max_tokens: int,
    guard: EchoGuard,
    has_evidence: bool,
    unanswerable: bool,
    check_refusal: bool = False,
    passages: Sequence[Evidence] = (),
) -> dict:
    """Ask the generator for the final answer; a partial state update with the answer and its outcome.

    A refusal ("Insufficient information.") scores as a miss even when the evidence holds the answer, so
    unless the method keeps refusals on purpose it is asked once more, reply and nudge appended (the KV
    prefix is reused), for its best answer; a second refusal leaves the answer empty and says so. Where
    refusals are kept on purpose, `check_refusal` has the reader check its refusal fact by fact
    (`checked_refusal`) and keep it only when a fact is missing. An answer longer than a short span is
    then cut to one (`shortened`, which reads `passages`, the evidence the reader was given, for a choice
    question's option).
    """
    reply = llm.complete("generator", messages, max_tokens=max_tokens, guard=guard)
    text, usage = answer.clean(reply.text), [reply.usage]
    conversation = [*messages, AIMessage(reply.text)]
    outcome: AnswerOutcome = "answered"
    extra: dict[str, Any] = {}
    if answer.is_refusal(text):
        outcome = "unanswerable" if unanswerable else "refused"
        if unanswerable and check_refusal and has_evidence:
            extra = checked_refusal(llm, conversation, max_tokens)
            usage += extra.pop("usage")
            conversation = extra.pop("conversation", conversation)
            text = extra.pop("answer", text)
            outcome = extra.pop("answer_outcome", outcome)
        if not unanswerable and has_evidence:
            conversation, text, retry_usage = best_answer(llm, conversation, max_tokens, guard)
            usage.append(retry_usage)
            outcome = "refused" if answer.is_refusal(text) else "best_span"
        if outcome == "refused":
            text = ""
    update: dict[str, Any] = {"answer": text, "answer_outcome": outcome, "usage": usage, **extra}
    if outcome in ("answered", "checked", "best_span"):
        cut = shortened(llm, question, conversation, text, passages)
        fallbacks = [*extra.get("fallbacks", []), *cut.get("fallbacks", [])]
        update |= {**cut, "usage": usage + cut.get("usage", [])}
        if fallbacks:
            update["fallbacks"] = fallbacks
    return update


class ReaderParameters(Protocol):
    """What the shared reader reads of a run's context (every method's context has these)."""

    max_answer_tokens: int
    unanswerable: bool
    refusal_check: bool
    passage_order: PassageOrder


def reader_messages(question: str, passages: Sequence[Evidence], ctx: ReaderParameters) -> list[BaseMessage]:
    """The shared reader's prompt over `passages` under the run's settings (prompts.answer)."""
    return answer.messages(
        question, passages, unanswerable=ctx.unanswerable, best_last=ctx.passage_order == "best_last"
    )


def read_passages(
    llm: LLMGateway, question: str, passages: Sequence[Evidence], ctx: ReaderParameters
) -> dict:
    """The shared reader's final answer over `passages` (prompts.answer), under the run's answer budget and
    refusal settings: what NaiveRAG's reader, CxtInt and a chain-of-thought reader's fallback all ask."""
    return final_answer(
        llm,
        question,
        reader_messages(question, passages, ctx),
        max_tokens=ctx.max_answer_tokens,
        guard=answer.GUARD,
        has_evidence=bool(passages),
        unanswerable=ctx.unanswerable,
        check_refusal=ctx.refusal_check,
        passages=passages,
    )


class Generate:
    """The reader: one LLM call over the passages in `passages` (all evidence by default; Multi-Meta-RAG
    reads the best few of its reranked evidence, kept in `gathered`, BiQOG its final rerank, kept in
    `ranked`), role "generator"; it records the ids it read, in order, as `read`. Reads `question` and
    the passages' key; writes `answer`, `answer_outcome`, `read`, `usage`, `fallbacks`.

    The state is annotated as a plain Mapping, as in `nodes.retrieve.Retrieve`: LangGraph hands a node
    annotated with a TypedDict only that TypedDict's keys, and the key it reads is the graph's choice."""

    def __init__(self, llm: LLMGateway, passages: str = "evidence") -> None:
        self.llm = llm
        self.passages = passages

    def __call__(self, state: Mapping[str, Any], runtime: Runtime[RetrievalContext]) -> dict:
        ctx = context_of(runtime.context, RetrievalContext)
        evidence = state.get(self.passages, [])
        answered = read_passages(self.llm, state["question"], evidence, ctx)
        return {**answered, "read": [item["id"] for item in evidence]}
