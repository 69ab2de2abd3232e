"""What format a file is, from its name alone: the one table every source and parser reads.

A format is the `Document.kind` of a file and the key of the `languages` stats:
"markdown", "python", "pdf" ... Deciding from the name costs nothing at listing
time, so an unchanged file's format is known without reading it.
"""

from __future__ import annotations

from pathlib import PurePosixPath

# Prose and markup.
_DOCS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".text": "text",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
    ".debian": "text",  # README.Debian, NEWS.Debian
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx",
}
# Source code: the languages pipeline.parse.code has a grammar for, then some it splits by lines.
_CODE = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".sh": "shell",
    ".bash": "shell",
    ".zsh": "shell",
    ".sql": "sql",
    ".rb": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".cs": "csharp",
    ".lua": "lua",
    ".r": "r",
    ".pl": "perl",
    ".pm": "perl",
    ".ex": "elixir",
    ".exs": "elixir",
    ".css": "css",
    ".scss": "css",
    ".proto": "protobuf",
    ".tf": "hcl",
    ".graphql": "graphql",
}
# Configuration and data: split by top-level keys (pipeline.parse.data), or by lines.
_DATA = {
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".ini": "ini",
    ".cfg": "ini",
    ".xml": "xml",
    ".csv": "csv",
}
# Files known by their whole name.
_NAMES = {
    "dockerfile": "dockerfile",
    "makefile": "makefile",
    "gnumakefile": "makefile",
    "jenkinsfile": "groovy",
}
# Well-known documentation files, read as text without an extension or with one no format claims
# (`README`, `INSTALL`, `NEWS.old`, `README.source`); `README.md` is still markdown.
WELL_KNOWN_TEXT = frozenset(
    """
readme install news changes changelog history copying license licence authors contributors
credits thanks contributing hacking maintainers notice todo bugs faq upgrading security support
""".split()
)

EXTENSIONS: dict[str, str] = {**_DOCS, **_CODE, **_DATA}
BINARY_DOCUMENTS = frozenset({"pdf", "docx"})  # read as bytes, extracted to text at fetch
STRUCTURED_DATA = frozenset({"yaml", "toml", "json"})  # split by top-level keys
CODE = frozenset(_CODE.values()) | {"dockerfile", "makefile", "groovy", "ini", "xml"}  # split by symbol or line

# Never a document: read, they would index noise or fail as undecodable.
BINARY_EXTENSIONS = frozenset(
    """
.png .jpg .jpeg .gif .bmp .ico .icns .webp .tif .tiff .psd .ai .eps .heic .avif .svgz
.mp3 .mp4 .m4a .m4v .wav .ogg .oga .flac .aac .mov .avi .mkv .webm .wmv .flv .mpg .mpeg
.zip .gz .tgz .bz2 .xz .zst .7z .rar .tar .lz .lz4 .cab .deb .rpm .apk .jar .war .ear .whl .egg .nupkg
.exe .dll .so .dylib .o .obj .a .lib .bin .elf .class .pyc .pyo .pyd .wasm .dex
.woff .woff2 .ttf .otf .eot
.db .sqlite .sqlite3 .mdb .dat .iso .img .dmg .vmdk .qcow2
.npy .npz .pkl .pickle .parquet .feather .arrow .h5 .hdf5 .onnx .pt .pth .safetensors .ckpt .tflite .pb
.doc .xls .xlsx .ppt .pptx .odt .ods .odp .rtf .key .numbers .pages .epub .mobi
""".split()
)


# Files that are never documents, though their format is known, with why: a site's styling and its crawler
# file, a distribution's packaging metadata. Read only when a source's `include:` names them.
_NOT_DOCUMENTS = {
    ".css": "a stylesheet",
    ".scss": "a stylesheet",
    ".sass": "a stylesheet",
    ".less": "a stylesheet",
    "robots.txt": "a web crawler's file",
    "sitemap.xml": "a web crawler's file",
    "copyright": "packaging metadata (a distribution's copyright file)",
}
# A site's scripts: in a source that holds HTML pages, its JavaScript is the pages' machinery.
SITE_SCRIPTS = frozenset({"javascript"})


def not_a_document(path: str) -> str | None:
    """Why a file of a known format is no document (a stylesheet, robots.txt, packaging metadata), or None."""
    p = PurePosixPath(path)
    return _NOT_DOCUMENTS.get(p.name.lower()) or _NOT_DOCUMENTS.get(p.suffix.lower())


def detect(path: str) -> str | None:
    """The format of a file named `path`, or None when its name says nothing we can read."""
    p = PurePosixPath(path)
    suffix = p.suffix.lower()
    if suffix in EXTENSIONS:
        return EXTENSIONS[suffix]
    name = p.name.lower()
    if name in _NAMES:
        return _NAMES[name]
    return "text" if name.split(".")[0] in WELL_KNOWN_TEXT and suffix not in BINARY_EXTENSIONS else None


def is_binary_name(path: str) -> bool:
    """True when the name says the file is an image, archive, executable, ... (never a document here)."""
    return PurePosixPath(path).suffix.lower() in BINARY_EXTENSIONS
