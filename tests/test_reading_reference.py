"""API reference pages (rustdoc, Javadoc, pkg.go.dev, Doxygen) read with their names: the
signatures and titles over each description, which the extractors dropped for their links or
their place on the page."""

from __future__ import annotations

from readings import P, assert_in_order, read_html

URL = "https://docs.example.org/std/vec/struct.Vec.html"
#: A description of a few paragraphs, each its own.
_PROSE = "".join(f"<p>{P} This is paragraph {n} of the description.</p>" for n in range(4))
#: A reference's code: what tells a page of documentation from a news article.
_CODE = "<p>It implements <code>List</code>, <code>RandomAccess</code> and <code>Clone</code>.</p>"


def _method(name: str, signature: str, doc: str) -> str:
    """One of rustdoc's methods: a toggle whose summary holds the version, the "Source" link
    and the signature's heading, each type in it a link."""
    return (
        f'<details class="toggle method-toggle" open><summary><section id="method.{name}" '
        'class="method"><span class="rightside"><span class="since">1.0.0</span> · <a '
        f'class="src" href="../../src/alloc/vec/mod.rs.html#1990">Source</a></span><h4 '
        f'class="code-header">{signature}</h4></section></summary><div class="docblock"><p>'
        f"{doc}</p></div></details>"
    )


def test_a_signature_of_linked_types_keeps_its_words() -> None:
    """trafilatura drops a heading of two links or more nearly all short, whatever its words:
    each rustdoc method's signature (its types linked) and each impl's header went, and the
    descriptions read under no name. They read as headings of their words. The summary
    holding each, which trafilatura writes as one heading, held the version and "Source" link
    too: "## 1.0.0 · Source pub fn push(&mut self, ...)", the version run into the signature.
    The heading is the signature's words alone, the version and link a line under it."""
    impl = (
        '<details class="toggle implementors-toggle" open><summary><section id="impl-Vec" '
        'class="impl"><a class="src rightside" href="../../src/alloc/vec/mod.rs.html#402">'
        'Source</a><a href="#impl-Vec" class="anchor">§</a><h3 class="code-header">impl&lt;T&gt; '
        '<a class="struct" href="struct.Vec.html">Vec</a>&lt;T&gt;</h3></section></summary>'
        '<div class="impl-items">'
        + _method(
            "push",
            'pub fn <a href="#method.push" class="fn">push</a>(&amp;mut self, value: <a '
            'class="struct" href="../option/enum.Option.html">Option</a>&lt;T&gt;)',
            "Appends an element to the back of a collection, growing it when it is full.",
        )
        + _method(
            "pop",
            'pub fn <a href="#method.pop" class="fn">pop</a>(&amp;mut self) -&gt; <a '
            'class="enum" href="../option/enum.Option.html">Option</a>&lt;T&gt;',
            "Removes the last element from a vector and returns it, or None if it is empty.",
        )
        + "</div></details>"
    )
    page = (
        "<html><head><title>Vec in std::vec - Rust</title></head><body><main><section "
        f'id="main-content" class="content"><p>{P * 2}</p><h2 id="implementations">'
        f"Implementations</h2>{impl}</section></main></body></html>"
    )
    reading = read_html(page, URL)
    assert_in_order(
        reading,
        "## Implementations",
        "## impl\\<T> Vec\\<T>\n",
        "## pub fn push(&mut self, value: Option\\<T>)\n\n1.0.0 · Source\n\nAppends an element",
        "## pub fn pop(&mut self) -> Option\\<T>\n\n1.0.0 · Source\n\nRemoves the last element",
    )
    assert "Sourceimpl" not in reading and "Source pub fn" not in reading


