"""Run the ``lopub`` command line in-process for the CLI tests."""
from lopub.cli import main


def run(capsys, *argv):
    """Run ``lopub argv`` (each item as a string); returns (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        code = main([str(x) for x in argv])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code or 0, out.out, out.err
