#!/usr/bin/env python3
"""What the docs point at exists, and bench/results/ holds only what the docs cite.

usage: check_docs.py SOURCE_DIR

- Every `bench/results/...` path named in README.md or docs/ (brace lists `{a,b}` and `*`
  expanded as a shell would) matches at least one file.
- Every file in bench/results/ is cited by README.md or a doc outside docs/history/, and every
  file in bench/results/history/ by some doc: a result nothing cites is deleted (the commit log
  keeps it), a superseded one moves to history/ with the page that tells its story.
- Every stage named after `scripts/device_run.sh` (in backticks or a code block) is a stage of
  that script, and docs/contributing.md's table of stages names every stage.
- Every source path in backticks in the docs that describe the code as it is now (PATH_DOCS)
  exists, and every relative link [text](path#heading) in README.md and docs/ reaches its file
  and heading.
Exit 1 with one line per problem (file:line: what), 0 when all hold.
"""
import glob
import os
import re
import sys

# Docs whose backticked paths must exist (docs/extending.md names files a recipe would create).
PATH_DOCS = ["README.md", "docs/benchmarks.md", "docs/gpu.md", "docs/strategies.md", "docs/contributing.md"]
RESULTS = "bench/results"
RESULT_REF = re.compile(r"bench/results/[A-Za-z0-9_.{},*/-]*[A-Za-z0-9_}*]")
CODE_PATH = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+\.(h|cuh|cu|cpp|c|py|sh|yaml|md|txt)$")
STAGE_CALL = re.compile(r"scripts/device_run\.sh((?:[ \t]+[a-z_0-9]+)*)")  # STAGE in capitals: a placeholder


def expand_braces(pattern):
    """All strings of a shell brace pattern ("a_{x,y}.{csv,log}" gives four)."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(pattern[: m.start()] + alt + pattern[m.end():])
    return out


def docs(root):
    found = [os.path.join(root, "README.md")]
    found += sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True))
    return [p for p in found if os.path.isfile(p)]


def code_spans(text):
    """(line number, text) of every backtick span and every line of a fenced code block."""
    spans, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            spans.append((n, line))
        else:
            spans += [(n, s) for s in re.findall(r"`([^`]+)`", line)]
    return spans


def device_stages(root):
    text = open(os.path.join(root, "scripts", "device_run.sh"), encoding="utf-8").read()
    return set(re.findall(r"^ {4}([a-z_0-9]+)\)", text, re.M))


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def link_problems(root, rel, n, line):
    """Relative markdown links [text](path#anchor) whose file or heading does not exist."""
    problems = []
    for target in re.findall(r"\]\(([^)\s]+)\)", line):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(root, os.path.dirname(rel), path)) if path else os.path.join(root, rel)
        if not os.path.exists(full):
            problems.append(f"{rel}:{n}: link {target}: no such file")
        elif anchor and full.endswith(".md"):
            headings = re.findall(r"^#+ (.*)$", open(full, encoding="utf-8").read(), re.M)
            if anchor not in {slug(h) for h in headings}:
                problems.append(f"{rel}:{n}: link {target}: no such heading")
    return problems


def stage_table(root):
    """(line, stage) of the first column of docs/contributing.md's table of device stages."""
    rows, inside = [], False
    lines = open(os.path.join(root, "docs", "contributing.md"), encoding="utf-8").read().splitlines()
    for n, line in enumerate(lines, 1):
        if line.startswith("| stage |"):
            inside = True
        elif inside and not line.startswith("|"):
            break
        elif inside:
            rows += [(n, name) for name in re.findall(r"`([^`]+)`", line.split("|")[1])]
    return rows


def check(root):
    problems, cited_now, cited_any = [], set(), set()
    stages = device_stages(root)
    if not stages:
        problems.append("scripts/device_run.sh: no stages found (the case labels moved?)")
    table = stage_table(root)
    for n, name in table:
        if name not in stages:
            problems.append(f"docs/contributing.md:{n}: scripts/device_run.sh has no stage '{name}'")
    for name in sorted(stages - {name for _, name in table}):
        problems.append(f"docs/contributing.md: the table of device stages lacks '{name}'")
    for path in docs(root):
        rel = os.path.relpath(path, root)
        history = rel.startswith("docs" + os.sep + "history")
        text = open(path, encoding="utf-8").read()
        for n, line in enumerate(text.splitlines(), 1):
            problems += link_problems(root, rel, n, line)
            for ref in RESULT_REF.findall(line):
                for pattern in expand_braces(ref):
                    found = glob.glob(os.path.join(root, pattern))  # a folder is a fine reference too
                    matches = [os.path.relpath(f, root) for f in found if os.path.isfile(f)]
                    if not found:
                        problems.append(f"{rel}:{n}: {pattern}: no such file")
                    cited_any.update(matches)
                    if not history:
                        cited_now.update(matches)
        for n, span in code_spans(text):
            for call in STAGE_CALL.finditer(span):
                for stage in call.group(1).split():
                    if stage not in stages:
                        problems.append(f"{rel}:{n}: scripts/device_run.sh has no stage '{stage}'")
            if rel in PATH_DOCS and CODE_PATH.match(span.strip()) and not span.startswith(RESULTS):
                if not os.path.exists(os.path.join(root, span.strip())):
                    problems.append(f"{rel}:{n}: {span.strip()}: no such file")
    for f in sorted(glob.glob(os.path.join(root, RESULTS, "**", "*"), recursive=True)):
        rel = os.path.relpath(f, root)
        if not os.path.isfile(f):
            continue
        in_history = rel.startswith(os.path.join(RESULTS, "history") + os.sep)
        if not in_history and rel not in cited_now:
            problems.append(f"{rel}: cited by no current doc (delete it, or move it to {RESULTS}/history/)")
        elif in_history and rel not in cited_any:
            problems.append(f"{rel}: cited by no doc (delete it: the commit log keeps it)")
    return problems


def main():
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    problems = check(os.path.abspath(sys.argv[1]))
    for p in problems:
        print(p)
    print(f"check_docs: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
