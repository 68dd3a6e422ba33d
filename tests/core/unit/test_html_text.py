"""HTML pages as a reader sees them (``retrieval/html_text.py``), on small pages written here in
the style of Sphinx, mdBook and rustdoc: a link is its text (a web link stays a link), a
signature is one code span with a single ``*``, a footnote mark is a superscript and its note
stays, a table keeps its rows and columns."""

from __future__ import annotations

from resolveflow.domain.reading_text import Table, blocks
from resolveflow.retrieval.html_text import html_text
from resolveflow.retrieval.loaders import TextLimits


def body(html: str) -> str:
    return html_text("page.html", html.encode(), TextLimits())[1]


def _sig_param(name: str, default: str | None = None, star: str = "") -> str:
    mark = f'<span class="o"><span class="pre">{star}</span></span>' if star else ""
    value = (
        f'<span class="o"><span class="pre">=</span></span>'
        f'<span class="default_value"><span class="pre">{default}</span></span>'
        if default
        else ""
    )
    return (
        f'<em class="sig-param">{mark}<span class="n"><span class="pre">{name}</span></span>'
        f"{value}</em>"
    )


SPHINX_SIGNATURE = (
    '<dl class="py class"><dt class="sig sig-object py" id="csv.DictReader">'
    '<em class="property"><span class="k"><span class="pre">class</span></span>'
    '<span class="w"> </span></em>'
    '<span class="sig-prename descclassname"><span class="pre">csv.</span></span>'
    '<span class="sig-name descname"><span class="pre">DictReader</span></span>'
    '<span class="sig-paren">(</span>'
    + ", ".join(
        [
            _sig_param("f"),
            _sig_param("fieldnames", "None"),
            _sig_param("restkey", "None"),
            _sig_param("restval", "None"),
            _sig_param("dialect", "'excel'"),
            _sig_param("args", star="*"),
            _sig_param("kwds", star="**"),
        ]
    )
    + '<span class="sig-paren">)</span>'
    '<a class="headerlink" href="#csv.DictReader" title="Link to this definition">¶</a></dt>'
    "<dd><p>Create an object that maps each row to a dict.</p></dd></dl>"
)


def test_a_sphinx_signature_reads_as_the_page_shows_it_with_one_star() -> None:
    text = body(f'<div role="main">{SPHINX_SIGNATURE}</div>')
    assert (
        "`class csv.DictReader(f, fieldnames=None, restkey=None, restval=None, "
        "dialect='excel', *args, **kwds)`" in text
    )
    assert "***" not in text and "¶" not in text


def test_a_keyword_only_star_is_never_emphasis() -> None:
    keyword_only = (
        '<dl class="py function"><dt class="sig sig-object py">'
        '<span class="sig-name descname"><span class="pre">writer</span></span>'
        f'<span class="sig-paren">(</span>{_sig_param("csvfile")}, '
        '<em class="sig-param"><span class="o"><span class="pre">*</span></span></em>, '
        f'{_sig_param("dialect", "excel")}<span class="sig-paren">)</span></dt>'
        "<dd><p>Takes <em>*args</em> in prose, and a bare * too.</p></dd></dl>"
    )
    text = body(f"<main>{keyword_only}</main>")
    assert "`writer(csvfile, *, dialect=excel)`" in text
    # In prose a literal star is escaped, so a Markdown renderer shows it as a star.
    assert "*\\*args*" in text and "a bare \\* too" in text


def test_an_older_sphinx_signature_without_the_sig_class_is_one_code_span() -> None:
    old = (
        '<dl class="function"><dt id="csv.reader"><code class="descclassname">csv.</code>'
        '<code class="descname">reader</code><span class="sig-paren">(</span>'
        '<em>csvfile</em>, <em>**fmtparams</em><span class="sig-paren">)</span></dt>'
        "<dd><p>Return a reader.</p></dd></dl>"
    )
    assert "`csv.reader(csvfile, **fmtparams)`" in body(f"<main>{old}</main>")


