"""The README's Python example runs as written (on a small embedded-data CSV)."""
import re
import runpy
from pathlib import Path


from lopub.datasets import embedded

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "README has no python example"
    df = embedded(2000, rng=0).to_pandas().rename(columns={"age_group": "age"})
    df.to_csv(tmp_path / "data.csv", index=False)
    (tmp_path / "example.py").write_text(blocks[0])
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(tmp_path / "example.py"))
    out = capsys.readouterr().out
    assert (tmp_path / "reports.parquet").exists()
    assert "education" in out and "income" in out


def test_readme_synthesizer_example_runs(tmp_path, monkeypatch, capsys):
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.S) if "Synthesizer(" in b]
    assert blocks, "README has no Synthesizer example"
    df = embedded(3000, rng=1).to_pandas()
    monkeypatch.chdir(tmp_path)
    runpy.run_path(_write(tmp_path / "synth.py", blocks[0]), init_globals={"df": df})
    out = capsys.readouterr().out
    assert "8" in out and "education" in out
    assert (tmp_path / "report.html").exists() and (tmp_path / "synth.json").exists()


def _write(path, text):
    path.write_text(text)
    return str(path)
