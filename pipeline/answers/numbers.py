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
    # Byte counts in bytes: "512 KiB" is "524288 bytes" and "16 KiB" the bare "16384" of a size in bytes.
    # KB, MB, GB, TB count in powers of 1024 too: software documentation mostly means that by them, and
    # "16 KB" for "16 KiB" (or the other way round) must not be refused; a claim that says "1,000,000
    # bytes" for "1 MB" is the rarer rewording.
    "byte": ("byte", 1.0),
    "kb": ("byte", 1024.0),
    "kib": ("byte", 1024.0),
    "mb": ("byte", 1024.0**2),
    "mib": ("byte", 1024.0**2),
    "gb": ("byte", 1024.0**3),
    "gib": ("byte", 1024.0**3),
    "tb": ("byte", 1024.0**4),
    "tib": ("byte", 1024.0**4),
    # A percentage is the fraction it names: "60 %" is the "0.6" of a ratio, "50 percent" is "half".
    "percent": ("percent", 0.01),
}
# "a week", "an hour": the article counts one of a spelt-out unit; "half an hour" reads past it.
ARTICLES = frozenset({"a", "an"})
# Parts of a unit: "a quarter of a minute" is 15 seconds, "three quarters of an hour" 45 minutes.
FRACTIONS = {"half": 0.5, "halves": 0.5, "quarter": 0.25, "quarters": 0.25}


def fraction_at(tokens: tuple[str, ...], i: int, count: float | None) -> tuple[int, int, float] | None:
    """A part of a unit starting at token i ("a quarter of a minute", "three quarters of an hour", "half
    an hour"): the end of its number words, the index of its unit and its value in the unit's base, or
    None. `count` is the value of token i when it is a number (a fraction word is none), else None."""
    j = i
    if tokens[j] in ARTICLES or (count is not None and tokens[j] not in FRACTIONS):
        j += 1
    times = 1.0 if j == i or tokens[i] in ARTICLES else float(count or 0)
    if j >= len(tokens) or tokens[j] not in FRACTIONS:
        return None
    part = FRACTIONS[tokens[j]]
    j += 1
    said = j
    if j < len(tokens) and tokens[j] == "of":
        j += 1
    if j < len(tokens) and tokens[j] in ARTICLES:
        j += 1
    unit = UNITS.get(tokens[j]) if j < len(tokens) else None
    if unit not in CONVERSIONS or unit == "percent":
        return None
    return said, j, times * part * CONVERSIONS[unit][1]


def join_compounds(tokens: tuple[str, ...], out: list[str], quantities: list[tuple[int, int, int]]) -> None:
    """One duration or size said in parts ("one minute and four seconds", "1 h 30 min") is one number:
    each part's number key becomes the sum. `quantities` are (start, end, unit index) of the numbers read
    with a converted unit, in order; `out` holds their keys, already in the unit's base."""
    k = 0
    while k < len(quantities):
        m = k
        while m + 1 < len(quantities):
            (_, _, u), (s2, _, u2) = quantities[m], quantities[m + 1]
            gap = tokens[u + 1 : s2]
            big, small = CONVERSIONS[UNITS[tokens[u]]], CONVERSIONS[UNITS[tokens[u2]]]
            if gap not in ((), ("and",)) or big[0] != small[0] or big[1] <= small[1] or big[0] == "percent":
                break
            m += 1
        if m > k:
            total = sum(float(out[quantities[q][0]][1:]) for q in range(k, m + 1))
            for s, e, _ in quantities[k : m + 1]:
                out[s:e] = [f"#{total:.6g}"] * (e - s)
        k = m + 1


_DIGIT_WORDS = {w: v for w, v in NUMBER_WORDS.items() if isinstance(v, int) and v < 10}
COMPOSABLE = {
    w: v
    for w, v in NUMBER_WORDS.items()
    if w in _DIGIT_WORDS
    or w.endswith(("teen", "ty"))
    or w in ("ten", "eleven", "twelve", "hundred", "thousand", "million", "billion")
}


def number_run(tokens: tuple[str, ...], i: int) -> tuple[int, float]:
    """The end of the run of number words starting at i, and its value (a well-formed English number:
    "twenty four" but not "four twenty"); (i + 1, 0) when no run of two or more starts there."""
    total: float = 0
    current: float = 0
    j, last = i, None
    while j < len(tokens) and (v := COMPOSABLE.get(tokens[j])) is not None:
        if v >= 1000:
            total, current = total + (current or 1) * v, 0
        elif v == 100:
            current = (current or 1) * 100
        elif last is not None and (last < 100 and (last < 20 or v >= 10)):
            if j == i + 1 and 13 <= last < 20 and 10 <= v < 100:  # a year: "nineteen seventy(-four)"
                end, rest = number_run(tokens, j)
                end, rest = (end, rest) if end > j + 1 else (j + 1, v)
                return (end, last * 100 + rest) if rest < 100 else (i + 1, 0.0)
            break  # "one two", "twenty thirty": two numbers, not one
        else:
            current += v
        last = v
        j += 1
        if j + 1 < len(tokens) and tokens[j] == "and" and last >= 100 and tokens[j + 1] in COMPOSABLE:
            j += 1  # "two hundred and six"
    value = float(total + current)
    if j < len(tokens) - 1 and tokens[j] == "point" and tokens[j + 1] in _DIGIT_WORDS and j > i:
        digits = ""
        j += 1
        while j < len(tokens) and tokens[j] in _DIGIT_WORDS:
            digits += str(_DIGIT_WORDS[tokens[j]])
            j += 1
        value += int(digits) / 10 ** len(digits)
    return (j, value) if j > i + 1 else (i + 1, 0.0)
