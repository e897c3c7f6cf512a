"""A recipe card's times and yield, written as lines of a label and its value, are read
(webward._convert._labelled_lines)."""

from __future__ import annotations

from readings import P, assert_in_order, read_html

URL = "https://kitchen.example.com/banana-bread/"
#: The story before the card, long enough that the page is read for its article.
_PROSE = "".join(f"<p>{P} This is paragraph {n} of the story.</p>" for n in range(5))


def _time(kind: str, label: str, value: str, unit: str) -> str:
    """One of WP Recipe Maker's lines: a label span and the value's spans, in a div."""
    return (
        f'<div class="wprm-recipe-block-container wprm-recipe-time-container wprm-recipe-{kind}-'
        f'time-container"><span class="wprm-recipe-details-label wprm-block-text-faded '
        f'wprm-recipe-{kind}-time-label">{label}</span><span class="wprm-recipe-time"><span '
        f'class="wprm-recipe-details wprm-recipe-{kind}_time">{value}</span> <span class="wprm-'
        f'recipe-details-unit">{unit}</span></span></div>'
    )


def test_a_recipe_cards_times_and_yield_are_read() -> None:
    """WP Recipe Maker writes each of a recipe's times and its servings as a ``<div>`` of a
    label span and the value's spans, in a ``wprm-recipe-meta-container``: trafilatura drops a
    div of inline elements and no paragraph, and a div whose class holds "meta", and the
    card read its ingredients and steps without how long it takes or what it makes. Each
    line reads as a paragraph, its label apart from its value; a div of inline elements
    whose first is no label is left to the extractor."""
    times = (
        _time("prep", "Prep Time", "15", "mins")
        + _time("cook", "Cook Time", "1", "hr")
        + '<div class="wprm-recipe-block-container wprm-recipe-servings-container"><span class="'
        'wprm-recipe-details-label wprm-recipe-servings-label">Servings</span><span class="wprm-'
        'recipe-servings">10</span> <span class="wprm-recipe-servings-unit">slices</span></div>'
    )
    page = (
        "<html><head><title>Easy Banana Bread</title></head><body><main><article><h1>Easy Banana"
        f" Bread</h1>{_PROSE}<div class=wprm-recipe-container>"
        '<h2 class="wprm-recipe-name">Easy Banana Bread</h2><div class="wprm-recipe-meta-'
        f'container wprm-recipe-times-container">{times}</div><h3>Ingredients</h3><ul><li>3 '
        "ripe bananas</li><li>2 cups flour</li></ul><h3>Instructions</h3><ol><li>Mash the "
        "bananas in a bowl with a fork.</li><li>Stir in the flour and bake for an hour.</li></ol>"
        f"</div><p>{P} The end.</p></article></main></body></html>"
    )
    reading = read_html(page, URL)
    assert_in_order(
        reading,
        "## Easy Banana Bread\n",
        "\nPrep Time 15 mins\n",
        "\nCook Time 1 hr\n",
        "\nServings 10 slices\n",
        "### Ingredients",
        "Mash the bananas",
    )
    unlabelled = page.replace("-label", "-name")
    assert "Prep Time" not in read_html(unlabelled, URL)


def test_a_recipe_cards_summary_and_notes_written_as_block_spans_are_read() -> None:
    """WP Recipe Maker writes the card's summary and its notes as a ``<span style="display:
    block;">`` alone in a ``<div>``: trafilatura's precision mode drops a div of inline
    elements and no paragraph, and the card read without what it makes and what to mind.
    Such a span reads as a paragraph; a span displayed as a block beside other words stays
    in its line."""
    card = (
        '<div class="wprm-recipe-container"><div class="wprm-recipe"><h2 class="wprm-recipe-name'
        '">Easy Banana Bread</h2><div class="wprm-recipe-summary wprm-block-text-normal"><span '
        'style="display: block;">This easy banana bread needs one bowl, no mixer and three '
        "overripe bananas.</span></div>"
        + _time("prep", "Prep Time", "15", "mins")
        + '<div class="wprm-recipe-ingredients-container"><h3 class="wprm-recipe-header">'
        'Ingredients</h3><ul class="wprm-recipe-ingredients"><li class="wprm-recipe-ingredient">'
        '3 ripe bananas</li><li>1 cup sugar</li></ul></div><div class="wprm-recipe-notes-'
        'container"><h3 class="wprm-recipe-header">Notes</h3><div class="wprm-recipe-notes">'
        '<span style="display:block">The riper the bananas, the sweeter the bread.</span></div>'
        '</div><div class="wprm-recipe-tags"><b>Cuisine</b><span style="display: block">American'
        "</span></div></div></div>"
    )
    page = (
        "<html><head><title>Easy Banana Bread</title></head><body><main><article><h1>Easy Banana"
        f" Bread</h1>{_PROSE}{card}</article></main></body></html>"
    )
    reading = read_html(page, URL)
    assert_in_order(
        reading,
        "## Easy Banana Bread\n\nThis easy banana bread needs one bowl",
        "Prep Time 15 mins",
        "- 3 ripe bananas",
        "### Notes\n\nThe riper the bananas, the sweeter the bread.",
    )
    assert "\n\nAmerican" not in reading


def test_a_list_of_bullets_its_style_numbers_reads_numbered() -> None:
    """WP Recipe Maker writes a recipe's steps as a ``<ul>`` of ``<li style="list-style-type:
    decimal;">``, which a browser numbers: the steps read as bullets, their order unsaid.
    A ``<ul>`` whose items (or itself) a style numbers reads as the ordered list it shows,
    in its letters too (as an ``<ol type="a">`` reads: "- a. ..."); one of bullets, or of
    items styled apart, stays."""

    def steps(styles: tuple[str, str]) -> str:
        return (
            '<ul class="wprm-recipe-instructions">'
            + "".join(
                f'<li class="wprm-recipe-instruction" style="{style}"><div class="wprm-recipe-'
                f'instruction-text">{words}</div></li>'
                for style, words in zip(
                    styles, ("Mash the bananas.", "Bake for an hour."), strict=True
                )
            )
            + "</ul>"
        )

    def page(inside: str) -> str:
        return (
            "<html><head><title>Banana Bread</title></head><body><main><article><h1>Banana "
            f"Bread</h1>{_PROSE}<h2>Instructions</h2>{inside}</article></main></body></html>"
        )

    decimal = ("list-style-type: decimal;", "list-style-type: decimal;")
    assert "1. Mash the bananas.\n2. Bake for an hour." in read_html(page(steps(decimal)), URL)
    letters = steps(("list-style: lower-alpha", "list-style: lower-alpha"))
    assert "- a. Mash the bananas.\n- b. Bake for an hour." in read_html(page(letters), URL)
    for kept in (("list-style-type: disc", "list-style-type: disc"), ("", decimal[1])):
        assert "- Mash the bananas.\n- Bake for an hour." in read_html(page(steps(kept)), URL)
