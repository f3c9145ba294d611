"""The render stage: an edition's pages made from what it is made of, and the archive again.

An edition is made from the stages' results where the cache has them, else from its own
record, which holds them all (`edition_inputs`); `render_all` re-renders every edition (a
template change reaches them all) and `remove_edition` takes one off the site.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from .. import __version__, store
from ..archive.history import History
from ..archive.record import EditionRecord
from ..archive.withdrawn import withdrawn_now
from ..ask.pages import Site, write_questions
from ..config import Config
from ..edition.assemble import assemble
from ..edition.facts import PaperFacts
from ..edition.failed_pages import FailedPage, PagesFailed
from ..edition.inputs import EditionInputs
from ..edition.render import (
    default_template_dir,
    front_pages,
    make_environment,
    render_edition,
    write_front_pages,
    write_pages,
)
from ..errors import UsageError
from ..kinds import KindRegistry
from ..store import Docs
from ..store.cache import Cache, atomic_write_text
from ..store.fingerprint import Fingerprint
from ..synthesis.bundle import build_bundle
from ..synthesis.planning import load_plan
from ..synthesis.record import load_synthesis

log = logging.getLogger(__name__)


def render_inputs(config: Config, cache: Cache, edition: str, history: History) -> str:
    """A digest of everything a render of `edition` reads: the stages' records, the config,
    the templates, every edition's record (its own included, each as `history` read it) and
    this version. Equal digests, equal pages: a rebuild with nothing changed need not render
    to find that out."""
    # The site's address too: the environment may set it (DIGEST_SITE_URL), not the config
    # file, and the feed's links are made from it (a new address: the feed is written again).
    digest = Fingerprint(__version__, edition, config.digest.site_url)
    templates = [config.workspace / "templates", default_template_dir()]
    files = [*cache.stage_records(edition), config.path,
             *(p for folder in templates if folder.is_dir()
               for p in sorted(folder.rglob("*")) if p.is_file()),
             *Docs(config.docs_dir).record_paths(),
             config.docs_dir / store.edition_overview(edition)]
    known = history.record_digests()
    for path in files:
        digest.add_file(path, known=known)
    return digest.hexdigest()


def pages_digest(docs_dir: Path, edition: str, pages: Sequence[str],
                 known: Mapping[Path, bytes] | None = None) -> str:
    """A digest of the pages a render wrote, as they are now: the edition's own by content,
    the shared ones (a paper's own page, the home page, which a later edition's render writes
    again) by whether they are there. `known`: the digests of files read already (the
    edition's record, which the history read), not read again."""
    digest = Fingerprint("pages")
    own = store.edition_dir(edition) + "/"
    for page in pages:
        if page.startswith(own):
            digest.add_file(docs_dir / page, page, known)
        else:
            digest.add(page, "there" if (docs_dir / page).is_file() else "missing")
    return digest.hexdigest()


def rendered_already(config: Config, cache: Cache, edition: str, history: History) -> bool:
    """Whether the edition's last render read what a render would read now, and every page it
    wrote is still there as it wrote it: a page deleted (or edited) since, from site_src/ and
    site/ alike, is written again (the site build would otherwise link to nothing). The
    marker: the inputs' digest, the pages' digest, then the pages, one a line; an older
    marker without the pages renders once again."""
    try:
        lines = cache.rendered_path(edition).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    if len(lines) < 3:
        return False
    inputs, pages, written = lines[0], lines[1], lines[2:]
    return (inputs == render_inputs(config, cache, edition, history)
            and pages == pages_digest(config.docs_dir, edition, written,
                                      history.record_digests()))


def render_stage(config: Config, cache: Cache, edition: str, *,
                 history: History, only_if_changed: bool = False
                 ) -> EditionRecord | None:
    """Write the edition's pages; returns its record (the history's newest entry for it).

    With `only_if_changed`, nothing is rendered (None is returned) when nothing the render
    reads changed since it last ran."""
    env = make_environment(config.workspace)  # every override compiled: a broken one stops it
    if (only_if_changed and not cache.is_removed(edition)
            and rendered_already(config, cache, edition, history)):
        log.info("edition %s is rendered already: nothing it is made from changed", edition)
        return None
    records = history.records
    inputs, facts = edition_inputs(cache, edition, records, config.registry)
    assembled = assemble(edition, config.digest.title, inputs, facts, records,
                         kinds=config.registry)
    env.globals["marks"] = config.feedback.links
    rendered = render_edition(env, assembled, records, config.digest.site_url,
                              history.questions)
    write_pages(config.docs_dir, rendered)
    cache.mark_removed(edition, False)  # rendering an edition on purpose publishes it again
    if edition in Docs(config.docs_dir).removed():
        Docs(config.docs_dir).mark_removed(edition, False)
    written = history.with_record(assembled.record)  # as the render wrote it
    if rendered.failed:  # no fingerprint: the next run makes them again
        cache.rendered_path(edition).unlink(missing_ok=True)
        raise PagesFailed(edition, rendered.failed, assembled.record)
    pages = sorted(rendered.pages)
    atomic_write_text(cache.rendered_path(edition), "\n".join(
        [render_inputs(config, cache, edition, written),
         pages_digest(config.docs_dir, edition, pages), *pages]) + "\n")
    log.info("rendered %d page(s) for edition %s", len(rendered.pages), edition)
    return assembled.record


def render_flagged(config: Config, cache: Cache, record: EditionRecord, history: History
                   ) -> History:
    """Render again the earlier editions that covered a paper whose withdrawal `record`
    changed (found withdrawn, or restored by a new version), so their pages flag it where they
    cite it, or no longer do (their records are unchanged: the state comes from this one); one
    whose pages were made with this record already is left (its fingerprint covers every
    record). Returns the history with whatever was rendered."""
    others = [r for r in history.records if r.edition != record.edition]
    before, after = withdrawn_now(others), withdrawn_now([*others, record])
    changed = {base for base in before.keys() | after.keys()
               if before.get(base) != after.get(base)}
    if not changed:
        return history
    for earlier in history.records:
        if earlier.edition >= record.edition or cache.is_removed(earlier.edition):
            continue
        if changed & {p.base_id for p in earlier.papers}:
            try:
                again = render_stage(config, cache, earlier.edition, history=history,
                                     only_if_changed=True)
            except UsageError as err:
                log.warning("%s; its pages do not show the paper's withdrawal as it is now",
                            err)
                continue
            except PagesFailed as err:  # the rest of its pages show it
                log.warning("%s", err)
                again = err.record
            if again is not None:
                history = history.with_record(again)
    return history


def edition_inputs(cache: Cache, edition: str, records: Sequence[EditionRecord],
                   kinds: KindRegistry) -> tuple[EditionInputs, PaperFacts]:
    """What the edition is made from: the stages' results where the cache has them (they may
    be newer than the record), else the edition's own record, which holds them all."""
    fetch, synthesis = cache.get_fetch(edition), load_synthesis(cache, edition)
    if fetch is not None and synthesis is not None:
        plan = load_plan(cache, edition, list(fetch.sources))
        bundle = build_bundle(list(fetch.sources), excerpt_cap=plan.excerpt_cap if plan else None)
        return EditionInputs.of_stages(fetch, bundle, synthesis, plan.summary() if plan else "",
                                       kinds=kinds)
    record = next((r for r in records if r.edition == edition), None)
    if record is not None and record.complete:
        return EditionInputs.of_record(record)
    if record is not None:
        raise UsageError(f"edition {edition}'s record was written by an older research-digest "
                         "and holds no answers, and the cache has none: its pages cannot be "
                         "made again (build it again with `digest build`)")
    if fetch is None:
        raise UsageError(f"edition {edition} has not been fetched yet: run `digest fetch` "
                         "first (or `digest build`)")
    raise UsageError(f"edition {edition} has no synthesis yet: run `digest synthesize` first "
                     "(or `digest build`)")


def render_all(config: Config, cache: Cache) -> tuple[list[str], list[str]]:
    """Render every edition again from its record, or its cache where that is newer (no
    network): (rendered, skipped). Raises PagesFailed, naming only the editions that had a
    page fail, once everything else is written."""
    rendered, skipped, failed = _render_every(config, cache)
    if failed is not None:
        raise failed
    return rendered, skipped


def _render_every(config: Config, cache: Cache
                  ) -> tuple[list[str], list[str], PagesFailed | None]:
    """`render_all`'s work: (rendered, skipped, the pages that failed, if any)."""
    rendered, skipped = [], []
    failed: list[FailedPage] = []
    failed_editions: list[str] = []
    cached = {e for e in cache.editions_with("synthesis") if not cache.is_removed(e)}
    names = Docs(config.docs_dir).edition_names() | cached
    # An edition whose record is missing but whose cache holds it is made again; any other
    # missing record stops the render before anything is written.
    history = History.load(config.docs_dir, remaking=cached)
    history.check_complete()
    make_environment(config.workspace)  # a broken override stops it before any page is written
    for edition in sorted(names):
        if cache.is_removed(edition):
            continue
        try:
            record = render_stage(config, cache, edition, history=history)
        except UsageError as err:
            log.warning("%s; its pages are kept as they are", err)
            skipped.append(edition)
            continue
        except PagesFailed as err:  # the rest of its pages are written: go on
            failed += err.failed
            failed_editions.append(edition)
            record = err.record
        assert record is not None  # rendered whatever the fingerprint says
        history = history.with_record(record)
        rendered.append(edition)
    render_questions(config, history)
    return rendered, skipped, (PagesFailed(", ".join(failed_editions), tuple(failed))
                               if failed else None)


def render_questions(config: Config, history: History) -> list[str]:
    """Every published question's page and the list of them, again from their records alone
    (a template change reaches them too); the paths written."""
    env = make_environment(config.workspace)
    return write_questions(config.docs_dir, env, history.questions, config.registry,
                           site=Site.of(history.records))


def remove_edition(config: Config, cache: Cache, edition: str
                   ) -> tuple[list[str], PagesFailed | None]:
    """Take an edition's pages and record off the site (its cache stays); re-render the rest.

    The other editions are rendered again from the cache, since their statuses ("seen in an
    earlier edition") and their papers' edition lists may have named the removed one. Returns
    the editions that could not be re-rendered (no records in the cache), and the pages of
    the others that could not be made (the rest written: the caller builds the site all the
    same, then says so).
    """
    docs = Docs(config.docs_dir)
    if edition not in docs.edition_names() and not docs.edition_folder(edition).is_dir():
        known = ", ".join(sorted(docs.edition_names(), reverse=True)) or "none"
        raise UsageError(f"there is no edition {edition} in {config.docs_dir} (editions: {known})")
    cache.mark_removed(edition)
    docs.mark_removed(edition)  # committed: the workflow's restore leaves it out
    shutil.rmtree(docs.edition_folder(edition))
    log.info("removed the pages and record of edition %s", edition)
    rendered, skipped, failed = _render_every(config, cache)
    if not rendered:  # otherwise the last edition rendered wrote the home page and the feed
        env = make_environment(config.workspace)
        history = History.load(config.docs_dir)
        records = list(history.records)
        write_front_pages(config.docs_dir, front_pages(
            env, config.digest.title, records, config.digest.site_url,
            questions=history.questions), records)
    return skipped, failed
