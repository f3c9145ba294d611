"""Untrusted text becomes inert Markdown; model Markdown keeps its formatting but not its HTML."""

from __future__ import annotations

import markdown

from generator.publish.sanitize import sanitize_html
from generator.text.safe_text import md_cell, md_model, md_text, safe_url, tex_accents
from tests.htmlcheck import elements, live_problems

EXTENSIONS = ["tables", "attr_list", "admonition", "pymdownx.superfences"]


def html(md: str) -> str:
    return sanitize_html(markdown.markdown(md, extensions=EXTENSIONS))


def test_plain_text_shows_markup_as_text() -> None:
    title = '<script>alert(1)</script> *bold* [x](javascript:alert(1)) {: onclick="x" } #1 | a'
    out = markdown.markdown(md_text(title), extensions=EXTENSIONS)
    assert [tag for tag, _ in elements(out)] == ["p"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt; *bold* [x](javascript:alert(1))" in out


def test_line_starts_do_not_become_lists_or_headings() -> None:
    out = markdown.markdown(md_text("1. not a list\n- nor this\n# nor this"))
    assert "<ol>" not in out and "<ul>" not in out and "<h1>" not in out


def test_table_cells_stay_in_their_column() -> None:
    table = "| a | b |\n|---|---|\n| " + md_cell("x | y\nz") + " | 2 |\n"
    out = markdown.markdown(table, extensions=["tables"])
    assert out.count("<td>") == 2 and "x | y z" in out


def test_math_becomes_mathml_and_accents_become_letters() -> None:
    out = md_text(r'The $I$-$V$ curve of B\"uttiker and {\'E}cole, $x_1^2 * y$ and $a*b*c$')
    assert out.count("<math") == 4
    # Each formula is parsed (x with its subscript and superscript), not copied as text; its
    # TeX is kept only as the annotation; Markdown reads none of it (no emphasis in a*b*c).
    rendered = html(out)
    assert ("<mrow><mi>a</mi><mo>*</mo><mi>b</mi><mo>*</mo><mi>c</mi></mrow>"
            '<annotation encoding="application/x-tex">a*b*c</annotation>') in rendered
    assert ("<mrow><mi>I</mi></mrow>" in rendered and "<mrow><mi>V</mi></mrow>" in rendered)
    assert "<mrow><msubsup><mi>x</mi><mn>1</mn><mn>2</mn></msubsup><mo>*</mo><mi>y</mi></mrow>" \
        in rendered
    assert '<annotation encoding="application/x-tex">x_1^2 * y</annotation>' in rendered
    assert "$" not in rendered and "<em>" not in rendered and "<sub>" not in rendered
    # The accents are letters, and no TeX of them is left.
    assert "curve of Büttiker and École," in rendered
    assert "\\" not in rendered and "{" not in rendered
    assert tex_accents(r"Wübben \"O") == "Wübben Ö"


def test_broken_math_stays_text() -> None:
    out = md_text(r"costs $\frac{1}{$ and more")
    assert "<math" not in out and "costs" in out


def test_model_markdown_keeps_formatting_and_loses_html() -> None:
    answer = (
        "# Findings\n\n**Bold** and *it*, `code <b>`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "<script>alert('x')</script>\n<img src=x onerror=alert(1)>\n"
        "[click](javascript:alert(1)) [ok](https://arxiv.org/abs/1)\n\n"
        "[ref]: javascript:alert(2)\n\n```html\n<script>kept</script>\n```\n"
        "Para {: onclick=\"alert(3)\" }\n"
    )
    md = md_model(answer)
    assert md.startswith("## Findings")
    out = html(md)
    assert "<h2" in out and "<strong>Bold</strong>" in out and "<table>" in out
    assert "<code>code &lt;b&gt;</code>" in out
    assert live_problems(out) == []
    # The same answer without our Markdown escaping is still made inert by the sanitizer.
    assert live_problems(html(answer)) == []
    assert live_problems(markdown.markdown(answer, extensions=EXTENSIONS)) != []
    assert 'href="https://arxiv.org/abs/1"' in out
    assert '<span class="nx">kept</span>' in out  # highlighted code, not a live script
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in out


def test_unclosed_fence_cannot_swallow_the_page() -> None:
    assert md_model("```\ncode").endswith("```")


def test_heading_shift() -> None:
    assert md_model("# A\n###### B", shift=2).splitlines() == ["### A", "###### B"]


def test_safe_url_allows_only_http() -> None:
    assert safe_url("https://arxiv.org/pdf/1234.5678v1") == "https://arxiv.org/pdf/1234.5678v1"
    assert safe_url("javascript:alert(1)") is None
    assert safe_url("https://arxiv.org/a b)") == "https://arxiv.org/a%20b%29"


def test_clean_drops_control_and_bidi_characters_but_keeps_text() -> None:
    from generator.text.safe_text import clean

    assert clean("a\x00b\x07c\x1b[0m\x7f\x85d\r\ne\rf\tg") == "abc[0md\ne\nf\tg"
    assert clean("evil\u202egnp.exe \u2066x\u2069") == "evilgnp.exe x"
    assert clean("lone \ud800 surrogate") == "lone  surrogate"
    assert clean("日本語 Ωmega — “quotes”") == "日本語 Ωmega — “quotes”"


def test_page_titles_are_escaped_once() -> None:
    from generator.text.safe_text import page_title

    assert page_title('a < b & "c"\x00 \u202ed') == "a &lt; b &amp; &quot;c&quot; d"


def test_attribute_lists_in_model_output_stay_text() -> None:
    for answer in ["## Findings { id='x\"autofocus onfocus=alert(1)//' }", "## H {: #x }",
                   "Text {.cls onclick=alert(1)}"]:
        out = markdown.markdown(md_model(answer), extensions=EXTENSIONS)  # no sanitizer
        assert "onfocus" not in str(elements(out)) and "onclick" not in str(elements(out))
        assert "{" in out and "id=" not in str(elements(out))


def test_a_reference_definition_on_any_line_of_a_paragraph_is_disarmed() -> None:
    # Found by the property test: the definition on the third line used to escape only when
    # it stood on the paragraph's first line.
    answer = "<script>alert(1)</script>[r]: javascript:alert(1)\n# H\n[r]: javascript:alert(1)"
    out = markdown.markdown(md_model(answer), extensions=EXTENSIONS)
    assert live_problems(out) == []


def test_math_in_model_answers_becomes_mathml_with_its_tex_kept() -> None:
    answer = ("Attention costs $O(n^2)$ and \\(x_i\\), while\n\n$$\\frac{a+b}{2}$$\n\n"
              "a price of $5 and $10 stays text; `$code$` too.")
    out = html(md_model(answer))
    assert out.count("<math") == 3 and 'display="block"' in out
    assert '<annotation encoding="application/x-tex">O(n^2)</annotation>' in out
    assert "$5 and $10" in out and "<code>$code$</code>" in out
    assert "$O(" not in out and "\\(" not in out


def test_math_cannot_carry_markup_out_of_a_model_answer() -> None:
    # Judged before the sanitizer, which would hide a slip here: Markdown alone makes nothing.
    out = markdown.markdown(md_model(
        "A $<script>alert(1)</script>$ and $x {: onclick=y}$ formula.\n\n"
        "$[x](javascript:alert(1))$\n\nA title: $\\omega [y](javascript:z)$"),
        extensions=EXTENSIONS)
    assert live_problems(out) == []
    assert "<script" not in out and "href=" not in out and 'onclick="' not in out


def test_a_list_right_under_a_line_of_text_is_a_list() -> None:
    answer = ("Key findings:\n- Paper 1 is fast\n  - with two-space nesting\n- Paper 2 is not\n"
              "Ranked:\n1. first\n2. second\nAs a table:\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    out = html(md_model(answer))
    assert out.count("<ul>") == 2 and "<ol>" in out and "<table>" in out
    assert "<p>Key findings:</p>" in out
    # The nested item is nested, not a sibling of its parent.
    assert "Paper 1 is fast<ul>" in out.replace("\n", "")


def test_titles_tooltips_and_the_feed_spell_math_as_text() -> None:
    from generator.text.safe_text import page_title, plain, tooltip
    from generator.text.tex import plain_math

    assert plain("$\\omega$Test") == "ωTest" and page_title("$\\omega$Test") == "ωTest"
    assert tooltip("$\\omega$Test (v2)") == "ωTest v2"
    assert plain_math("$O(m \\cdot t)$ and $10^{-3}$, $\\frac{a+b}{2}$") == "O(m·t) and 10⁻³, (a+b)/2"