def test_a_link_reads_as_its_text_and_only_a_web_link_stays_a_link() -> None:
    page = (
        '<main><p>The <a class="reference internal" href="zipfile.html#module-zipfile" '
        'title="zipfile"><code class="xref py py-mod"><span class="pre">zipfile</span></code></a>'
        ' module, <a href="../std/vec/struct.Vec.html">Vec</a>, '
        '<a href="javascript:alert(1)">click</a>, <a href="mailto:a@example.org">write</a> and '
        '<a class="reference external" href="https://www.rfc-editor.org/rfc/rfc4180.html" '
        'title="the RFC">RFC 4180</a>.</p></main>'
    )
    text = body(page)
    assert text.strip() == (
        "The `zipfile` module, Vec, click, write and "
        "[RFC 4180](https://www.rfc-editor.org/rfc/rfc4180.html)."
    )


def test_a_sphinx_footnote_mark_is_a_superscript_and_its_note_stays() -> None:
    page = (
        '<main><p>Keys come from <em>fieldnames</em>.<a class="footnote-reference brackets" '
        'href="#id4" id="id1" role="doc-noteref"><span class="fn-bracket">[</span>4'
        '<span class="fn-bracket">]</span></a></p>'
        '<aside class="footnote-list brackets"><aside class="footnote brackets" id="id4" '
        'role="doc-footnote"><span class="label"><span class="fn-bracket">[</span>'
        '<a role="doc-backlink" href="#id1">4</a><span class="fn-bracket">]</span></span>'
        "<p>Open the file with newline=''.</p></aside></aside>"
        "<aside><p>A sidebar is chrome.</p></aside></main>"
    )
    text = body(page)
    assert "Keys come from *fieldnames*.⁴" in text
    assert "⁴ Open the file with newline=''." in text
    assert "[4]" not in text and "sidebar" not in text


def test_mdbook_and_rustdoc_footnotes_read_as_superscripts_without_back_links() -> None:
    mdbook = (
        '<main><p>Text<sup class="footnote-reference" id="fr-1-1"><a href="#footnote-1">1</a>'
        '</sup> more.</p><div class="footnote-definition" id="footnote-1">'
        '<sup class="footnote-definition-label">1</sup><p>The note.</p></div></main>'
    )
    assert " ".join(body(mdbook).split()) == "Text¹ more. ¹ The note."
    rustdoc = (
        '<main><p>Sized<sup id="fnref1"><a href="#fn1">1</a></sup>.</p>'
        '<div class="footnotes"><hr><ol><li id="fn1"><p>Known at compile time.&nbsp;'
        '<a href="#fnref1">↩</a></p></li></ol></div></main>'
    )
    text = body(rustdoc)
    assert "Sized¹." in text and "1. Known at compile time." in text
    assert "↩" not in text and "[1]" not in text


def test_a_table_keeps_its_rows_and_columns_and_a_cell_keeps_its_pipe() -> None:
    page = (
        '<main><table class="docutils"><thead><tr><th><p>Directive</p></th>'
        "<th><p>Meaning</p></th></tr></thead><tbody>"
        '<tr><td><p><code class="docutils literal"><span class="pre">%a</span></code></p></td>'
        "<td><p>Weekday as a name.</p></td></tr>"
        "<tr><td><p><code>a|b</code></p></td><td><p>Either | or.</p></td></tr>"
        "</tbody></table></main>"
    )
    found = [b for b in blocks(body(page)) if isinstance(b, Table)]
    assert found == [
        Table(
            ("Directive", "Meaning"),
            (("`%a`", "Weekday as a name."), ("`a|b`", "Either | or.")),
        )
    ]


def test_an_mdbook_table_without_a_header_keeps_its_rows() -> None:
    page = "<main><table><tr><td>cargo build</td><td>compile</td></tr><tr><td>cargo run</td><td>run it</td></tr></table></main>"
    found = [b for b in blocks(body(page)) if isinstance(b, Table)]
    assert found == [Table(None, (("cargo build", "compile"), ("cargo run", "run it")))]


def test_a_table_in_a_definition_starts_its_lines_so_it_renders_as_a_table() -> None:
    page = (
        "<main><dl><dt>codes</dt><dd><p>The codes:</p><table><thead><tr><th>Code</th>"
        "<th>Meaning</th></tr></thead><tbody><tr><td>%Y</td><td>Year.</td></tr></tbody>"
        "</table></dd></dl></main>"
    )
    lines = body(page).splitlines()
    assert "| Code | Meaning |" in lines and "| %Y | Year. |" in lines
