"""The post-build check finds every form of live markup, as a browser parses it, and no more."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.publish.inert import check_site, live_in_fragment

THEME_HEAD = ('<script>__md_scope=new URL("{base}",location)</script>'
              '<link rel="stylesheet" href="{base}/assets/main.css">'
              '<script id="__config" type="application/json">{{"base": "{base}"}}</script>')
THEME_BODY = ('<form class="md-search__form" name="search"><input type="text" name="query">'
              '</form><script src="{base}/assets/bundle.js"></script>')


def page(title: str, body: str, base: str) -> str:
    return (f"<!doctype html><html><head><meta charset=utf-8><title>{title}</title>"
            f"{THEME_HEAD.format(base=base)}</head><body>{THEME_BODY.format(base=base)}"
            f"<article>{body}</article></body></html>")


def site(tmp_path: Path, title: str, body: str) -> Path:
    (tmp_path / "404.html").write_text(page("404", "", "/sub"))
    (tmp_path / "editions" / "e").mkdir(parents=True)
    (tmp_path / "editions" / "e" / "p.html").write_text(page(title, body, "../.."))
    return tmp_path


def test_the_theme_itself_passes(tmp_path: Path) -> None:
    assert check_site(site(tmp_path, "A &lt;b&gt; &amp; &quot;q&quot;", "<p>text</p>"),
                      base_path="/sub/") == []


LIVE = [
    ("Attention </title><script>window.__pwned=1</script>", "<p>x</p>", "<script>"),
    ("t", '<a href="#x" onfocus="alert(1)" autofocus>x</a>', "onfocus"),
    ("t", '<a href="JaVaScRiPt:alert(1)">x</a>', "script URL"),
    ("t", '<a href="&#106;avascript:alert(1)">x</a>', "script URL"),
    ("t", '<a href="&#x6A;ava&#x09;script:alert(1)">x</a>', "script URL"),
    ("t", '<a href=" \x01java\nscript:alert(1)">x</a>', "script URL"),
    ("t", '<a href="vbscript:msgbox(1)">x</a>', "script URL"),
    ("t", '<a href="data:text/html;base64,PHNjcmlwdD4=">x</a>', "script URL"),
    ("t", "<iframe src=//evil></iframe>", "<iframe"),
    ("t", "<object data=x></object>", "<object"),
    ("t", "<embed src=x>", "<embed"),
    ("t", "<form action=https://evil><button>go</button></form>", "<form"),
    ("t", "<base href=https://evil/>", "<base"),
    ("t", "<meta http-equiv=refresh content='0;url=https://evil'>", "<meta"),
    ("t", "<svg><circle onload=alert(1) r=1 /></svg>", "onload"),
    ("t", "<svg><a xlink:href='javascript:alert(1)'><text>x</text></a></svg>", "script URL"),
    ("t", "<svg><animate attributeName=href to=javascript:alert(1) /></svg>", "<animate"),
    ("t", "<math><mi xlink:href=javascript:alert(1)>x</mi></math>", "script URL"),
    ("t", "<style>@import url(//evil)</style>", "<style>"),
    ("t", '<p style="background:u\\72l(//evil)">x</p>', "loads"),
    ("t", "<img src=https://evil/x.png>", "<img"),
    ("t", "<link rel=stylesheet href=https://evil/x.css>", "<link"),
    ("t", "<script src=../../assets/bundle.js></script><script>alert(1)</script>", "<script>"),
]


@pytest.mark.parametrize(("title", "body", "found"), LIVE)
def test_every_payload_form_is_found(tmp_path: Path, title: str, body: str, found: str) -> None:
    problems = check_site(site(tmp_path, title, body), base_path="/sub/")
    assert problems, body
    assert all(p.path == "editions/e/p.html" for p in problems)
    assert any(found in str(p) for p in problems), problems


INERT = [
    "&lt;script&gt;alert(1)&lt;/script&gt;", "<code>&lt;iframe&gt;</code>",
    '<a href="https://arxiv.org/abs/1">x</a>', '<a href="papers/x.html" title="&quot;">x</a>',
    '<svg viewBox="0 0 1 1" role="img"><title>&lt;script&gt;</title><rect x="0" /></svg>',
    "<math><mi>x</mi></math>", '<td style="text-align: right">1</td>',
    # After body content a browser ignores a frameset, as the HTML5 parser says.
    "<p>x</p><frameset><frame src=x></frameset>",
]


@pytest.mark.parametrize("body", INERT)
def test_text_that_only_looks_like_markup_is_inert(tmp_path: Path, body: str) -> None:
    assert check_site(site(tmp_path, "&lt;script&gt;", body), base_path="/sub/") == []
    assert live_in_fragment(body) == []


def test_without_a_404_page_every_script_is_refused(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(page("t", "", "."))
    assert any("<script>" in str(p) for p in check_site(tmp_path))


def test_xml_files_must_be_well_formed_and_carry_no_markup(tmp_path: Path) -> None:
    (tmp_path / "feed.xml").write_text('<feed xmlns="http://www.w3.org/2005/Atom">\x07</feed>')
    (tmp_path / "sitemap.xml").write_text(
        '<urlset><x:script xmlns:x="http://www.w3.org/1999/xhtml">1</x:script></urlset>')
    (tmp_path / "pic.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" onload="x()"/>')
    found = {p.path: p.what for p in check_site(tmp_path)}
    assert "not well-formed" in found["feed.xml"]
    assert "<script>" in found["sitemap.xml"]
    assert "onload" in found["pic.svg"]


def test_the_search_index_is_read_as_material_renders_it(tmp_path: Path) -> None:
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "search_index.json").write_text(
        '{"docs": [{"location": "a/", "title": "&lt;b&gt;", "text": "<p>ok</p>"},'
        ' {"location": "b/", "title": "<img src=x onerror=alert(1)>", "text": ""}]}')
    problems = check_site(tmp_path)
    assert [p.path for p in problems] == ["search/search_index.json"]
    assert "b/" in problems[0].what and "onerror" in problems[0].what


def test_html_in_a_feed_entry_is_read_as_a_feed_reader_renders_it(tmp_path: Path) -> None:
    atom = '<feed xmlns="http://www.w3.org/2005/Atom"><entry><content type="html">{}</content>' \
           '</entry></feed>'
    (tmp_path / "feed.xml").write_text(atom.format(
        "&lt;p&gt;fine &lt;a href=\"papers/x.html\"&gt;link&lt;/a&gt;&lt;/p&gt;"))
    assert check_site(tmp_path) == []
    (tmp_path / "feed.xml").write_text(atom.format("&lt;img src=x onerror=alert(1)&gt;"))
    assert [p.what for p in check_site(tmp_path)] == [
        '<img src="x" onerror="alert(1)"> in the HTML of <content>']
