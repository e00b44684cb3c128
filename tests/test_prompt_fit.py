"""Every method's prompts, at its defaults, fit the embedded model's default context window, counted in the
GGUF's own tokens. No LLM runs: a default that would overflow `local_n_ctx` fails here, not as a llama.cpp
error partway through an evaluation.

How the worst case is reached. Each method's real graph runs at its default context over the bundled
sample corpus, indexed with the default chunking (256-token chunks, the metadata line shown with every
passage), asked the sample question. Its chat model is scripted (`WorstCase`, named as what it is): every
reply is as long as the call's `max_tokens` allows and steers the method down its longest path. The
sufficiency judges say No (ChainRAG expands to its word limit, ReSP runs its three rounds); IR-CoT's
reasoner never says "answer is" (eight steps, fifteen paragraphs), nor do Iter-RetGen's chains (a new one
each time, so it never converges, and the direct reader answers after the last); readers refuse first,
give a long answer when nudged, then are asked for its span; only the first sub-question is answered (so
ChainRAG rewrites the second and summarises the unanswered ones into the notes of the last); and AnsInt
refuses (so the answer is read from the contexts: ChainRAG's every gathered sentence, more than the window
holds, so cut at the window; NaiveRAG w/ QD's up to its word limit).
A test per method checks that its run took that path.

What is counted. Each prompt is rendered with the GGUF's chat template and tokenized by its vocabulary
(llama.cpp loaded with `vocab_only`: the tokenizer without the weights), as `LocalLlamaChat` sends it. A call
fits when, even if its reply were an echo of the prompt and the gateway asked again (prompts.echo: the reply
and a nudge appended), that retried prompt plus the call's `max_tokens` stays within the window. CxtInt
cuts its prompt to the window by counting it as its model does (nodes.window): for the local model, its
texts in the GGUF's vocabulary plus allowances for the template, and for a provider's model an estimate
made without a tokenizer. Every prompt of every run here checks that neither count is below the rendered
prompt's, and texts of figures, code, symbols, names and other languages check the estimate.

QuOTE and BiQOG read through the shared reader (nodes.generate.Generate) at top_k = 5 chunks, the prompt
NaiveRAG's run measures; their own prompts are the index-time ones, measured on the longest chunk.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, PrivateAttr

from graphs.registry import METHODS, builder
from hopgraph import Settings, index_corpus, services_for
from hopgraph.cli import SAMPLE_CORPUS, SAMPLE_QUESTION
from hopgraph.local_model import _ROLE, LocalLlamaChat
from hopgraph.providers import Services
from nodes.edge_judge import LLMEdgeJudge
from nodes.integrate import word_count
from nodes.llm import LLMGateway, RoleModel
from nodes.questions import LLMQuestionWriter
from nodes.window import estimated_text_tokens, estimated_tokens, prompt_tokens
from prompts import answer, ircot, reader, resp_reasoner, resp_summarizer
from prompts.echo import NUDGE
from stores.questions import QuestionParams
from tests.scripted import ScriptedServices, stream_run

N_CTX = Settings.model_fields["local_n_ctx"].default
# Words of a reply that restates nothing of the question (a restatement would be cut by rule, not asked)
FILLER = (
    "Moreover the committee reviewed several archived reports about regional transport budgets, harbour "
    "repairs, school meals and the winter road programme before the council met again in the spring "
)


class GGUFTokens:
    """Prompt sizes as llama.cpp counts them: the chat rendered by the GGUF's own template, then tokenized by
    its own vocabulary (loaded alone with `vocab_only`, without the 1.1 GB of weights)."""

    def __init__(self, gguf: Path) -> None:
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.llama = Llama(model_path=str(gguf), vocab_only=True, verbose=False)
        # how hopgraph.providers has the local model count a prompt, to size it to the window
        self.count_prompt = functools.partial(
            prompt_tokens, text_tokens=LocalLlamaChat(model_path=str(gguf)).count_tokens
        )
        special = {"eos_token": self.llama.token_eos(), "bos_token": self.llama.token_bos()}
        tokens = {name: self._piece(token) if token != -1 else "" for name, token in special.items()}
        self.template = Jinja2ChatFormatter(template=self.llama.metadata["tokenizer.chat_template"], **tokens)

    def _piece(self, token: int) -> str:
        return self.llama.detokenize([token], special=True).decode("utf-8")

    def tokens(self, text: str) -> list[int]:
        return self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def prompt(self, messages: list[BaseMessage]) -> int:
        """Tokens of `messages` as a chat completion's prompt (the assistant's turn opened)."""
        chat = [{"role": _ROLE[m.type], "content": str(m.content)} for m in messages]
        rendered = self.template(messages=chat)
        encoded = rendered.prompt.encode("utf-8")
        return len(self.llama.tokenize(encoded, add_bos=not rendered.added_special, special=True))

    def text(self, n: int, start: str = "", end: str = "") -> str:
        """`start`, then FILLER words, then `end`: at most `n` tokens in all (the reply a cap allows)."""
        room = n - len(self.tokens(start)) - len(self.tokens(end))
        body = self.llama.detokenize(self.tokens(FILLER * (1 + n // 10))[: max(room, 0)])
        return f"{start}{body.decode('utf-8', errors='ignore').rstrip(' ,')}{end}"


@dataclass(frozen=True)
class Call:
    """One LLM call as sent: its node and role, its prompt in tokens, the prompt of its echo retry (the reply
    at its cap and the nudge appended), its reply cap, and its prompt as the local model counts it and as
    nodes.window estimates it for a provider's model."""

    node: str
    role: str
    prompt: int
    retried: int
    max_tokens: int
    counted: int
    estimated: int

    @property
    def needs(self) -> int:
        return self.retried + self.max_tokens


