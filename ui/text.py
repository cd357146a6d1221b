"""Text from data, manifests and URLs as literal text in Streamlit's Markdown (messages, captions, labels).

Streamlit renders every message, caption, title and widget label as Markdown with its own extensions
(`:red[...]`, `:material/icon:`, `$...$` LaTeX): a run named `[sign in](http://...)` would be a link,
`![x](http://...)` an image the browser fetches. `md` makes a string render as exactly its characters;
`st.text`, `st.code` and table cells need nothing.
"""

from __future__ import annotations

from analysis.escaping import markdown_text


def md(value: object) -> str:
    """`value` as Markdown that Streamlit shows as the literal text (every ASCII punctuation character
    backslash-escaped, newlines as spaces); wrap whole messages built from data, or each data part of a
    message whose own Markdown should stay.

    >>> md("[sign in](http://127.0.0.1:9) :red[x] $x$")
    '\\\\[sign in\\\\]\\\\(http\\\\:\\\\/\\\\/127\\\\.0\\\\.0\\\\.1\\\\:9\\\\) \\\\:red\\\\[x\\\\] \\\\$x\\\\$'
    """
    return markdown_text(value, every=True)
