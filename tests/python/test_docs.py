"""The ```python blocks of the docs run as written, on the CPU.

- docs/python.md: every block, in order, each in a fresh interpreter, in one empty directory
  that has the repository's configs/ (the blocks name configs/lj_liquid.yaml from the
  repository root, as the page says).
- docs/output.md, "Opening a trajectory": every block, after `pairmd run configs/lj_liquid.yaml`
  (the file the section opens; shortened with --steps) in such a directory, which also has the
  repository's python/ folder (pairmd_mda).

A comment `# prints: TEXT` on a line of a block is a line the block must print.

PAIRMD_DOCS_SCALE scales the blocks' step counts (the numbers in `sim.run(N`, `ens.run(N` and `every=N`) to
keep the test short: ctest sets 0.2; unset (1) runs them as written (docs/python.md says so).
Run by ctest as python.docs with the module of the build tree on PYTHONPATH.
"""
import os
import re
import subprocess
import sys

import pytest

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCALE = float(os.environ.get("PAIRMD_DOCS_SCALE", "1"))


def python_blocks(page, section=None):
    """The ```python blocks of `page` (of the `## section` only, if given)."""
    with open(os.path.join(SOURCE_DIR, page)) as f:
        text = f.read()
    if section is not None:
        start = text.index("## " + section + "\n")
        end = text.find("\n## ", start + 1)
        text = text[start:end if end >= 0 else len(text)]
    return re.findall(r"^```python\n(.*?)^```$", text, re.S | re.M)


def scaled(code):
    if SCALE == 1:
        return code
    return re.sub(r"(\b\w+\.run\(|every=)(\d+)", lambda m: m.group(1) + str(max(1, round(int(m.group(2)) * SCALE))),
                  code)


def workdir(tmp_path):
    for name in ("configs", "python"):
        os.symlink(os.path.join(SOURCE_DIR, name), tmp_path / name)
    return tmp_path


def run_block(code, cwd):
    env = dict(os.environ, MPLBACKEND="Agg", OMP_WAIT_POLICY="PASSIVE")
    r = subprocess.run([sys.executable, "-c", scaled(code)], cwd=cwd, capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, f"block failed ({r.returncode}):\n{code}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    printed = [line.strip() for line in r.stdout.splitlines()]
    for promised in re.findall(r"# prints: (.*)$", code, re.M):
        assert promised.strip() in printed, f"the block does not print {promised!r}:\n{r.stdout}"
    return r.stdout


def test_python_md_blocks_run_as_written(tmp_path):
    blocks = python_blocks("docs/python.md")
    assert len(blocks) >= 3
    assert all("cuda" not in b.replace("cuda_available", "") for b in blocks)  # nothing that needs a GPU
    cwd = workdir(tmp_path)
    for code in blocks:
        run_block(code, cwd)
    assert os.path.exists(cwd / "lj_liquid.checkpoint.h5")  # the first block's run, closed


def test_output_md_trajectory_blocks_run_as_written(tmp_path):
    blocks = python_blocks("docs/output.md", "Opening a trajectory")
    assert len(blocks) >= 3
    cwd = workdir(tmp_path)
    binary = os.environ.get("PAIRMD_BINARY")
    if not binary:
        pytest.skip("PAIRMD_BINARY (the pairmd program) is not set")
    subprocess.run([binary, "run", "configs/lj_liquid.yaml", "--backend", "cpu", "--steps", "100"], cwd=cwd,
                   check=True, capture_output=True, timeout=600)
    for code in blocks:
        run_block(code, cwd)
