"""`lopub serve` refuses at start, in one line naming the value, what a new user gets wrong:
a collection file that is not JSON (a CSV, a binary file), a port already in use, a port out
of range, a host that does not resolve; and creates no store or secret when it refuses."""
from __future__ import annotations

import re
import socket
import subprocess
import sys

import pytest

pytest.importorskip("uvicorn")

from lopub import Attribute, Domain  # noqa: E402
from lopub.cli import main  # noqa: E402
from lopub.collect import MarginalPlan  # noqa: E402

DOMAIN = Domain([Attribute("smoker", ["yes", "no"]), Attribute("age", ["<30", "30-60", ">60"])])
PLAN = MarginalPlan(DOMAIN, (("smoker", "age"),), 2.0)


def _serve(args: list[str], cwd) -> str:
    """``lopub serve ARGS`` in a child process: its one stderr line, after checking it refused (exit 2).
    A child that starts serving instead is killed after a minute and the test fails (not hangs)."""
    try:
        done = subprocess.run([sys.executable, "-m", "lopub", "serve", *args], cwd=cwd, capture_output=True,
                              text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"lopub serve {' '.join(args)} did not refuse within 60 s: it started serving")
    assert done.returncode == 2, (done.returncode, done.stderr)
    err = done.stderr.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("content, message", [
    (b"age,sex\n30,F\n", (r"collection file '.*survey\.csv': does not parse as JSON \(.*\); expected a "
                          r"plan \(lopub serve-plan\) or spec JSON file")),
    (b"\x7fELF\x02\x01\x01\x00\xff\xfe", r"collection file '.*survey\.csv': not UTF-8 text; expected a plan"),
])
def test_a_collection_file_that_is_not_json_is_named(tmp_path, capsys, content, message):
    path = tmp_path / "survey.csv"
    path.write_bytes(content)
    for argv in (["serve", f"survey={path}"], ["serve-export", f"survey={path}", str(tmp_path / "o.npz")]):
        assert main(argv) == 2
        line = _error_line(capsys)
        assert line.startswith(f"lopub {argv[0]}: error: ") and re.search(message, line), line


def test_a_port_in_use_is_refused_before_any_file_is_created(tmp_path, capsys):
    PLAN.to_json(tmp_path / "plan.json")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        line = _serve([f"survey={tmp_path / 'plan.json'}", "--port", str(port),
                       "--relay-key-file", str(tmp_path / "relay.key")], tmp_path)
    assert line == (f"lopub serve: error: --port ({port}) on --host 127.0.0.1 cannot be used: "
                    "Address already in use; choose another --port, or stop what is listening there")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]  # no store, secret or key


@pytest.mark.parametrize("args, message", [
    (["--port", "70000"], "lopub serve: error: --port (70000) must be in [0, 65535]"),
    (["--host", "no-such-host.invalid"], ("lopub serve: error: --host ('no-such-host.invalid') must be "
                                          "an address or name of this machine: ")),
])
def test_a_bad_port_or_host_is_named(tmp_path, capsys, args, message):
    PLAN.to_json(tmp_path / "plan.json")
    assert _serve([f"survey={tmp_path / 'plan.json'}", *args], tmp_path).startswith(message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]


@pytest.mark.parametrize("make, message", [
    (None, (r"--secret-file \(.*nodir/secret\) does not exist and cannot be created: No such file or "
            r"directory")),
    ("short", r"--secret-file \(.*nodir/secret\) holds 5 characters; at least 32 expected"),
])
def test_a_bad_secret_file_is_named_and_leaves_no_store(tmp_path, capsys, make, message):
    PLAN.to_json(tmp_path / "plan.json")
    secret = tmp_path / "nodir" / "secret"
    if make:
        secret.parent.mkdir()
        secret.write_text(make)
    line = _serve([f"survey={tmp_path / 'plan.json'}", "--secret-file", str(secret), "--port", "0"], tmp_path)
    assert line.startswith("lopub serve: error: --secret-file (") and re.search(message, line), line
    assert not (tmp_path / "plan.reports.sqlite").exists()
