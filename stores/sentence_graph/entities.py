"""Key entities and EC edges: entities numbered, scored by BM25 per sentence, and indexed by entity.

The paper's alpha% key-entity rule and the inverted index that stands in for EC edges are the graph's
own arithmetic, independent of spaCy and of the embedder, so they are tested and read on their own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from stores.sentence_graph.csr import csr, union_rows
from stores.sentence_graph.parse import entity_key
from stores.sentence_graph.records import SentenceTable

_K1, _B = 1.5, 0.75


@dataclass
class EntityTables:
    """Entities of the corpus and the graph's entity structures, all as arrays of entity numbers."""

    display: list[str]
    entity_indptr: np.ndarray  # sentence -> its distinct entities, first mention first
    entity_indices: np.ndarray
    key_indptr: np.ndarray  # sentence -> its key entities, most important first
    key_indices: np.ndarray
    ec_indptr: np.ndarray  # key entity -> the sentences it is key in (EC, stored as an inverted index)
    ec_indices: np.ndarray


def entity_tables(table: SentenceTable, alpha: int) -> EntityTables:
    """Number the entities, then keep each sentence's top ceil(alpha% of |E_i|) by BM25 as key entities.

    BM25 with the entity as the term and the sentences as the collection: idf from the number of sentences
    mentioning the entity (the Lucene form log(1 + (N - df + .5) / (df + .5)), which stays positive for
    an entity in most sentences, unlike Okapi's), tf = its mentions in the sentence, and the sentence's
    token count against the average for length normalisation (k1=1.5, b=0.75). Ties keep mention order.
    """
    n = len(table.ids)
    numbers: dict[str, int] = {}
    forms: list[Counter[str]] = []
    pair_sentence: list[int] = []
    pair_entity: list[int] = []
    pair_tf: list[int] = []
    for row, names in enumerate(table.mentions):
        counts: dict[int, int] = {}
        for name in names:
            key = entity_key(name)
            number = numbers.setdefault(key, len(numbers))
            if number == len(forms):
                forms.append(Counter())
            forms[number][name] += 1
            counts[number] = counts.get(number, 0) + 1
        for number, tf in counts.items():
            pair_sentence.append(row)
            pair_entity.append(number)
            pair_tf.append(tf)
    # The most frequent surface form names an entity; Counter breaks ties by first occurrence.
    display = [form.most_common(1)[0][0] for form in forms]
    sentence = np.asarray(pair_sentence, dtype=np.int64)
    entity = np.asarray(pair_entity, dtype=np.int64)
    tf = np.asarray(pair_tf, dtype=np.float64)
    entity_indptr, entity_indices = csr(sentence, entity, n)

    df = np.bincount(entity, minlength=len(display)).astype(np.float64)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    lengths = table.tokens.astype(np.float64)
    norm = _K1 * (1 - _B + _B * lengths / max(lengths.mean(), 1.0))
    score = idf[entity] * tf * (_K1 + 1) / (tf + norm[sentence])
    order = np.lexsort((np.arange(len(entity)), -score, sentence))
    sentence, entity = sentence[order], entity[order]
    per_sentence = np.diff(entity_indptr)
    keep_count = (alpha * per_sentence + 99) // 100  # ceil(alpha% of |E_i|) in exact integer arithmetic
    rank = np.arange(len(sentence)) - entity_indptr[:-1][sentence]
    keep = rank < keep_count[sentence]
    key_sentence, key_entity = sentence[keep], entity[keep]
    key_indptr, key_indices = csr(key_sentence, key_entity, n)
    by_entity = np.lexsort((key_sentence, key_entity))
    ec_indptr, ec_indices = csr(key_entity[by_entity], key_sentence[by_entity], len(display))
    return EntityTables(
        display, entity_indptr, entity_indices, key_indptr, key_indices, ec_indptr, ec_indices
    )


def ec_edge_count(ents: EntityTables) -> int:
    """Distinct sentence pairs sharing at least one key entity, counted without listing hub entities' pairs.

    A sentence with one key entity is linked to every other sentence of that entity; only sentences with
    several key entities need the union of their entities' sentences.
    """
    sizes = np.diff(ents.ec_indptr)
    per_sentence = np.diff(ents.key_indptr)
    single = per_sentence == 1
    degrees = int((sizes[ents.key_indices[ents.key_indptr[:-1][single]]] - 1).sum())
    for row in np.flatnonzero(per_sentence > 1):
        keys = ents.key_indices[ents.key_indptr[row] : ents.key_indptr[row + 1]]
        degrees += len(union_rows(ents.ec_indptr, ents.ec_indices, keys)) - 1
    return degrees // 2
