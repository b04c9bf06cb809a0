"""helm/mambasizer/README.md's values table is generated from values.yaml
(scripts/chart_values_table.py) and must not drift from it."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from deploy_helpers import CHART, ROOT
from script_module import load_script

SCRIPT = ROOT / "scripts" / "chart_values_table.py"


@pytest.fixture(scope="module")
def gen():
    return load_script(SCRIPT, "chart_values_table")


def test_readme_values_table_is_current():
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_check_fails_when_values_change(gen, tmp_path, monkeypatch):
    values = tmp_path / "values.yaml"
    readme = tmp_path / "README.md"
    values.write_text(gen.VALUES.read_text().replace("  replicas: 2\n", "  replicas: 3\n", 1))
    readme.write_text(gen.README.read_text())
    monkeypatch.setattr(gen, "VALUES", values)
    monkeypatch.setattr(gen, "README", readme)
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0  # regenerate
    assert "| `api.replicas` | int | `3` |" in readme.read_text()
    assert gen.main(["--check"]) == 0


def test_every_value_has_a_row_with_a_description(gen):
    text = (CHART / "values.yaml").read_text()
    data = yaml.safe_load(text)
    schema = __import__("json").loads((CHART / "values.schema.json").read_text())
    rows = gen.rows(data, gen.key_comments(text, data), schema)
    keys = [r[0] for r in rows]
    assert len(keys) == len(set(keys))
    undescribed = [r[0] for r in rows if not r[3]]
    assert undescribed == [], "add a `# comment` above these keys in values.yaml"

    # every leaf of values.yaml is covered by exactly one row (itself or a collapsed parent)
    def leaves(node, prefix=()):
        if isinstance(node, dict) and node:
            for k, v in node.items():
                yield from leaves(v, prefix + (k,))
        else:
            yield ".".join(prefix)

    for leaf in leaves(data):
        covering = [k for k in keys if leaf == k or leaf.startswith(k + ".")]
        assert len(covering) == 1, (leaf, covering)


def test_comment_parsing_rules(gen):
    text = """\
# file header, not a key's

# Top comment
# on two lines.
top:
  # A child.
  child: 1
  # Not attached: a blank line follows.

  bare: x
  listed:
    - key: a
      # inside a list item: not a value of its own
      operator: Exists
# Collapsed mapping.
folded:
  a: 1
  b: {c: 2}
"""
    data = yaml.safe_load(text)
    comments = gen.key_comments(text, data)
    assert comments == {("top",): "Top comment on two lines.", ("top", "child"): "A child.",
                        ("folded",): "Collapsed mapping."}
    rows = gen.rows(data, comments, {})
    assert rows == [
        ("top.child", "int", "1", "A child."),
        ("top.bare", "string", '"x"', ""),
        ("top.listed", "list", '[{"key": "a", "operator": "Exists"}]', ""),
        ("folded", "object", '{"a": 1, "b": {"c": 2}}', "Collapsed mapping."),
    ]
