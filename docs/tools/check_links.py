#!/usr/bin/env python3
"""Checks that every relative link of Markdown pages resolves.

For each inline link or image `[text](target)` and each reference
definition `[name]: target` outside code blocks and code spans, a target
that is not a URL (no scheme such as https:, mailto:) must name an existing
file or folder relative to the page (or to the repository root when it
starts with /), and a `#anchor`, on its own or after a Markdown file, must
be the GitHub anchor of one of that page's headings (or an explicit
`<a name="...">` / `id="..."`).

    check_links.py README.md docs        # folders: their *.md, recursively

Prints every broken link as page:line: target (reason) and exits with 1 if
there is one.
"""

import os
import re
import sys
import urllib.parse

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?"
                    r"(?:\s+\"[^\"]*\")?\s*\)")
DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"|\sid=\"([^\"]+)\"")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks, with
    code spans blanked out."""
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            match = FENCE.match(line)
            if match:
                marker = match.group(1)
                if fence is None:
                    fence = marker
                    continue
                if marker[0] == fence[0] and len(marker) >= len(fence) \
                        and not line.strip()[len(marker):].strip():
                    fence = None
                    continue
            if fence is None:
                yield number, re.sub(r"(`+)(?:(?!\1).)+?\1",
                                     lambda m: " " * len(m.group(0)), line)


def github_anchor(heading):
    """The anchor GitHub gives a heading: lower case, punctuation other
    than '-' and '_' dropped, spaces as '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    """The anchors of a Markdown file's headings (duplicates numbered as
    GitHub does: name, name-1, ...) and explicit anchors."""
    if path not in _anchors:
        found, seen = set(), {}
        fence = None
        with open(path, encoding="utf-8") as f:
            for line in f:
                match = FENCE.match(line)
                if match:
                    fence = None if fence else match.group(1)
                    continue
                if fence:
                    continue
                heading = HEADING.match(line)
                if heading:
                    base = github_anchor(heading.group(2))
                    count = seen.get(base, 0)
                    seen[base] = count + 1
                    found.add(base if count == 0 else f"{base}-{count}")
                for explicit in EXPLICIT_ANCHOR.finditer(line):
                    found.add(explicit.group(1) or explicit.group(2))
        _anchors[path] = found
    return _anchors[path]


def check_target(page, target):
    """None when `target` (a link of `page`) resolves, else the reason."""
    if not target or SCHEME.match(target):
        return None
    path, _, anchor = target.partition("#")
    path = urllib.parse.unquote(path)
    if path.startswith("/"):
        resolved = os.path.join(ROOT, path.lstrip("/"))
    elif path:
        resolved = os.path.normpath(os.path.join(os.path.dirname(page), path))
    else:
        resolved = page
    if not os.path.exists(resolved):
        return "no such file"
    if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
        if urllib.parse.unquote(anchor).lower() not in anchors(resolved):
            return f"no heading with anchor #{anchor} in " \
                   f"{os.path.relpath(resolved, ROOT)}"
    return None


def check_page(page):
    """[(line, target, reason)] of the broken links of `page`."""
    broken = []
    for number, line in prose_lines(page):
        targets = [m.group(1) for m in INLINE.finditer(line)]
        definition = DEFINITION.match(line)
        if definition:
            targets.append(definition.group(1))
        for target in targets:
            reason = check_target(page, target)
            if reason:
                broken.append((number, target, reason))
    return broken


def pages(arguments):
    for argument in arguments:
        if os.path.isdir(argument):
            for folder, _, files in sorted(os.walk(argument)):
                for name in sorted(files):
                    if name.endswith(".md"):
                        yield os.path.join(folder, name)
        else:
            yield argument


def main(argv=None):
    arguments = sys.argv[1:] if argv is None else argv
    if not arguments or arguments[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if arguments else 2
    broken, count = 0, 0
    for page in pages(arguments):
        count += 1
        page = os.path.abspath(page)
        for number, target, reason in check_page(page):
            print(f"{os.path.relpath(page, ROOT)}:{number}: {target} "
                  f"({reason})")
            broken += 1
    print(f"{count} pages, {broken} broken links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
