"""Configuration of ``lopub serve`` from its options, and the app factory of worker processes.

``lopub serve --workers N`` runs N uvicorn worker processes; each rebuilds
the configuration from the options in the environment variable
:data:`ENV` (JSON; file paths and numbers only, never the secret itself) and
opens its own store connection.  SQLite serializes the workers' commits
(``BEGIN IMMEDIATE``); PostgreSQL takes them concurrently.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lopub.serve.protocol import Collection

ENV = "LOPUB_SERVE_OPTIONS"


def split_item(item: str) -> tuple[str, str]:
    """``NAME=FILE`` -> ``(name, file)``, checked."""
    name, sep, path = item.partition("=")
    if not sep or not name or not path:
        raise ValueError(f"collection ({item!r}) must be NAME=FILE (a plan or spec JSON file)")
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"collection name ({name!r}) must be letters, digits, '-' or '_'")
    return name, path


def parse_collections(items: list[str]) -> dict[str, Collection]:
    """``NAME=FILE`` arguments -> {name: Collection}."""
    out: dict[str, Collection] = {}
    for item in items:
        name, path = split_item(item)
        if name in out:
            raise ValueError(f"collection name ({name!r}) is given twice")
        if not os.path.isfile(path):
            raise ValueError(f"collection {name!r}: no plan or spec file {path!r} (write one with "
                             f"lopub serve-plan --domain DOMAIN --n N --epsilon E --out {path})")
        out[name] = Collection.load(name, path)
    return out


def default_store(items: list[str]) -> str:
    """The default store of one collection ``NAME=FILE``: ``<FILE stem>.reports.sqlite`` beside FILE.

    The same rule at ``lopub serve`` and ``lopub serve-export``.  Several collections share
    one store, which must then be named (``--store``) at both: no collection file is
    more "theirs" than another's.
    """
    if len(items) > 1:
        names = [split_item(i)[0] for i in items]
        older = store_of(items[0])
        hint = (f"; earlier versions of lopub stored them in {older!r} (the store of the first "
                f"collection file): give --store {older}" if os.path.exists(older) else "")
        raise ValueError(f"--store is needed to serve several collections ({names}): they share "
                         f"one store, which lopub serve-export needs too (--store FILE); the default "
                         f"store belongs to one collection file (its stem + .reports.sqlite){hint}")
    return store_of(items[0])


def store_of(item: str) -> str:
    """``<FILE stem>.reports.sqlite`` beside FILE of ``NAME=FILE``."""
    path = Path(split_item(item)[1])
    return str(path.with_name(path.stem + ".reports.sqlite"))


def read_relay_key(path: str | None, *, create: bool = True) -> str | None:
    """The relay key in ``path`` (at least 16 characters), or ``None``.

    Like the token secret, a missing file is created (``create``) with a random key of 64 hex
    digits, mode 0600: hand it to the relays.
    """
    if path is None:
        return None
    if create:
        from lopub.serve.tokens import create_key_file

        create_key_file(path, "--relay-key-file")
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--relay-key-file ({path}) cannot be read: "
                         f"{getattr(exc, 'strerror', None) or exc}") from None
    if len(text) < 16:
        raise ValueError(f"--relay-key-file ({path}) must hold a key of at least 16 characters")
    return text


def resolve(options: dict[str, Any]) -> dict[str, Any]:
    """Fill the defaults (store, secret file) and check the numbers; returns the options."""
    out = dict(options)
    out["store"] = out.get("store") or default_store(out["collections"])
    out["secret_file"] = out.get("secret_file") or str(
        Path(store_of(out["collections"][0])).with_name("lopub-serve.secret"))  # beside the first file
    for name in ("rate", "max_body"):
        if not out[name] > 0:
            raise ValueError(f"--{name.replace('_', '-')} ({out[name]}) must be > 0")
    return out


def build_config(options: dict[str, Any]) -> Any:
    """A :class:`~lopub.serve.app.ServeConfig` from resolved options (opens the store)."""
    from lopub.serve.app import ServeConfig
    from lopub.serve.backends import open_store, shown
    from lopub.serve.tokens import load_secret

    o = resolve(options)
    collections = parse_collections(o["collections"])
    secret = load_secret(o["secret_file"])  # before the store: a refused secret leaves no store
    relay_key = read_relay_key(o.get("relay_key_file"))
    try:
        store = open_store(o["store"])
    except Exception as exc:  # a missing folder, a read-only file or file system, no database
        raise ValueError(f"--store ({shown(o['store'])}) must be a store lopub serve can write reports to "
                         f"(a SQLite file in an existing, writable folder, or a postgresql:// URL): "
                         f"{exc}") from None
    try:
        check_store(store, collections)
        return ServeConfig(collections, store, secret, relay_key=relay_key, max_body=int(o["max_body"]),
                           rate=float(o["rate"]), burst=2 * float(o["rate"]))
    except BaseException:
        store.close()
        raise


def check_store(store: Any, collections: dict[str, Collection]) -> None:
    """Have ``store`` check each collection's recorded plan or spec id and record it with its
    first report.  Reports stored before stores recorded ids (older versions of lopub) cannot
    be checked: the id of the plan served is recorded now, with a warning saying so.

    Raises :class:`~lopub.serve.storage.PlanMismatchError` naming the collection, the store
    and both ids.
    """
    import warnings

    from lopub.serve.storage import ID_LABEL

    for name, c in collections.items():
        store.expect(name, c.kind, c.params_id)
        if store.recorded(name) is None and store.count(name) > 0:
            warnings.warn(f"store {store.where!r} holds {store.count(name)} reports of collection "
                          f"{name!r} from before stores recorded plans: it cannot check they were "
                          f"collected under this {'plan' if c.kind == 'marginal' else 'spec'}; "
                          f"recording {ID_LABEL[c.kind]} {c.params_id!r} for them now", stacklevel=2)
            store.record(name)


def app_from_env() -> Any:
    """The ASGI app of one worker process, configured from :data:`ENV`."""
    from lopub.serve.app import build_app

    return build_app(build_config(json.loads(os.environ[ENV])))