def test_a_body_whose_known_container_is_its_menu_keeps_its_headings() -> None:
    """Doxygen's page has no ``<main>``; its menu, ``<div id="main-nav">``, is the one element
    whose class or id trafilatura takes for a page's body, and pruned empty it left the page to
    trafilatura's fallback, which keeps paragraphs and drops every heading: "Detailed
    Description", each member's title. A known container holding little of the text leaves
    the body bare, read in a ``<main>`` of its own. Doxygen's member permalink, a black
    diamond, goes as a permalink."""
    page = (
        "<html><head><title>MyLib: Stack Class Reference</title></head><body><div id=top>"
        '<div id="main-nav"><ul id="main-menu"><li><a href="index.html">Main Page</a></li><li>'
        '<a href="annotated.html">Classes</a></li></ul></div></div><div class="contents">'
        f"<p>{P}</p><h2 class=groupheader>Detailed Description</h2><div class=textblock><p>{P}"
        '</p></div><h2 class=groupheader>Member Function Documentation</h2><a id="a1"></a>'
        '<h2 class="memtitle"><span class="permalink"><a href="#a1">&#9670;&#160;</a></span>'
        "push()</h2><div class=memitem><div class=memdoc><p>Pushes a value onto the stack. "
        f"The value is copied, and a full stack throws.</p><p>{P}</p></div></div></div>"
        "</body></html>"
    )
    reading = read_html(page, "https://docs.example.org/classStack.html")
    assert_in_order(
        reading,
        "## Detailed Description",
        "## Member Function Documentation",
        "## push()\n",
        "Pushes a value onto the stack.",
    )
    assert "\u25c6" not in reading


def test_the_pages_title_among_links_in_its_header_is_read() -> None:
    """trafilatura drops a short ``<div>`` holding a link, and with it the page's ``<h1>`` in
    its header: rustdoc's breadcrumbs, "Struct Vec" and its "Source" link; Javadoc's
    "Package java.util" over "Class ArrayList<E>". On a page of code, the title is lifted out
    of such wrappers, what stood after it following it, in the page's order; a news page's
    headline, or one the page's title says whole, is left as it was."""
    rustdoc = (
        '<html><head><title>Vec in std::vec - Rust</title></head><body><main><section id="main-'
        'content" class="content"><div class="main-heading"><div class="rustdoc-breadcrumbs">'
        '<a href="../index.html">std</a>::<a href="index.html">vec</a></div><h1>Struct <span '
        'class="struct">Vec</span><button id="copy-path">Copy item path</button></h1><span '
        'class="sub-heading"><span class="since">1.0.0</span> · <a class="src" href="../../src/'
        f'alloc/vec/mod.rs.html#397">Source</a></span></div>{_PROSE}{_CODE}</section></main>'
        "</body></html>"
    )
    assert_in_order(read_html(rustdoc, URL), "# Struct Vec\n", "The quick brown fox")
    javadoc = (
        '<html><head><title>ArrayList (Java SE 21)</title></head><body><main role="main"><div '
        'class="header"><div class="sub-title"><span class="package-label-in-type">Package'
        '</span>&nbsp;<a href="package-summary.html">java.util</a></div><h1 title="Class '
        'ArrayList" class="title">Class ArrayList&lt;E&gt;</h1></div><section class="class-'
        f'description"><div class="block">{_PROSE}{_CODE}</div></section></main></body></html>'
    )
    reading = read_html(javadoc, "https://docs.example.org/java/util/ArrayList.html")
    assert_in_order(reading, "# Class ArrayList", "The quick brown fox")
    # Without code (a news article) it is left.
    assert "# Struct Vec" not in read_html(rustdoc.replace(_CODE, ""), URL)


