"""Number words, ordinals and units as the answer layer reads them (re-exported by pipeline.answers.words)."""

NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "thousand": 1000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
    "dozen": 12,
    "single": 1,
    "twice": 2,
    "double": 2,
    "triple": 3,
    "half": 0.5,
}
ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "eleventh": 11,
    "twelfth": 12,
}
# Units, spelt out or abbreviated, to one key; read only right after a number ("2 seconds", "64 KiB").
UNITS = {
    form: unit
    for unit, forms in {
        "byte": "b byte bytes",
        "kb": "kb kilobyte kilobytes",
        "kib": "kib kibibyte kibibytes",
        "mb": "mb megabyte megabytes",
        "mib": "mib mebibyte mebibytes",
        "gb": "gb gigabyte gigabytes",
        "gib": "gib gibibyte gibibytes",
        "tb": "tb terabyte terabytes",
        "tib": "tib tebibyte tebibytes",
        "bit": "bit bits",
        "ns": "ns nanosecond nanoseconds",
        "us": "us µs microsecond microseconds",
        "ms": "ms msec millisecond milliseconds",
        "s": "s sec secs second seconds",
        "min": "min mins minute minutes",
        "h": "h hr hrs hour hours",
        "day": "d day days",
        "week": "wk wks week weeks",
        "percent": "percent pct",
    }.items()
    for form in forms.split()
}
# Durations read in one unit, so "half an hour", "30 minutes" and "1800 s" are the same number: the key
# of a number with one of these units is its value times the factor, and the unit's key the base.
CONVERSIONS = {
    "ns": ("s", 1e-9),
    "us": ("s", 1e-6),
    "ms": ("s", 1e-3),
    "s": ("s", 1.0),
    "min": ("s", 60.0),
    "h": ("s", 3600.0),
    "day": ("s", 86400.0),
    "week": ("s", 604800.0),
}
# "a week", "an hour": the article counts one of a spelt-out unit; "half an hour" reads past it.
ARTICLES = frozenset({"a", "an"})