class WorstCase(BaseChatModel):
    """A scripted chat model: `reply(role, messages, max_tokens)` gives each completion; every call is
    measured in the GGUF's tokens and kept in `.calls`."""

    reply: Callable[[str, list[BaseMessage], int], str]
    count: GGUFTokens
    _calls: list[Call] = PrivateAttr(default_factory=list)

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @property
    def _llm_type(self) -> str:
        return "scripted-worst-case"

    @property
    def calls(self) -> list[Call]:
        return self._calls

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        metadata = run_manager.metadata if run_manager else {}
        role, max_tokens = str(metadata.get("role", "")), int(kw["max_tokens"])
        text = self.reply(role, messages, max_tokens)
        echoed = [*messages, AIMessage(self.count.text(max_tokens)), HumanMessage(NUDGE)]
        node = str(metadata.get("node", role))
        prompt, retried = self.count.prompt(messages), self.count.prompt(echoed)
        counted, estimated = self.count.count_prompt(messages), estimated_tokens(messages)
        self._calls.append(Call(node, role, prompt, retried, max_tokens, counted, estimated))
        used = len(self.count.tokens(text))
        usage = {"input_tokens": 0, "output_tokens": used, "total_tokens": used}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text, usage_metadata=usage))])


def sub_questions(count: GGUFTokens, max_tokens: int) -> list[str]:
    """The decomposer's reply items: as many 40-token sub-questions as its cap holds; the first answerable
    alone, every later one pointing back with a pronoun (so ChainRAG rewrites or summarises for it)."""
    n = max_tokens // 40
    each = (max_tokens - 2) // n - 4  # JSON quotes, commas and brackets
    first = count.text(each, "Which electric pickup did TechCrunch write about, after ", "?")
    later = [count.text(each, f"What did he say about it ({i}), after ", "?") for i in range(2, n + 1)]
    return [first, *later]


