"""A griffe extension for the API reference (mkdocs.yml loads it): mechkit's docstrings use NumPy-style sections
with prose after the colon and the types in the signature's annotations::

    Parameters
    ----------
    delta : in [0, 1), or an array of such values.

    Returns
    -------
    An ``Estimate`` (an ``EstimateArray`` for an array of deltas).

    Raises
    ------
    ParameterError : delta not in [0, 1).

Griffe's NumPy parser reads the text after `` : `` as a type and a prose Returns line as a return type, so the
rendered tables would show the descriptions as code in the "Type" column.  Before parsing, this extension rewrites
each such section into the canonical NumPy form (``name`` on its own line, the prose indented below it; a Returns
section as one unnamed item, so the type comes from the return annotation; an Attributes section that is a list of
names, as a paragraph above the sections), escapes the stars of ``2**53`` for Markdown and drops the second colon of
a literal block's ``::``.  The source files are not changed.
"""
from __future__ import annotations

import re

import griffe

#: sections whose items are "names : prose"
ITEM_SECTIONS = {"Parameters", "Other Parameters", "Raises", "Warns", "Attributes"}
#: sections whose whole body is one description
PROSE_SECTIONS = {"Returns", "Yields"}
ITEM = re.compile(r"^(?P<names>\S.*?) : (?P<text>.*)$")
#: a ``*`` between word characters (``2**53``, ``a*b``): an exponent or a product, not Markdown emphasis
INNER_STAR = re.compile(r"(?<=[\w)\]])(\*{1,2})(?=[\w(])")
CODE = re.compile(r"(``.*?``|`[^`]*`)")


def _escape(line: str) -> str:
    """``line`` with its inner stars escaped for Markdown, code spans left as they are, and the ``::`` that opens
    a reStructuredText literal block made a colon (the indented block below is Markdown's code block already)."""
    if line.endswith("::") and line.strip() != "::":
        line = line[:-1]
    return "".join(part if part.startswith("`") else INNER_STAR.sub(lambda m: "\\*" * len(m.group(1)), part)
                   for part in CODE.split(line))


def _is_dash(line: str) -> bool:
    return bool(line) and set(line.strip()) == {"-"}


def _sections(lines: list[str]) -> list[tuple[int, int, str]]:
    """(first body line, end, title) of every NumPy section of ``lines``."""
    heads = [i for i in range(len(lines) - 1) if lines[i].strip() and _is_dash(lines[i + 1])
             and not lines[i].startswith(" ")]
    return [(h + 2, (heads[n + 1] if n + 1 < len(heads) else len(lines)), lines[h].strip())
            for n, h in enumerate(heads)]


def _items(body: list[str], title: str) -> list[str]:
    out = []
    plain = all(ITEM.match(line) for line in body if line.strip() and not line.startswith(" "))
    if title == "Attributes" and not plain:  # "a, b, c (what c is)": a sentence, not items
        return ["Attributes: " + " ".join(line.strip() for line in body if line.strip())]
    for line in body:
        m = ITEM.match(line) if not line.startswith(" ") else None
        if m:
            out += [m.group("names"), "    " + m.group("text")]
        else:
            out.append(line)
    return out


def _prose(body: list[str]) -> list[str]:
    if body and body[0].strip() == ":":  # rewritten already
        return body
    return [":"] + [("    " + line) if line.strip() else "" for line in body]


def rewrite(text: str) -> str:
    """``text`` (a cleaned docstring) with its prose sections in canonical NumPy form."""
    lines = [_escape(line) for line in text.split("\n")]
    sections = _sections(lines)
    if not sections:
        return "\n".join(lines)
    intro, out = lines[:sections[0][0] - 2], []
    for start, end, title in sections:
        body = lines[start:end]
        while body and not body[-1].strip():
            body.pop()
        head = [title, lines[start - 1]]
        if title in ITEM_SECTIONS:
            new = _items(body, title)
            if new and new[0].startswith("Attributes: "):  # a sentence: it joins the text above the sections
                while intro and not intro[-1].strip():
                    intro.pop()
                intro += ["", new[0], ""]
                continue
        elif title in PROSE_SECTIONS:
            new = _prose(body)
        else:
            new = body
        out += head + new + [""]
    return "\n".join(intro + out).rstrip()


def typed(text: str, annotations: dict[str, str]) -> str:
    """``text`` (rewritten) with ``name : type`` items in its Parameters section, the types from ``annotations``."""
    lines = text.split("\n")
    for start, end, title in _sections(lines):
        if title != "Parameters":
            continue
        for i in range(start, end):
            names = lines[i].split(", ")
            kinds = {annotations.get(n) for n in names}
            if lines[i].strip() and not lines[i].startswith(" ") and len(kinds) == 1 and None not in kinds:
                lines[i] += " : " + kinds.pop()
    return "\n".join(lines)


class ProseSections(griffe.Extension):
    """Rewrites each object's docstring (``rewrite``) as soon as griffe has read it; a class built by ``__new__``
    (``Estimate``, a float; ``EstimateArray``, an ndarray) gets the types of ``__new__``'s parameters, since griffe
    reads a class's signature from ``__init__`` only."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)

    def on_class_members(self, *, cls: griffe.Class, **kwargs: object) -> None:
        new = cls.members.get("__new__")
        if cls.docstring is None or new is None or "__init__" in cls.members or not new.is_function:
            return
        annotations = {p.name: str(p.annotation) for p in new.parameters if p.annotation is not None}
        cls.docstring.value = typed(cls.docstring.value, annotations)
