"""The built site: build the Markdown in docs_dir into a static site with MkDocs.

MkDocs is kept behind this one module (mkdocs-material is in maintenance; a successor may
replace it), and imported only by the functions that run it: it is slow to import, and a
command that builds no site should not pay for it. The new site is built beside the
published one and swapped in only when the build succeeds, so a failed build never changes
what readers see.
"""

from __future__ import annotations

import contextlib
import html
import logging
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import store
from ..archive.history import History
from ..archive.question_record import INDEX_PAGE, QuestionRecord
from ..errors import SiteBuildError, UnsafeSiteError
from ..text.safe_text import cut
from .freshness import SITE_MARKER, fingerprint, is_current, marker_text
from .inert import check_site

log = logging.getLogger(__name__)

# The credit arXiv's terms of use ask for, in every page's footer.
ARXIV_CREDIT = "Thank you to arXiv for use of its open access interoperability."

# Editions whose pages are all in the global navigation; older ones appear by their overview.
EXPANDED_EDITIONS = 4

# Questions (`digest ask --publish`) listed by name in the navigation; the rest in its list.
EXPANDED_QUESTIONS = 5

# Loads the search index when the reader starts a search, not with every page (it grows with
# every edition): a script before Material's bundle, from templates/assets/ (`digest render`
# copies it into docs_dir).
LAZY_SEARCH = "assets/javascripts/lazy-search.js"


def edition_nav(history: History, questions: Sequence[QuestionRecord] = ()
                ) -> list[dict[str, Any]]:
    """Home, the latest editions with their synthesis pages, then an archive of overviews.

    Every page carries the whole navigation, so a year of editions with all their pages in it
    would make each page (and the build) several times larger. Paper pages are never in it;
    an edition's overview links its papers, and each paper's own page its editions.
    """
    nav: list[dict[str, Any]] = [{"Home": store.HOME}]
    archive: list[dict[str, str]] = []
    for index, record in enumerate(history.records):
        edition = record.edition
        if index >= EXPANDED_EDITIONS:
            archive.append({edition: store.edition_overview(edition)})
            continue
        entries: list[dict[str, str]] = [{"Overview": store.edition_overview(edition)}]
        if record.triage is not None:
            entries.append({"Triage": store.edition_page(edition, "triage")})
        # Themes print navigation labels raw, so a label is HTML text.
        entries += [{html.escape(page.title): store.edition_page(edition, page.stem)}
                    for page in record.pages]
        entries.append({"Run report": store.edition_page(edition, "run-report")})
        nav.append({edition: entries})
    if archive:
        nav.append({"Earlier editions": archive})
    if questions:  # the latest few by their question, and the list of every one
        nav.append({"Questions": [{"All questions": INDEX_PAGE}, *(
            {html.escape(cut(q.question, 60)): q.page} for q in questions[:EXPANDED_QUESTIONS])]})
    return nav


class _WarningCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _collect_mkdocs_warnings() -> Iterator[_WarningCollector]:
    collector = _WarningCollector()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(collector)
    try:
        yield collector
    finally:
        logger.removeHandler(collector)


