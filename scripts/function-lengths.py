#!/usr/bin/env python3
"""The longest functions of each module under Sources/, by lines from the declaration to its
closing brace (blank and comment lines included, as a reader sees them).

    scripts/function-lengths.py                 # the 5 longest per module
    scripts/function-lengths.py --top 20        # more of them
    scripts/function-lengths.py --check 60      # fails (exit 1) if a function in any module is longer
    scripts/function-lengths.py --check 60 LansyncNode LansyncStore
                                                # in these modules only

A function is a `func`, `init`, `deinit`, accessor-less computed `var` with a body, or a
`subscript`; closures count toward the function that holds them, and a default closure argument in
the signature does not end it (its body is the first brace outside the parameter list). Nested functions are counted on
their own and toward the function around them. String literals (single-line, multi-line and raw)
and comments are read past, so braces inside them do not count. Generated code (a file whose first
line says `Generated`) and the schema's migrations (one function per version) are left out.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources")
DECL = re.compile(
    r"^\s*(?:@[\w().:, ]+\s+)*(?:(?:public|internal|private|fileprivate|package|open|static|class|final|"
    r"override|mutating|nonmutating|nonisolated|convenience|required|dynamic|@discardableResult|@inlinable)\s+)*"
    r"(func\s+(?:[A-Za-z_`][\w`]*|[^\s\w(`]+)|init[?!]?(?=\s*[(<])|deinit(?=\s*\{)|subscript(?=\s*[(<])|var\s+\w+)"
)
GENERATED = re.compile(r"generated", re.IGNORECASE)
# Declarative lists that read best as one piece (named in Docs/CONTRIBUTING.md): the schema's
# migrations, one function per version, the first of which creates every table.
EXEMPT = {("Schema.swift", re.compile(r"v\d+[A-Za-z]*$"))}


def code_only(text):
    """`text` with string literals' contents and comments blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    depth = 0  # nested /* */
    while i < n:
        c = text[i]
        if depth:
            if text.startswith("*/", i):
                depth -= 1
                out.append("  ")
                i += 2
            elif text.startswith("/*", i):
                depth += 1
                out.append("  ")
                i += 2
            else:
                out.append("\n" if c == "\n" else " ")
                i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if text.startswith("/*", i):
            depth = 1
            out.append("  ")
            i += 2
            continue
        m = re.match(r'(#*)("""|")', text[i:])
        if m:
            hashes, quote = m.group(1), m.group(2)
            close = quote + hashes
            j = i + len(m.group(0))
            interp = 0
            while j < n:
                if interp:
                    if text[j] == "(":
                        interp += 1
                    elif text[j] == ")":
                        interp -= 1
                    j += 1
                    continue
                if text[j] == "\\" and text.startswith(hashes, j + 1):
                    k = j + 1 + len(hashes)
                    if k < n and text[k] == "(":
                        interp = 1
                        j = k + 1
                        continue
                    j = k + 1
                    continue
                if text.startswith(close, j):
                    j += len(close)
                    break
                if quote == '"' and text[j] == "\n":
                    break
                j += 1
            chunk = text[i:j]
            out.append("".join("\n" if ch == "\n" else " " for ch in chunk))
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    """(name, first line, length) of each function in the file at `path`."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = code_only(text).split("\n")
    found = []
    for number, line in enumerate(lines):
        m = DECL.match(line)
        if not m:
            continue
        # The body opens at the first `{` at this nesting level after the declaration (a
        # protocol requirement or a stored property has none before the next declaration).
        # Braces inside the parameter list (a default closure argument, `= { _ in }`) belong to
        # the signature: the body is the first `{` outside every parenthesis.
        depth, start, start_col, end, parens = 0, None, 0, None, 0
        for k in range(number, min(len(lines), number + 40 if start is None else len(lines))):
            offset = 0 if k > number else m.end()
            segment = lines[k][offset:]
            for col, ch in enumerate(segment):
                if start is None and ch in "()":
                    parens += 1 if ch == "(" else -1
                    continue
                if start is None and parens > 0:
                    continue
                if ch == "{":
                    if start is None:
                        start, start_col = k, offset + col
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if start is not None and depth == 0:
                        end = k
                        break
                elif ch == "=" and start is None and m.group(1).startswith("var"):
                    depth = -1  # a stored property with a value: not a function
                    break
            if end is not None or depth < 0:
                break
            if start is None and k > number and DECL.match(lines[k]):
                break
        if start is None or end is None:
            # The 40-line look-ahead ran out before the body closed: follow it to its end.
            # From the body's own brace: a signature's closure that closes on the same line
            # (`}) async {`) is not part of the count.
            if start is not None:
                depth = 0
                for k in range(start, len(lines)):
                    body = lines[k][start_col:] if k == start else lines[k]
                    depth += body.count("{") - body.count("}")
                    if depth == 0:
                        end = k
                        break
            if end is None:
                continue
        found.append((m.group(1).split()[-1], number + 1, end - number + 1))
    return found


def modules(root):
    for module in sorted(os.listdir(root)):
        folder = os.path.join(root, module)
        if not os.path.isdir(folder):
            continue
        results = []
        for dirpath, _, files in os.walk(folder):
            for name in files:
                if not name.endswith(".swift"):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    head = f.read(400)
                if GENERATED.search(head.split("\n", 3)[0] if head else ""):
                    continue
                rel = os.path.relpath(path, root)
                results += [
                    (length, rel, line, fn)
                    for fn, line, length in functions(path)
                    if not any(name == file and pattern.match(fn) for file, pattern in EXEMPT)
                ]
        yield module, sorted(results, reverse=True)


def main(argv):
    top, limit, only = 5, None, None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--top":
            top = int(args.pop(0))
        elif a == "--check":
            limit = int(args.pop(0))
            only = set(args) or None
            args = []
        else:
            print(f"function-lengths: unknown argument {a}: see the script's first lines", file=sys.stderr)
            return 2
    over, checked = [], []
    for module, results in modules(ROOT):
        if only is not None and module not in only:
            continue
        checked.append(module)
        if limit is not None:
            over += [(module, r) for r in results if r[0] > limit]
            continue
        print(f"{module}: {len(results)} functions, longest:")
        for length, rel, line, fn in results[:top]:
            print(f"  {length:4d}  {fn}  {rel}:{line}")
    if limit is not None:
        for module, (length, rel, line, fn) in over:
            print(f"{rel}:{line}: {fn} is {length} lines (at most {limit} in {module})", file=sys.stderr)
        if over:
            return 1
        print(f"no function over {limit} lines in {', '.join(sorted(checked))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
