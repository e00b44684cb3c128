"""The prompt text each method runs with, one short hash per role: part of an evaluation's settings key.

Answers made with other prompt wording are another measurement, so a results folder must not hold both
under one method label; the runner refuses that for prompts as it does for run parameters and models
(evals.runner). A role is a module of prompts/ (one module per role); a method's roles are the prompts
modules its package's code reaches: graphs/METHOD/ and, through them, nodes/ and prompts/, import by
import. A module counts when the code imports the module, or a function or a text from it; importing only
a class or a type (nodes/context.py names prompts.decompose's SubQuestionCount for every method) does not.

A role's hash is over its text as the model reads it, and only that: every string and f-string of the
module (the placeholders as written), and a data file beside it that it names (IR-CoT's demonstrations),
but no docstring, comment or layout. Editing a docstring, reformatting or moving code keeps the hash;
changing a word the model reads, a placeholder's place or a parser's pattern changes it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import re
from functools import cache
from pathlib import Path

from graphs.registry import builder

_ROOT = Path(__file__).resolve().parents[1]
_PROMPTS = "prompts"
_HASH_CHARS = 10
_FILE_NAME = re.compile(r"[\w-]+\.(json|jsonl|txt|md)")  # a data file a module may name beside itself


def prompt_versions(method: str) -> dict[str, str]:
    """Role (a prompts module's name, e.g. `reader`) -> a hash of its text, for every role `method` uses."""
    builder(method)  # an unknown method is an error, not a method without prompts
    return {
        module.removeprefix(f"{_PROMPTS}."): _text_hash(module) for module in sorted(_prompt_modules(method))
    }


def shaped_roles(method: str) -> list[str]:
    """The roles of `method` whose prompt module holds a reply shape (prompts.structured.ReplyShape): the
    ones the structured_output setting changes."""
    from prompts.structured import ReplyShape

    return [
        module.removeprefix(f"{_PROMPTS}.")
        for module in sorted(_prompt_modules(method))
        if any(isinstance(value, ReplyShape) for value in vars(importlib.import_module(module)).values())
    ]


@cache
def _prompt_modules(method: str) -> frozenset[str]:
    """The prompts modules reached from graphs/METHOD/ through imports of nodes/ and prompts/ modules."""
    package = f"graphs.{method}"
    todo = [f"{package}.{path.stem}" for path in sorted((_ROOT / "graphs" / method).glob("*.py"))]
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(
            imported
            for imported in _imports(module)
            if imported.split(".")[0] in ("nodes", _PROMPTS) or imported.startswith(f"{package}.")
        )
    return frozenset(module for module in seen if module.startswith(f"{_PROMPTS}."))


def _module_file(module: str) -> Path | None:
    """The source file of a module of this repository, or None (a package's __init__ counts as itself)."""
    base = _ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _imports(module: str) -> frozenset[str]:
    """The modules of this repository `module` imports something from that counts: the module itself (`from
    prompts import reader`, `import prompts.reader`), or names of which one is not a class."""
    path = _module_file(module)
    if path is None:
        return frozenset()
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names}
            found.update(name for name in submodules if _module_file(name) is not None)
            names = [
                alias.name for alias in node.names if _module_file(f"{node.module}.{alias.name}") is None
            ]
            if names and not _only_classes(node.module, names):
                found.add(node.module)
    return frozenset(name for name in found if _module_file(name) is not None)


def _only_classes(module: str, names: list[str]) -> bool:
    """Whether every one of `names` is a class in `module` (a type named for annotations, a node class whose
    module is followed anyway when it is a node's)."""
    if not module.startswith(f"{_PROMPTS}."):
        return False  # a node module is followed whatever it lends: its classes are nodes that prompt
    loaded = importlib.import_module(module)
    return all(isinstance(getattr(loaded, name, None), type) for name in names)


@cache
def _text_hash(module: str) -> str:
    """A hash of what the model can read of a prompts module: its strings, f-strings and named data files."""
    path = _module_file(module)
    assert path is not None, module
    texts = _texts(ast.parse(path.read_text(encoding="utf-8")))
    files = [
        hashlib.sha256(path.with_name(text).read_bytes()).hexdigest()
        for text in texts
        if _FILE_NAME.fullmatch(text) and path.with_name(text).is_file()
    ]
    payload = json.dumps([texts, files], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:_HASH_CHARS]


def _texts(tree: ast.Module) -> list[str]:
    """Every string of `tree` except docstrings, in walk order; an f-string as its literal parts with each
    placeholder's expression, so moving a placeholder changes the text."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skipped.add(id(first.value))
        elif isinstance(node, ast.JoinedStr):
            skipped.update(id(part) for part in ast.walk(node) if part is not node)
    texts = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.JoinedStr):
            texts.append(_fstring(node))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts.append(node.value)
    return texts


def _fstring(node: ast.JoinedStr) -> str:
    """An f-string's literal parts with each placeholder's expression in braces, as the parser reads it."""
    parts = []
    for part in node.values:
        if isinstance(part, ast.FormattedValue):
            spec = _fstring(part.format_spec) if isinstance(part.format_spec, ast.JoinedStr) else ""
            conversion = f"!{chr(part.conversion)}" if part.conversion >= 0 else ""
            parts.append(f"{{{ast.unparse(part.value)}{conversion}{':' + spec if spec else ''}}}")
        elif isinstance(part, ast.Constant):  # the only other part an f-string has
            parts.append(str(part.value))
    return "".join(parts)