def build_site(
    mkdocs_yml: Path, docs_dir: Path, site_dir: Path, site_name: str, *, fallback_yml: Path,
    only_if_changed: bool = False, history: History, site_url: str = "",
) -> bool:
    """Build docs_dir into site_dir with MkDocs (strict), replacing the old site only on success.

    With `only_if_changed`, nothing is done (and MkDocs not even imported) when the site was
    built from these very inputs. Returns whether a site was built.
    """
    config_file = mkdocs_yml if mkdocs_yml.is_file() else fallback_yml
    digest = fingerprint(docs_dir, config_file, f"{site_name}\n{site_url}",
                         history.record_digests())
    if only_if_changed and is_current(site_dir, digest):
        log.info("the site in %s is up to date: nothing it is built from changed", site_dir)
        return False
    from mkdocs.commands.build import build as mkdocs_build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    site_dir.parent.mkdir(parents=True, exist_ok=True)
    check_replaceable(site_dir)
    remove_leftovers(site_dir)
    staging = site_dir.with_name(f".{site_dir.name}.building-{os.getpid()}")
    with _collect_mkdocs_warnings() as warnings:
        try:
            config = load_config(
                str(config_file),
                docs_dir=str(docs_dir),
                site_dir=str(staging),
                site_name=site_name,
                nav=edition_nav(history, history.questions),
                strict=True,
            )
            if site_url and not config.site_url:
                # [digest] site_url (or the workflow's DIGEST_SITE_URL) where mkdocs.yml has
                # none: the 404 page of a project site loads its CSS from under /<repo>/.
                config.site_url = site_url.rstrip("/") + "/"
            add_our_plugins(config, latest=history.latest)
            if (docs_dir / "assets" / "digest.css").is_file():
                config.extra_css.append("assets/digest.css")
            if (docs_dir / LAZY_SEARCH).is_file():
                config.extra["polyfills"] = with_lazy_search(config.extra.get("polyfills"))
            config.copyright = with_arxiv_credit(config.copyright)
            mkdocs_build(config)
        except (MkDocsException, OSError) as err:
            shutil.rmtree(staging, ignore_errors=True)
            details = "".join(f"\n  {m}" for m in warnings.messages[:20])
            raise SiteBuildError(
                f"MkDocs could not build the site ({err}); the published site in {site_dir} "
                f"was left as it was.{details}"
            ) from err
    refuse_live_markup(staging, site_dir, urlsplit(config.site_url or "/").path or "/")
    # Only a folder holding this marker (or an empty one) is ever replaced; it also records
    # what the site was built from, so an unchanged rebuild can skip MkDocs.
    (staging / SITE_MARKER).write_text(marker_text(digest), encoding="utf-8")
    _swap_in(staging, site_dir)
    log.info("site built in %s", site_dir)
    return True


def add_our_plugins(config: Any, *, latest: str | None = None) -> None:
    """The sanitizer and the reading plugin, when a workspace's own mkdocs.yml lacks them;
    the reading plugin is told which edition is the latest (from the run's history)."""
    from .reading import ReadingPlugin
    from .sanitize import SanitizePlugin

    for instance in config.plugins.values():
        if isinstance(instance, ReadingPlugin):
            instance.known_latest = latest
    for name, plugin in (("digest-sanitize", SanitizePlugin), ("digest-reading", ReadingPlugin)):
        if not any(isinstance(p, plugin) for p in config.plugins.values()):
            instance = plugin()
            if isinstance(instance, ReadingPlugin):
                instance.known_latest = latest
            config.plugins[name] = instance
            if hasattr(instance, "on_config"):
                instance.on_config(config)  # the config was loaded before it was added


def with_lazy_search(polyfills: Any) -> list[Any]:
    """Material's extra.polyfills (scripts it loads before its bundle) with the lazy search
    script first, once, whatever the workspace's mkdocs.yml lists."""
    listed = (list(polyfills) if isinstance(polyfills, list | tuple)
              else [] if polyfills is None else [polyfills])
    return [LAZY_SEARCH, *(p for p in listed if p != LAZY_SEARCH)]


def with_arxiv_credit(copyright: str | None) -> str:
    """The footer line with the credit arXiv's terms of use ask for, once."""
    if copyright and ARXIV_CREDIT in copyright:
        return copyright
    return f"{copyright} · {ARXIV_CREDIT}" if copyright else ARXIV_CREDIT


def check_replaceable(site_dir: Path) -> None:
    """Refuse to replace a folder that an earlier `digest site` did not build.

    The site folder is swapped out and deleted on every build, so a misconfigured site_dir
    must never point at somebody's data: only an empty folder, one with our marker, or one
    that is plainly a MkDocs build (from before the marker existed) may be replaced.
    """
    if not site_dir.exists():
        return
    if not site_dir.is_dir():
        raise SiteBuildError(f"{site_dir} is a file, not a site folder: set [paths] site_dir "
                             "in config.toml to a folder `digest site` may own")
    if (site_dir / SITE_MARKER).is_file() or not any(site_dir.iterdir()):
        return
    if all((site_dir / name).exists() for name in ("404.html", "sitemap.xml", "search")):
        return  # a MkDocs site built before the marker existed
    raise SiteBuildError(
        f"{site_dir} holds files that `digest site` did not write, and building the site "
        f"would replace them all; nothing was changed. Point [paths] site_dir at a new or "
        f"empty folder, or delete this one yourself if it is an old build.")


