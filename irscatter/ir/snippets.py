"""Spec snippets: finding the example `<layer>` elements in a document and mending them into
XML that parses. Real spec pages are not valid XML; each repair is one recognisable slip (a
literal `...` in a tag, attributes written on `<layer>` instead of `<data>`, unquoted values,
a doubled `>`, a self-closed `<port>` followed by its dims, a misspelt `</dim>`, an unclosed
group, duplicate port ids, a missing id, name or version), and every repair is reported.
"""

from __future__ import annotations

import re

_LAYER_START = re.compile(r"^[ \t]*(<(?:layer|\.\.\.)(?=[\s>]))", re.M)  # at the start of a line: not prose
_LAYER_KEYS = ("id", "name", "type", "version")



def find_snippets(text: str) -> list[tuple[int, str]]:
    """(line, text) of every `<layer ...>...</layer>` in a document."""
    found = []
    pos = 0
    while (m := _LAYER_START.search(text, pos)) is not None:
        end = text.find("</layer>", m.end())
        if end < 0:
            break
        found.append((text.count("\n", 0, m.start(1)) + 1, text[m.start(1): end + len("</layer>")]))
        pos = end
    return found


def _repair_tag(tag: str, repairs: list[str]) -> str:
    fixed = re.sub(r"(?<=\s)\.\.\.(?=[\s/>])", "", tag)
    if fixed != tag:
        repairs.append("removed literal '...' from a tag")
    separated = re.sub(r'"\s*,\s*(?=[\w:-]+=)', '" ', fixed)
    if separated != fixed:
        repairs.append("dropped commas between attributes")
        fixed = separated
    quoted = re.sub(r"(\s[\w:-]+)=([^\s\"'>/]+)", r'\1="\2"', fixed)
    if quoted != fixed:
        repairs.append("quoted unquoted attribute values")
    return quoted


# a tag, reading quoted attribute values whole: Einsum's equation="ij,jk->ik" holds a '>'
_TAG = r'<(?!!--)(?:[^<>"]|"[^"<]*")*>'


def repair(snippet: str, default_version: str) -> tuple[str, list[str]]:
    """Make a spec snippet parse as one `<layer>`; returns the text and what was changed."""
    repairs: list[str] = []
    text = snippet
    if text.startswith("<..."):
        text = "<layer" + text[len("<..."):]
        repairs.append("renamed the '<...' opening tag to <layer")
    opened = re.sub(r"<\s+!?\s*--|<\s*!\s+--|<--", "<!--", text)
    if opened != text:
        repairs.append("mended a comment opened as '< --'")
        text = opened
    text = re.sub(_TAG, lambda m: _repair_tag(m.group(0), repairs), text)
    doubled = re.sub(f"({_TAG})>", r"\1", text)
    if doubled != text:
        repairs.append("dropped a stray '>' after a tag")
        text = doubled
    data = re.search(r'<data\b(?:[^<>"]|"[^"<]*")*>', text)
    if data and not data.group(0).endswith("/>") and "</data>" not in text:
        text = text[:data.end() - 1] + "/>" + text[data.end():]
        repairs.append("closed an unclosed <data> tag")
    # <port id="4"/> followed by its <dim>s and a </port>: the port was closed twice
    # (the tag's body is read greedily up to its "/>", and its trailing spaces dropped after: a
    # lazy body followed by \s* would rescan a long run of spaces once per character of it)
    reopened = re.sub(r'<port\b((?:[^<>"/]|/(?!>)|"[^"<]*")*)/>(?=(?:\s|<!--(?:(?!-->).)*-->)*<dim>)',
                      lambda m: "<port" + m.group(1).rstrip() + ">", text, flags=re.S)
    if reopened != text:
        repairs.append("reopened a self-closed <port> that its <dim>s and </port> follow")
        text = reopened
    closed = re.sub(r"<dim>([^<>]*?)(?:</x?dim>|(?<!<)/dim>)", r"<dim>\1</dim>", text)
    if closed != text:
        repairs.append("mended a misspelt </dim>")
        text = closed
    if re.search(r"<input>", text) and "</input>" not in text and re.search(r"<output>", text):
        text = re.sub(r"(\s*)<output>", r"\1</input>\1<output>", text, count=1)
        repairs.append("closed the <input> group before <output>")
    merged = re.sub(r"</input>\s*<input>", "", text)
    if merged != text:
        repairs.append("merged the ports of two <input> groups into one")
        text = merged
    text = _renumber_duplicate_ports(text, repairs)
    head = re.match(_TAG, text)
    if head is None and ">" not in text:  # no tag at all (an empty text): nothing to mend
        return text, repairs
    head_end = head.end() if head else text.index(">") + 1
    head_text = text[:head_end]
    attrs = dict(re.findall(r'([\w:-]+)="([^"]*)"', head_text))
    moved = {k: v for k, v in attrs.items() if k not in _LAYER_KEYS}
    kept = {k: v for k, v in attrs.items() if k in _LAYER_KEYS}
    added = [f'{key}="{value}"' for key, value in (("id", "0"), ("name", "example"), ("version", default_version))
             if key not in kept]
    for item in added:
        key, _, value = item.partition("=")
        kept[key] = value.strip('"')
    if added:
        repairs.append("added " + " ".join(added) + " to <layer>")
    body = text[head_end:]
    if moved:
        repairs.append("moved " + ", ".join(moved) + " from <layer> into <data>")
        data_attrs = " ".join(f'{k}="{v}"' for k, v in moved.items())
        if re.search(r"<data[\s/>]", body):
            body = re.sub(r"<data(?=[\s/>])", f"<data {data_attrs}", body, count=1)
        else:
            body = f"<data {data_attrs}/>" + body
    head_text = "<layer " + " ".join(f'{k}="{v}"' for k, v in kept.items()) + ">"
    return head_text + body, sorted(set(repairs), key=repairs.index)


def _renumber_duplicate_ports(text: str, repairs: list[str]) -> str:
    """Two ports of one layer with one id (a copy-paste slip, or outputs numbered from 0 again
    after the inputs, as many pages do): the ports are numbered 0..n-1 in document order, which
    is how a snippet's ports are fed and read. Not in a layer with a body, whose port map and
    inner layers name ports by their ids."""
    texts = [m.group(1) for m in re.finditer(r'<port\s+id="(\d+)"', text)]
    if len(set(texts)) == len(texts) or max(map(len, texts)) > 18:  # an id past any port number: the loader says so
        return text
    if re.search(r"<(?:then_|else_)?body[\s>]|<port_map[\s>]", text):
        return text
    ids = [int(t) for t in texts]
    fresh = iter(range(len(ids)))
    renumbered = re.sub(r'(<port\s+id=")(\d+)(")', lambda m: f"{m.group(1)}{next(fresh)}{m.group(3)}", text)
    repairs.append(f"renumbered ports with duplicate ids {ids} as 0..{len(ids) - 1}")
    return renumbered