def worst_replies(count: GGUFTokens) -> Callable[[str, list[BaseMessage], int], str]:
    """Replies that take each method's longest path, each as long as its cap allows (module docstring)."""
    asked: list[str] = []  # the decomposition's sub-questions, once written
    replies = iter(range(1, 10_000))  # numbers that keep each long reply distinct from the earlier ones

    def fill(max_tokens: int, start: str = "", end: str = "") -> str:
        return count.text(max_tokens, f"{start}({next(replies)}) ", end)

    def reply(role: str, messages: list[BaseMessage], max_tokens: int) -> str:
        system, last = str(messages[0].content), str(messages[-1].content)
        if role == "decomposer":
            asked[:] = sub_questions(count, max_tokens)
            return json.dumps(asked)
        if role == "question_writer":  # the count asked for, each question at its 40-token share of the cap
            lines = range(1, max_tokens // 40 + 1)
            return "\n".join(fill(36, f"{line}. What did the council say about ", "?") for line in lines)
        if role in ("judge", "edge_judge"):
            return "No" if role == "judge" else "Yes"
        if role == "rewriter":
            return fill(max_tokens, "Where did he go", "?")
        if role == "summarizer":  # ChainRAG's summary, ReSP's global evidence, or its local pathway (Yes)
            return fill(max_tokens, "Yes, " if resp_summarizer.LOCAL_INSTRUCTION in last else "")
        if role == "reasoner" and system.startswith(resp_reasoner.SYSTEM):
            if resp_reasoner.JUDGE_INSTRUCTION in last:
                return "No"
            return fill(max_tokens, "Which council met", "?")  # the planner: a new sub-question
        if role == "reasoner":  # IR-CoT's: a step of the chain that concludes nothing
            return fill(max_tokens, "The report", ".")
        if system.startswith(ircot.SYSTEM):  # a whole chain (Iter-RetGen's generation) with no answer
            return fill(max_tokens, "The report", ".")
        if role == "extractor":
            return fill(max_tokens)  # no JSON: the source matcher stands in
        if last == answer.REFUSAL_NUDGE:
            return fill(max_tokens, "The council")
        if answer.SHORTEN in last:
            return f"the council ({next(replies)})"
        if reader.ANSWER_INSTRUCTION in last and asked and f"Question: {asked[0]}\n" in last:
            return fill(max_tokens, "The council")
        return answer.UNANSWERABLE

    return reply


@pytest.fixture(scope="module")
def gguf_tokens(gguf_path: Path) -> GGUFTokens:
    return GGUFTokens(gguf_path)


@pytest.fixture(scope="module")
def default_services(settings: Settings, services: Services) -> Services:
    """Services at the default settings (the session chunks finer: tests/session_settings.py) over the
    session's data directory, sharing its MiniLM and spaCy rather than loading them again."""
    defaults = services_for(Settings(data_dir=settings.data_dir))
    assert (defaults.settings.chunk_size, defaults.settings.chunk_overlap) == (256, 32)
    defaults._built.update(embedder=services.embedder, nlp=services.nlp)
    return defaults


@pytest.fixture(scope="module")
def sample_256(default_services: Services) -> str:
    """The index every method runs on: the sample corpus at the default chunking, with the extras the
    methods checked here read (MultiMeta's metadata, ChainRAG's sentence graph); the others read its chunks
    alone, as on an index without extras. One build embeds the chunks once: three indexes (plain, metadata,
    and a sentence graph over the session's finer chunks, which ChainRAG never reads) embedded the same
    corpus three times, most of this module's setup."""
    index_corpus(
        SAMPLE_CORPUS, "sample-256", default_services.settings, extras=["metadata", "sentence_graph"]
    )
    return "sample-256"


def worst_case_gateway(count: GGUFTokens) -> tuple[LLMGateway, WorstCase]:
    model = WorstCase(reply=worst_replies(count), count=count)
    described = "scripted worst-case chat model"
    role_model = RoleModel(
        model, "worst-case", described, context_window=N_CTX, count_prompt=count.count_prompt
    )
    return LLMGateway({}, role_model), model


def run_worst_case(
    method: str, services: Services, index: str, count: GGUFTokens
) -> tuple[list[str], dict[str, Any], list[Call]]:
    """(nodes run, final state, the calls measured) of `method` at its defaults on the worst-case script."""
    llm, model = worst_case_gateway(count)
    graph = builder(method)(ScriptedServices(services, llm)).compile()
    steps, values = stream_run(graph, SAMPLE_QUESTION, {"index": index})
    return steps, values, model.calls


WORD_LIMIT = 3000  # ChainRAG's default: each sub-question's sentences are gathered up to it
INTEGRATED_FROM_CONTEXTS = "integrate: the sub-answers gave no answer; answered from the contexts"

# What shows the path a run took, read from (nodes run, final state, calls measured).
FACTS: dict[str, Callable[[list[str], dict[str, Any], list[Call]], Any]] = {
    "sub-questions": lambda steps, values, calls: len(values["sub_questions"]),
    "passages read": lambda steps, values, calls: len(values["read"]),
    "roles": lambda steps, values, calls: sorted({c.role for c in calls}),
    "calls of generate": lambda steps, values, calls: sum(c.node == "generate" for c in calls),
    "calls of prepare": lambda steps, values, calls: [c.role for c in calls if c.node == "prepare"],
    # each sub-question read sentences up to the word limit, short of one sentence at most
    "every sub-question at the word limit": lambda steps, values, calls: all(
        word_count([item for item in values["evidence"] if item["id"] in sub["read"]]) > WORD_LIMIT - 100
        for sub in values["solved"]
    ),
    "answered from the contexts": lambda steps, values, calls: (
        INTEGRATED_FROM_CONTEXTS in values["fallbacks"]
    ),
    # CxtInt's items (sentences or chunks) left out because the prompt would not fit the reader's window
    "contexts cut at the window": lambda steps, values, calls: values["stats"]["contexts_left_out"] > 0,
    "reasoning steps": lambda steps, values, calls: len(values["reasoning"]),
    "paragraphs": lambda steps, values, calls: len(values["evidence"]),
    "iterations": lambda steps, values, calls: steps.count("generate"),
    "rounds": lambda steps, values, calls: values["rounds"],
    "calls of summarize": lambda steps, values, calls: sum(c.node == "summarize" for c in calls),
    "first call": lambda steps, values, calls: calls[0].role,
}

# Each method's longest path at its defaults (module docstring), as FACTS read it.
LONGEST_PATH: dict[str, dict[str, Any]] = {
    "naive": {"passages read": 10, "calls of generate": 3},  # the answer, the nudged one, its span
    "chainrag": {
        "sub-questions": 4,
        "roles": ["decomposer", "generator", "judge", "rewriter", "summarizer"],
        # the second rewritten (the first was answered); then the unanswered ones summarised: one, two
        "calls of prepare": ["rewriter", "summarizer", "summarizer", "summarizer"],
        "every sub-question at the word limit": True,
        "answered from the contexts": True,
        "contexts cut at the window": True,
    },
    "decomposition": {"sub-questions": 3, "calls of generate": 3},
    "naive_qd": {"sub-questions": 4, "answered from the contexts": True, "contexts cut at the window": False},
    "ircot": {"reasoning steps": 8, "paragraphs": 15, "calls of generate": 3},  # the direct reader
    "iter_retgen": {"iterations": 3, "calls of generate": 2 + 3},  # 2 chains; the direct reader, nudge, span
    "resp": {"rounds": 3, "calls of summarize": 1 + 2 + 2},  # global each round, local from the second
    "multimeta": {"first call": "extractor", "passages read": 6},
    "treehop": {"passages read": 8},
}


@pytest.fixture(scope="module")
def worst_runs(
    default_services: Services, sample_256: str, gguf_tokens: GGUFTokens
) -> Callable[[str], tuple[list[str], dict[str, Any], list[Call]]]:
    """Each method's worst-case run, made once for both of its tests."""
    runs: dict[str, tuple[list[str], dict[str, Any], list[Call]]] = {}

    def run(method: str) -> tuple[list[str], dict[str, Any], list[Call]]:
        if method not in runs:
            runs[method] = run_worst_case(method, default_services, sample_256, gguf_tokens)
        return runs[method]

    return run


@pytest.mark.parametrize("method", list(LONGEST_PATH))
def test_the_worst_case_script_takes_each_methods_longest_path(method: str, worst_runs: Callable) -> None:
    steps, values, calls = worst_runs(method)
    expected = LONGEST_PATH[method]
    assert {fact: FACTS[fact](steps, values, calls) for fact in expected} == expected


@pytest.mark.parametrize("method", list(LONGEST_PATH))
def test_every_prompt_of_a_method_at_its_defaults_fits_the_default_context(
    method: str, worst_runs: Callable
) -> None:
    """ChainRAG's 3,000 words of sentences needed 12,788 tokens when each sentence was its own titled
    passage; shown a document at a time (prompts.passages.format_passages) its longest call needed 5,034
    while CxtInt was cut at 3,000 words. Reading every gathered sentence up to the window, CxtInt's last
    call (the span asked after a best answer) needs 7,570: 236 of 257 sentences, 5,586 words gathered."""
    _, _, calls = worst_runs(method)
    too_long = [call for call in calls if call.needs > N_CTX]
    assert too_long == [], f"{method}: prompts that overflow local_n_ctx = {N_CTX}: {too_long}"


@pytest.mark.parametrize("method", list(LONGEST_PATH))
def test_no_count_a_prompt_is_cut_by_is_below_the_rendered_prompts(method: str, worst_runs: Callable) -> None:
    """How CxtInt sizes its prompt to the window (nodes.window) against the GGUF's count of the prompt as
    llama.cpp renders it, on every prompt of the worst-case run (news articles, instructions,
    sub-questions, JSON replies): the local model's count (its texts in the GGUF's vocabulary, allowances
    for the template) and the estimate a provider's model is sized by."""
    _, _, calls = worst_runs(method)
    under = [call for call in calls if min(call.counted, call.estimated) < call.prompt]
    assert under == [], f"{method}: prompts counted below the GGUF's count: {under}"


# Texts unlike the sample's prose, each where a characters-a-token estimate fails the embedded tokenizer
HARD_TEXTS = {
    "figures": "In 1974, 1,234,567 people (12.5%) paid $3,400.00 on 2023-11-27T08:45:59. ",
    "names": "Farrukhzad Khosrau V, Daadagiri, Mithun Chakraborty, Rituparna Sengupta, Hefnerkerze. ",
    "accents": "Małgorzata Braunek, Xawery Żuławski, Zürich, São Paulo, naïve café, Đặng Thái Sơn. ",
    "german": "Die Verwaltungsgerichtsbarkeit entscheidet ueber Streitigkeiten mit Behoerden in Karlsruhe. ",
    "finnish": "Suomi on Pohjois-Euroopassa sijaitseva valtio, jonka naapurimaat ovat Ruotsi ja Norja. ",
    "polish": "Polska jest panstwem w Europie Srodkowej, polozonym miedzy Morzem Baltyckim a Karpatami. ",
    "indonesian": "Indonesia adalah negara kepulauan terbesar di dunia yang terletak di Asia Tenggara. ",
    "chinese": "北京是中华人民共和国的首都，也是全国的政治、文化中心。",
    "cyrillic": "Москва — столица России, крупнейший по численности населения город страны. ",
    "emoji": "Great deal 😀🎉🚀 today! ",
    "symbols": "$%^&*()_+{}|:<>?~ ",
    "code": "def f(x):\n    return {'a': [1, 2, 3], \"b\": x**2}  # comment\n",
    "urls": "https://www.theverge.com/2023/11/27/23977712/cyber-monday-deals?utm=abc_123 ",
}


@pytest.mark.parametrize("kind", list(HARD_TEXTS))
def test_the_token_estimate_is_never_below_the_ggufs_count_on_hard_text(
    kind: str, gguf_tokens: GGUFTokens
) -> None:
    text = HARD_TEXTS[kind] * 20
    assert estimated_text_tokens(text) >= len(gguf_tokens.tokens(text))


def test_the_methods_checked_here_are_every_registered_method_but_the_two_read_like_naive() -> None:
    assert set(LONGEST_PATH) | {"quote", "biqog"} == set(METHODS)


def test_the_index_time_prompts_fit_the_default_context_on_the_longest_chunk(
    default_services: Services, sample_256: str, gguf_tokens: GGUFTokens
) -> None:
    """QuOTE's question writer and BiQOG's edge judge (both through the real nodes), asked about the chunk
    of the sample index with the most tokens, the judge with the longest question the writer wrote."""
    llm, model = worst_case_gateway(gguf_tokens)
    chunks = default_services.indexes.open(sample_256).all_chunks()
    longest = max(chunks, key=lambda chunk: len(gguf_tokens.tokens(f"{chunk.title}\n{chunk.text}")))
    per_chunk = QuestionParams().per_chunk
    written, _ = LLMQuestionWriter(llm, 1).write(longest.title, longest.text, per_chunk)
    assert len(written) == per_chunk
    question = max(written, key=lambda q: len(gguf_tokens.tokens(q)))
    assert LLMEdgeJudge(llm, 1).judge(longest.title, longest.text, question) == "yes"
    assert [c.role for c in model.calls] == ["question_writer", "edge_judge"]
    assert all(call.needs <= N_CTX for call in model.calls), model.calls