def remove_leftovers(site_dir: Path) -> None:
    """Delete staging and retired folders that a killed build left beside the site."""
    for pattern in (f".{site_dir.name}.building-*", f".{site_dir.name}.old-*",
                    f".{site_dir.name}.zipping-*"):
        for leftover in site_dir.parent.glob(pattern):
            pid = leftover.name.rsplit("-", 1)[-1].removesuffix(".zip")
            if pid.isdigit() and int(pid) != os.getpid() and _alive(int(pid)):
                continue  # another process's build, still running
            log.info("removing %s, left by a build that did not finish", leftover)
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def refuse_live_markup(staging: Path, site_dir: Path, base_path: str) -> None:
    """Publish nothing that could run code: the check does not depend on any plugin having run."""
    problems = check_site(staging, base_path=base_path)
    if not problems:
        return
    shutil.rmtree(staging, ignore_errors=True)
    shown = "".join(f"\n  {p}" for p in problems[:20])
    more = f"\n  … and {len(problems) - 20} more" if len(problems) > 20 else ""
    raise UnsafeSiteError(
        f"the built site holds {len(problems)} live element(s) or attribute(s) that could run "
        f"code, so it was not published and {site_dir} was left as it was. Is the "
        f"digest-sanitize plugin missing from mkdocs.yml, or a theme override printing text "
        f"raw?{shown}{more}")


def _swap_in(staging: Path, site_dir: Path) -> None:
    """Replace site_dir with staging in two renames, so readers never see half a site."""
    retired = site_dir.with_name(f".{site_dir.name}.old-{os.getpid()}")
    if site_dir.exists():
        os.replace(site_dir, retired)
    os.replace(staging, site_dir)
    shutil.rmtree(retired, ignore_errors=True)


def zip_site(site_dir: Path) -> Path:
    """One archive of the built site to hand to someone offline (it opens from file://)."""
    if not (site_dir / "index.html").is_file():
        raise SiteBuildError(f"there is no built site in {site_dir}: run `digest site` first")
    target = site_dir.with_name(site_dir.name + ".zip")
    staging = site_dir.with_name(f".{site_dir.name}.zipping-{os.getpid()}")
    archive = shutil.make_archive(str(staging), "zip", root_dir=site_dir.parent,
                                  base_dir=site_dir.name)
    os.replace(archive, target)
    return target


def serve_site(mkdocs_yml: Path, docs_dir: Path, site_name: str, *, fallback_yml: Path,
               dev_addr: str | None) -> None:
    """Preview the site with live reload (mkdocs serve), sanitized and checked as `digest site`
    builds it, whatever the workspace's mkdocs.yml names."""
    from mkdocs.commands.serve import serve
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    config_file = mkdocs_yml if mkdocs_yml.is_file() else fallback_yml
    history = History.load(docs_dir)
    try:
        serve(
            str(config_file),
            docs_dir=str(docs_dir),
            site_name=site_name,
            nav=edition_nav(history, history.questions),
            dev_addr=dev_addr,
            copyright=with_arxiv_credit(load_config(str(config_file)).copyright),
            plugins=with_our_plugins(config_file),
        )
    except MkDocsException as err:
        raise SiteBuildError(f"the site was not served: {err}") from err


def with_our_plugins(config_file: Path) -> list[Any] | dict[str, Any]:
    """The `plugins` of a workspace's mkdocs.yml, with the sanitizer and the reading plugin
    added where it lacks them: `digest serve` shows nothing `digest site` would refuse."""
    from mkdocs.utils.yaml import yaml_load

    with config_file.open(encoding="utf-8") as handle:
        raw = yaml_load(handle) or {}
    plugins = raw.get("plugins", ["search"]) if isinstance(raw, dict) else ["search"]
    ours = ("digest-sanitize", "digest-reading")
    if isinstance(plugins, dict):
        return {**plugins, **{name: {} for name in ours if name not in plugins}}
    named = {p if isinstance(p, str) else next(iter(p), "") for p in plugins or []
             if isinstance(p, str | dict)}
    return [*(plugins or []), *(name for name in ours if name not in named)]
