"""Every error docforge raises on purpose.

DocforgeError
├── ConfigError          sources.yml or environment is wrong
├── SourceError          a source could not be read
│   ├── GitSourceError
│   └── ConfluenceError
├── ParseError           a document could not be parsed
├── EmbedError           no embedding model could be loaded
├── StoreError           the database refused or does not match
│   └── OutdatedStore    the store's schema needs `docforge db migrate`
├── QueryError           a search request is invalid
│   └── RerankError      the rerank service is down or answered garbage
└── AnswerError          an answer could not be produced or checked
    └── LLMError         the chat server is down or answered garbage
"""


class DocforgeError(Exception):
    """Base class: anything docforge reports to the user."""

    status: int | None = None  # the HTTP status a remote service refused with, when one did


class ConfigError(DocforgeError):
    """Configuration (sources.yml, environment) is invalid."""


class SourceError(DocforgeError):
    """A source or one of its documents could not be read."""


class GitSourceError(SourceError):
    """A git repository or one of its files could not be read."""


class ConfluenceError(SourceError):
    """The Confluence API failed or returned something unusable."""


class ParseError(DocforgeError):
    """A document's content could not be turned into sections."""


class EmbedError(DocforgeError):
    """No configured embedding model could be loaded."""


class StoreError(DocforgeError):
    """The store is unreachable or was built for something else."""


class OutdatedStore(StoreError):
    """The store's schema is older than this docforge: a reader refuses it (`docforge db migrate`)."""


class StoreDown(StoreError):
    """The store cannot be reached or started. Its message may name a socket path or host: a server tells
    its callers only that the store is unavailable."""


class QueryError(DocforgeError):
    """A search request (mode, filter expression) is invalid."""


class RerankError(QueryError):
    """The rerank service failed or answered something unusable (the search keeps its fused order)."""


class AnswerError(DocforgeError):
    """An answer could not be produced, stored or checked."""


class LLMError(AnswerError):
    """The configured chat server failed or answered something unusable."""
