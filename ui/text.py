"""Text from data, manifests and URLs as literal text in Streamlit's Markdown (messages, captions, labels).

Streamlit renders every message, caption, title and widget label as Markdown with its own extensions
(`:red[...]`, `:material/icon:`, `$...$` LaTeX): a run named `[sign in](http://...)` would be a link,
`![x](http://...)` an image the browser fetches. `md` makes a string render as exactly its characters;
`st.text`, `st.code` and table cells need nothing.
"""

from __future__ import annotations

from analysis.escaping import markdown_text


def md(value: object) -> str:
    r"""`value` as Markdown that Streamlit shows as the literal text (`analysis.escaping.markdown_text`:
    the characters that open a construct backslash-escaped, newlines as spaces, a word joiner inside
    `://`); wrap whole messages built from data, or each data part of a message whose own Markdown stays.

    >>> print(md("[sign in](http://h:9) :red[x] $x$").replace("\u2060", "<WJ>"))
    \[sign in\](http:<WJ>//h\:9) \:red\[x\] \$x\$
    """
    return markdown_text(value)