def test_a_references_name_in_a_header_beside_its_article_is_read() -> None:
    """pkg.go.dev writes the package's name, its ``<h1>``, in a ``<header>`` outside the
    ``<article>`` trafilatura takes for the text, MDN the API's in a ``<header>`` beside its
    "Baseline" widget, which trafilatura drops whole: the reading began at "## Documentation"
    or at the API's first sentence, the name only in the page's title among the site's words.
    On a page of code a reading with no top heading is headed by the page's ``<h1>``; a news
    page's headline is left to the extractor."""
    gopkg = (
        "<html><head><title>http package - net/http - Go Packages</title></head><body><main "
        'class="go-Main"><header class="go-Main-header"><div class="go-Main-headerBreadcrumb">'
        '<a href="/std">Standard library</a> <a href="/net">net</a></div><div class="go-Main-'
        'headerTitle"><h1 class="UnitHeader-titleHeading">http</h1><span class="go-Chip">'
        'package</span></div><div class="go-Main-headerDetails"><span><a href="?tab=versions">'
        'Version: </a>go1.23.4</span></div></header><article class="go-Main-article"><div '
        'class="UnitDoc"><h2 class="UnitDoc-title" id="section-documentation">Documentation'
        f"</h2>{_PROSE}{_CODE}</div></article></main></body></html>"
    )
    reading = read_html(gopkg, "https://pkg.go.dev/net/http")
    assert reading.startswith("# http\n\n## Documentation\n"), reading
    mdn = (
        "<html><head><title>Array.prototype.map() - JavaScript | MDN</title></head><body><main>"
        '<article class="main-page-content"><header><h1>Array.prototype.map()</h1><details '
        'class="baseline-indicator"><summary><span class="indicator" role="img"></span><div '
        'class="status-title">Baseline <span>Widely available</span></div></summary><div '
        'class="extra"><p>This feature is well established.</p></div></details></header>'
        f'<div class="section-content">{_PROSE}{_CODE}</div></article></main></body></html>'
    )
    reading = read_html(mdn, "https://developer.mozilla.org/en-US/docs/Web/API/map")
    assert reading.startswith("# Array.prototype.map()\n\nThe quick brown fox"), reading
    assert "# Array" not in read_html(mdn.replace(_CODE, ""), URL)


def test_a_man_pages_back_to_top_links_leave_its_headings() -> None:
    """man7.org writes a link back to the page's top in each section's heading ("NAME
    [top](…#top_of_page)"), read in every heading as a word of it. It goes as a permalink."""
    sections = "".join(
        f'<h2><a id="{name}" href="#{name}"></a>{name} &nbsp; &nbsp; <a href="#top_of_page">'
        f'<span class="top-link">top</span></a></h2><pre>\n       {text}\n</pre>'
        for name, text in (
            ("NAME", "ls - list directory contents"),
            (
                "DESCRIPTION",
                "List information about the FILEs (the current directory by default). " * 6,
            ),
        )
    )
    page = (
        f"<html><head><title>ls(1) - Linux manual page</title></head><body>{sections}</body></html>"
    )
    reading = read_html(page, "https://man7.org/linux/man-pages/man1/ls.1.html")
    assert_in_order(reading, "## NAME\n", "ls - list directory", "## DESCRIPTION\n")
    assert "top_of_page" not in reading


def test_a_block_inside_a_code_block_starts_its_own_line() -> None:
    """rustdoc writes a declaration's where clause as a ``<div class="where">`` inside its
    ``<pre><code>``, right after the declaration's words: a browser shows it on a line of its
    own, and it read "pub struct Vec<T, A = Global>where"."""
    decl = (
        '<pre class="rust item-decl"><code>pub struct Vec&lt;T, A = <a class="struct" href="'
        '../alloc/struct.Global.html">Global</a>&gt;<div class="where">where\n    A: <a class='
        '"trait" href="../alloc/trait.Allocator.html">Allocator</a>,</div>{ <span class='
        '"comment">/* private fields */</span> }</code></pre>'
    )
    page = (
        "<html><head><title>Vec in std::vec - Rust</title></head><body><main><section "
        f'class="content">{decl}{_PROSE}</section></main></body></html>'
    )
    for reading in (read_html(page, URL), read_html(f"<main>{decl}</main>", URL)):
        assert "pub struct Vec<T, A = Global>\nwhere\n    A: Allocator,\n{ /* private" in reading


