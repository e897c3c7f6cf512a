"""Product pages: the price a reader sees is read (webward._kinds.mark_prices and the lines
of _convert._lines_as_paragraphs)."""

from __future__ import annotations

import json

from readings import P, read_html

URL = "https://shop.example.com/kettle"


def read(page: str) -> str:
    return read_html(page, URL)


def product(price: str, head: str = "") -> str:
    """A product page with 250-400 characters of paragraphs: past trafilatura's bound (it
    reads no div's own text), under the margin the reading of lines waited for."""
    return f"""<!DOCTYPE html><html><head><title>Acme Kettle</title>{head}</head><body>
<nav class="navbar"><a href="/">Home</a> <a href="/shop">Shop</a></nav>
<main><div class="product"><div class="gallery"><img src="a.jpg" alt="Red kettle"></div>
<div class="product-info"><h1 class="product-title">Acme Electric Kettle 1.7 L</h1>
<div class="rating"><span class="stars" aria-label="4.5 out of 5 stars">\u2605\u2605\u2605\u2605\u00bd</span> <a>1,234 ratings</a></div>
{price}
<form><label>Color</label><select><option>Red</option></select><button>Add to cart</button></form>
<div class="description"><h2>About this item</h2><ul><li>Boils 1.7 L in 3 minutes</li>
<li>Auto shut-off and boil-dry protection</li><li>BPA-free interior</li></ul><p>{P}</p></div>
<h2>Specifications</h2><table class="specs"><tr><th>Capacity</th><td>1.7 L</td></tr>
<tr><th>Power</th><td>1500 W</td></tr><tr><th>Weight</th><td>1.1 kg</td></tr></table></div></div>
<section class="reviews"><h2>Customer reviews</h2><div class="review"><span class="stars">5 stars</span>
<h3>Great kettle</h3><p>Boils fast, looks nice. {P}</p><span>Jane, Jan 2026</span></div></section>
<section class="recs"><h2>Customers also bought</h2><ul><li><a>Toaster</a> $29.99</li>
<li><a>Mug set</a> $19.99</li></ul></section></main>
<footer class="footer"><p>Copyright 2026 Example Corp.</p></footer></body></html>"""


def test_a_sale_price_beside_the_struck_old_one_is_read() -> None:
    """trafilatura keeps a div's line from its first emphasis or struck text on: the sale
    price went and the old one stayed, so the agent read the wrong price."""
    price = '<div class="price"><span class="price-current">$49.99</span> <s>$69.99</s></div>'
    assert "$49.99 ~~$69.99~~" in read(product(price))


def test_a_price_marked_by_microdata_is_read() -> None:
    price = (
        '<div class="price" itemprop="offers" itemscope itemtype="https://schema.org/Offer">'
        '<meta itemprop="priceCurrency" content="USD">'
        '<span itemprop="price" content="49.99">$49.99</span></div>'
    )
    assert "$49.99" in read(product(price))


def test_a_price_the_json_ld_gives_is_read_where_the_page_shows_it() -> None:
    """The JSON-LD's price is found in the page's words, never written from the script (a
    page's script is no text a reader sees)."""
    offer = {
        "@context": "https://schema.org",
        "@type": "Product",
        "name": "Acme Electric Kettle",
        "offers": {"@type": "Offer", "price": "1299.00", "priceCurrency": "USD"},
    }
    head = f'<script type="application/ld+json">{json.dumps(offer)}</script>'
    reading = read(product('<div class="price"><span>$1,299.00</span></div>', head))
    assert "$1,299.00" in reading
    # The script alone writes nothing.
    assert "1299" not in read(product("", head))
