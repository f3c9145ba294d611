"""Where a paper's code or data lives, when the paper itself says so.

Papers with Code is gone; a reader still wants the repository. Only what the paper gives is
taken: a repository address in its abstract, its arXiv comment, or the first page of its text
(where "Code is available at ..." stands), never a search elsewhere. A PDF's line breaks can
cut an address: only whole owner/name paths on known code and data hosts count (Hugging
Face's datasets/ and spaces/ kept), and one hyphenated at a line's end is left out, since its
first half names another repository.
"""

from __future__ import annotations

import re

# A repository on a known host: github.com/owner/name, huggingface.co/owner/name, ...
_REPO_RE = re.compile(
    r"(?:https?://)?(?:www\.)?(github\.com|gitlab\.com|codeberg\.org|bitbucket\.org|"
    r"huggingface\.co|zenodo\.org)/((?:datasets/|spaces/|models/)?)([A-Za-z0-9][\w.-]*)/"
    r"([\w.-]*[A-Za-z0-9_])(?![\w.-]*-\s*\n)", re.IGNORECASE)
_NOT_OWNERS = {"about", "features", "pricing", "login", "orgs", "topics", "search", "papers",
               "docs", "blog", "settings", "marketplace", "sponsors"}
FIRST_PAGE_CHARS = 4000
MAX_LINKS = 3


def code_links(*texts: str) -> tuple[str, ...]:
    """The repositories the texts name, as https URLs, first named first (at most three)."""
    found: dict[str, str] = {}
    for text in texts:
        for match in _REPO_RE.finditer(text):
            host, kind, owner, name = (match.group(1).lower(), match.group(2).lower(),
                                       match.group(3), match.group(4))
            if owner.lower() in _NOT_OWNERS or (kind and host != "huggingface.co"):
                continue
            name = name.removesuffix(".git")
            if host == "zenodo.org" and owner.lower() != "records":
                continue  # zenodo.org/records/123: a record; other paths are not
            url = f"https://{host}/{kind}{owner}/{name}"
            found.setdefault(url.lower(), url)
    return tuple(found.values())[:MAX_LINKS]