def test_a_javadoc_members_signature_is_read_as_code() -> None:
    """Javadoc writes each member's signature, and the class's, as inline elements in a
    ``<div class="member-signature">`` (``type-signature``): trafilatura's precision mode
    drops a div of inline elements and no paragraph, and each method's description read
    under its bare name ("add"), its return type and parameters lost. The signature reads
    as code, its links' words in it, its no-break spaces spaces."""
    member = (
        '<li><section class="detail" id="add(E)"><h3>add</h3><div class="member-signature">'
        '<span class="modifiers">public</span>&nbsp;<span class="return-type">boolean</span>'
        '&nbsp;<span class="element-name">add</span><wbr><span class="parameters">(<a href="'
        'ArrayList.html" title="type parameter in ArrayList">E</a>&nbsp;e)</span></div><div '
        'class="block">Appends the specified element to the end of this list.</div></section>'
        "</li>"
    )
    page = (
        '<html><head><title>ArrayList (Java SE 21)</title></head><body><main role="main"><h1 '
        'class="title">Class ArrayList&lt;E&gt;</h1><section class="class-description"><div '
        'class="type-signature"><span class="modifiers">public class </span><span class="'
        'element-name">ArrayList&lt;E&gt;</span> <span class="extends-implements">extends <a '
        f'href="AbstractList.html">AbstractList</a>&lt;E&gt;</span></div><div class="block">'
        f'{_PROSE}{_CODE}</div></section><section class="details"><h2>Method Details</h2><ul '
        f'class="member-list">{member}</ul></section></main></body></html>'
    )
    reading = read_html(page, "https://docs.example.org/java/util/ArrayList.html")
    assert_in_order(
        reading,
        "`public class ArrayList<E> extends AbstractList<E>`",
        "The quick brown fox",
        "## Method Details",
        "`public boolean add(E e)`",
        "Appends the specified element",
    )


def test_a_link_in_inline_code_keeps_the_words_after_it() -> None:
    """trafilatura writes an inline ``<code>`` as its text alone and loses what follows a link
    in it: Javadoc's "Specified by: ``add`` in interface ``Collection<E>``" (each name a
    link in a ``<code>``) read "[add][Collection]", and a sentence naming a linked type in
    code lost its words after it. A link that is all of its code span's words reads as a
    link around the span; one among other words leaves its words in the span."""
    specified = (
        '<dl class="notes"><dt>Specified by:</dt><dd><code><a href="Collection.html#add(E)">'
        'add</a></code>&nbsp;in interface&nbsp;<code><a href="Collection.html" title="'
        'interface in java.util">Collection</a>&lt;<a href="ArrayList.html">E</a>&gt;</code>'
        "</dd></dl>"
    )
    page = (
        '<html><head><title>ArrayList (Java SE 21)</title></head><body><main role="main"><h1 '
        f'class="title">Class ArrayList&lt;E&gt;</h1><div class="block">{_PROSE}{_CODE}<p>Use '
        '<code><a href="List.html">List</a></code> when the order matters, and <code>Set'
        "<b>s</b></code> when it does not.</p></div><section class='details'><h2>Method "
        '</h2><section class="detail" id="add(E)"><h3>add</h3><div class="block">Appends '
        f"the specified element to the end of this list.</div>{specified}</section></section>"
        "</main></body></html>"
    )
    reading = read_html(page, "https://docs.example.org/java/util/ArrayList.html")
    assert_in_order(
        reading,
        "Use [`List`](https://docs.example.org/java/util/List.html) when the order matters, "
        "and `Sets` when it does not.",
        "### add",
        "[`add`](<https://docs.example.org/java/util/Collection.html#add(E)>) in interface "
        "`Collection<E>`",
    )


