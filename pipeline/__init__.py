"""docforge: keep a search index of your documentation fresh."""

__version__ = "0.1.0"
