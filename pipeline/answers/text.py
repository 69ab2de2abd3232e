"""Kept for imports written before pipeline.answers.words: the same names, re-exported."""

from pipeline.answers.words import (  # noqa: F401
    MONTHS,
    NEGATIONS,
    NUMBER_WORDS,
    ORDINALS,
    STOPWORDS,
    cased_words,
    content_keys,
    fold,
    has_negation,
    is_content,
    key,
    negation_scopes,
    negations,
    normalise,
    number_value,
    prose_blocks,
    split_sentences,
    stem,
    words,
)