def test_doxygens_member_tables_and_prototypes_are_read() -> None:
    """Doxygen opens each table of members (``memberdecls``) with a row of one cell holding
    its heading (``<h2><a id="pub-methods"></a>Public Member Functions</h2>``), and writes
    each member's prototype as a template line over a ``<table class="memname">`` of short
    cells: trafilatura dropped the heading (a heading holding a link) and the prototype, the
    members' rows read with no header line under no heading, and each member's
    documentation under "push()" alone. The heading goes before its table, and the
    prototype reads as a line of code."""
    page = (
        "<html><head><title>MyLib: Stack Class Reference</title></head><body><div "
        f'class="contents"><p>{P}</p><table class="memberdecls"><tr class="heading"><td '
        'colspan="2"><h2 class="groupheader"><a id="pub-methods" name="pub-methods"></a>Public '
        'Member Functions</h2></td></tr><tr class="memitem:a1"><td class="memItemLeft">void'
        '&#160;</td><td class="memItemRight"><a class="el" href="#a1">push</a> (const T '
        '&amp;value)</td></tr><tr class="memdesc:a1"><td class="mdescLeft">&#160;</td><td '
        'class="mdescRight">Pushes a value onto the stack.</td></tr></table><h2 class="'
        f'groupheader">Detailed Description</h2><div class="textblock"><p>{P}</p><p>{P} More.'
        '</p></div><h2 class="groupheader">Member Function Documentation</h2><a id="a1"></a><h2 '
        'class="memtitle">push()</h2><div class="memitem"><div class="memproto"><div class='
        '"memtemplate">template&lt;typename T &gt; </div><table class="memname"><tr><td '
        'class="memname">void <a class="el" href="#">Stack</a>&lt; T &gt;::push </td><td>(</td>'
        '<td class="paramtype">const T &amp;&#160;</td><td class="paramname"><em>value</em></td>'
        '<td>)</td></tr></table></div><div class="memdoc"><p>Pushes a value onto the stack. The '
        f"value is copied, and a full stack throws.</p><p>{P}</p></div></div></div></body></html>"
    )
    reading = read_html(page, "https://docs.example.org/classStack.html")
    assert_in_order(
        reading,
        "## Public Member Functions\n\n| void",
        "|---|",
        "Pushes a value onto the stack.",
        "## push()\n\n`template<typename T > void Stack< T >::push (const T & value)`\n",
        "The value is copied",
    )


def test_a_pages_own_asterisks_in_emphasis_read_as_its_words() -> None:
    """Sphinx writes a parameter list's ``<strong>**kwargs</strong>``: on a page read whole
    (html-to-markdown's reading) it came out "****kwargs**", the page's asterisks run into
    the emphasis markers, which a Markdown reader takes for other emphasis. The page's own
    "*" is escaped, as trafilatura's reading escapes it; a formula's TeX keeps its "*"."""
    page = (
        "<html><head><title>requests.api</title></head><body><main><dl class=field-list><dt>"
        "Parameters:</dt><dd><ul><li><p><strong>**kwargs</strong> \u2013 Optional arguments "
        "that <code>request</code> takes.</p></li><li><p><strong>*args</strong> (<em>tuple</em>)"
        ' \u2013 positional.</p></li></ul></dd></dl><p>It costs <math alttext="a^* = b*c"><mi>a'
        "</mi></math> per call.</p></main></body></html>"
    )
    reading = read_html(page, "https://docs.example.org/api.html")
    assert_in_order(
        reading,
        "**\\*\\*kwargs** \u2013 Optional arguments that `request` takes.",
        "**\\*args** (*tuple*) \u2013 positional.",
        "It costs $a^* = b*c$ per call.",
    )
    assert "****" not in reading


