#!/usr/bin/env python3
"""Spec twins: structs that hold the same set of field names.

    python3 scripts/find_twins.py [ROOT ...]

Two structs with the same fields are one idea written twice (a config spec and the settings it
is copied into, say): every new field must then be added to both and copied across by hand.
The check reads every struct and class definition in the source folders of each ROOT (C++
headers, sources and CUDA files; tests and benchmarks are left out), takes the names of its data
members (not its functions, nested types or static constants), and reports each pair of types
with the same set of at least MIN_FIELDS names, or near twins (NEAR_FIELDS and SHARED below),
except the pairs ALLOWED names with a reason. Exit 1 when there is one, 0 when there is none. ctest runs it as `twins` (tests/CMakeLists.txt); docs/extending.md
says what to do instead of a twin (one type, used by both).

A ROOT that has none of the source folders below is read whole (the script's own test fixtures).
"""
import os
import re
import sys

FOLDERS = ("base", "cuda", "potentials", "integrators", "neighbor", "backends", "kernels", "engine", "io",
           "analysis", "session", "replicas", "cli", "python")
SOURCE = (".h", ".hpp", ".cpp", ".cu", ".cuh")
# Fewer names than this are too common to mean anything (x, y, z of every small vector type).
MIN_FIELDS = 4
# Near twins: types that share at least NEAR_FIELDS names, which make at least SHARED of each
# one's names (a config spec that holds `every` beside the settings' other fields, which hold
# one more of their own: PotentialMapSpec and MapSettings were such a pair).
NEAR_FIELDS = 6
SHARED = 0.8
# Pairs that are alike on purpose, each with the reason.
ALLOWED = {
    frozenset(("PullSettings", "PullParams")):
        "the device form of the settings, precomputed (step_length = speed dt) in double and float",
}

HEAD = re.compile(r"(?<!enum )\b(struct|class)\s+(?:alignas\([^)]*\)\s*)?([A-Za-z_]\w*)\s*(?:final\s*)?(?::[^;{]*)?\{")
WORD = re.compile(r"[A-Za-z_]\w*")


def strip_comments_and_strings(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(text, open_at):
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    return len(text) - 1


def flatten(body):
    """The body's statements at its own level: nested braces (function bodies, nested types,
    brace initialisers) become one '{}' each."""
    out, depth = [], 0
    for c in body:
        if c == "{":
            if depth == 0:
                out.append("{}")
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


def split_top(text, sep):
    """`text` split at `sep` outside (), [] and <>."""
    parts, depth, cur = [], 0, []
    for c in text:
        if c in "([<":
            depth += 1
        elif c in ")]>":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def has_parameter_list(decl):
    """Whether a declaration has a '(' outside template arguments: a function (or a function
    pointer), not a member such as std::function<void()> f."""
    angle = 0
    for c in decl:
        if c == "<":
            angle += 1
        elif c == ">":
            angle -= 1
        elif c == "(" and angle == 0:
            return True
    return False


def declarator_name(decl):
    """The name a declarator declares: the last word before its initialiser or array bounds."""
    decl = decl.split("=")[0]
    decl = re.sub(r"\[[^\]]*\]", "", decl).replace("{}", "")
    decl = re.sub(r":\s*\d+\s*$", "", decl)  # a bit-field's width
    words = WORD.findall(decl)
    return words[-1] if words else None


def field_names(body):
    """The data members of a struct body, in order."""
    names = []
    # A statement ends at ';' or at a nested block ('{}': a function body, a nested type).
    for stmt in re.split(r";|\{\}(?!\s*[,;=])", flatten(body)):
        stmt = re.sub(r"^\s*(public|private|protected)\s*:", "", stmt.strip()).strip()
        if not stmt or stmt.startswith("#"):
            continue
        first = WORD.match(stmt)
        if first and first.group(0) in ("using", "typedef", "friend", "static", "template", "enum", "struct", "class",
                                        "union", "return", "static_assert", "operator", "explicit", "virtual"):
            continue
        if "operator" in stmt:
            continue
        if has_parameter_list(split_top(stmt, "=")[0].split("{}")[0]):
            # A function (its parameter list comes before any initialiser), unless the parenthesis
            # is a function-pointer member: then the name is inside it.
            m = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", stmt)
            if m:
                names.append(m.group(1))
            continue
        decls = split_top(stmt, ",")
        # The first declarator carries the type: "const std::string& a = x, b" -> a, b.
        for d in decls:
            name = declarator_name(d)
            if name and name not in ("const", "constexpr", "mutable", "volatile"):
                names.append(name)
    return names


def types_in(text):
    """(name, line, field names) of every struct and class defined in `text`."""
    text = strip_comments_and_strings(text)
    found = []
    for m in HEAD.finditer(text):
        open_at = m.end() - 1
        close = matching_brace(text, open_at)
        body = text[open_at + 1:close]
        line = text.count("\n", 0, m.start()) + 1
        found.append((m.group(2), line, field_names(body)))
    return found


def source_files(root):
    tops = [os.path.join(root, f) for f in FOLDERS if os.path.isdir(os.path.join(root, f))]
    for top in tops or [root]:
        for dirpath, _, files in os.walk(top):
            for f in sorted(files):
                if f.endswith(SOURCE):
                    yield os.path.join(dirpath, f)


def all_types(roots):
    """{type name: (file:line, set of field names)} of every type with at least MIN_FIELDS fields."""
    types = {}
    for root in roots:
        for path in source_files(root):
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            where = os.path.relpath(path, root)
            for name, line, fields in types_in(text):
                if len(set(fields)) >= MIN_FIELDS:
                    types.setdefault(name, (f"{where}:{line}", frozenset(fields)))
    return types


def twins(roots):
    """Pairs of types whose fields are the same, or nearly (the fields they share are at least
    SHARED of each one's): [(shared names, (type, file:line, its own fields), (the other's))]."""
    types = sorted(all_types(roots).items())
    pairs = []
    for i, (a, (wa, fa)) in enumerate(types):
        for b, (wb, fb) in types[i + 1:]:
            shared = fa & fb
            near = len(shared) >= NEAR_FIELDS and len(shared) >= SHARED * max(len(fa), len(fb))
            if (fa == fb or near) and frozenset((a, b)) not in ALLOWED:
                pairs.append((sorted(shared), (a, wa, sorted(fa - shared)), (b, wb, sorted(fb - shared))))
    return pairs


def main(argv):
    roots = argv or [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")]
    pairs = twins(roots)
    for shared, (a, wa, only_a), (b, wb, only_b) in pairs:
        own = "".join(f"; only {t} has {', '.join(o)}" for t, o in ((a, only_a), (b, only_b)) if o)
        print(f"twins: {a} ({wa}) and {b} ({wb}) hold the same {len(shared)} fields: {', '.join(shared)}{own}",
              file=sys.stderr)
    if pairs:
        print(f"twins: {len(pairs)} pair(s) of structs with the same fields; keep one type and use it in both "
              "places (docs/extending.md)", file=sys.stderr)
        return 1
    print("twins: no two structs hold the same set of fields")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
