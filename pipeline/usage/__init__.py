"""Usage records and the gaps report made from them (docs/gaps.md): what each ask and search leaves
behind (`record`), written off the request path (`recorder`), grouped by meaning (`cluster`) and
reported (`report`). `from pipeline.usage import …` for every name."""

from pipeline.usage.cluster import completeness, groups, medoid, purity
from pipeline.usage.record import UsageRecord, digest, for_ask, for_search
from pipeline.usage.recorder import Recorder, prune, record_once, recorder
from pipeline.usage.report import Gaps, gaps, report

__all__ = [
    "UsageRecord",
    "Gaps",
    "Recorder",
    "completeness",
    "digest",
    "for_ask",
    "for_search",
    "gaps",
    "groups",
    "medoid",
    "prune",
    "purity",
    "record_once",
    "recorder",
    "report",
]