def test_a_pages_own_underscores_at_a_words_edges_read_as_its_words() -> None:
    """A page read whole (html-to-markdown's reading) wrote the page's ``__init__`` as it
    stood, Markdown's strong emphasis around "init" (``*__init__*`` an emphasised strong
    "init"), where trafilatura's reading escapes it. The underscores at a word's edges are
    escaped now, as trafilatura's are; one inside a word stays bare (Markdown reads nothing
    there), as do code spans, a formula's TeX and a link's target."""
    page = (
        "<html><head><title>Classes</title></head><body><main><h1>Classes</h1><p>Python calls "
        "<em>__init__</em> after <strong>__new__</strong>, and my_var_name is a name.</p><p>"
        "The <a href='/_private_/x'>__init__.py</a> file, <code>__all__</code> and <math "
        'alttext="x_i + _a_"><mi>x</mi></math> too.</p></main></body></html>'
    )
    reading = read_html(page, "https://docs.example.org/classes.html")
    assert_in_order(
        reading,
        "Python calls *\\_\\_init\\_\\_* after **\\_\\_new\\_\\_**, and my_var_name is a name.",
        "The [\\_\\_init\\_\\_.py](https://docs.example.org/_private_/x) file, `__all__` and "
        "$x_i + _a_$ too.",
    )


def test_doxygens_title_written_in_a_div_reads_as_the_pages_heading() -> None:
    """Doxygen writes a class page's title as ``<div class="headertitle"><div class="title">``
    beside a summary of links to the page's sections, not as an ``<h1>``: trafilatura
    dropped the header (a short div holding links), and the reference read with no name
    over it. A block of class "title", on a page without an ``<h1>``, whose words are all
    the page's ``<title>``'s reads as its heading, once; one saying other words stays."""
    header = (
        '<div class="header"><div class="summary"><a href="#pub-methods">Public Member '
        'Functions</a> | <a href="classStack-members.html">List of all members</a></div><div '
        'class="headertitle"><div class="title">mylib::Stack&lt; T &gt; Class Template '
        "Reference</div></div></div>"
    )
    page = (
        "<html><head><title>MyLib: mylib::Stack&lt; T &gt; Class Template Reference</title>"
        f'</head><body><div id="top"></div>{header}<div class="contents"><p>A last-in, '
        f"first-out container of values.</p>{_PROSE}{_CODE}</div></body></html>"
    )
    reading = read_html(page, "https://docs.example.org/classmylib_1_1Stack.html")
    assert_in_order(
        reading, "# mylib::Stack\\< T ", " Class Template Reference\n\nA last-in, first-out"
    )
    assert reading.count("Class Template Reference") == 1
    other = read_html(page.replace("Class Template Reference</div>", "Overview</div>"), URL)
    assert "# mylib" not in other


def test_a_package_pages_header_lines_follow_its_title_out_of_the_header() -> None:
    """PyPI writes a project's header as ``<div class="banner">`` of its name and version, a
    ``pip install`` line and the release date beside a "Latest version" link: trafilatura
    drops the short div holding the link (and a banner's class), the title was lifted out
    of it, and the install line and the date stayed behind, lost. The header's paragraphs of
    words and no link follow the title out, in order; a line holding a link stays."""
    header = (
        '<div class="banner"><div class="package-header"><div class="package-header__left"><h1 '
        'class="package-header__name">requests 2.32.3</h1><p class="package-header__pip-'
        'instructions"><span id="pip-command">pip install requests</span><button type="button"'
        '>Copy</button></p></div><div class="package-header__right"><a class="status-badge" '
        'href="/project/requests/"><span>Latest version</span></a><p class="package-header__'
        'date">Released: <time datetime="2024-05-29">May 29, 2024</time></p><p>See <a href="/'
        'h">history</a></p></div></div></div>'
    )
    page = (
        "<html><head><title>requests · PyPI</title></head><body><main>"
        f'{header}<div class="project-description"><p>Python HTTP for Humans.</p>{_PROSE}'
        f"{_CODE}</div></main></body></html>"
    )
    reading = read_html(page, "https://pypi.org/project/requests/")
    assert_in_order(
        reading,
        "# requests 2.32.3\n\npip install requests\n\nReleased: May 29, 2024\n",
        "Python HTTP for Humans.",
    )
    assert "history" not in reading
