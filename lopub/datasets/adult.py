"""UCI Adult loader: the original UCI files, binned with the packaged schema.

The schema (``lopub/datasets/schemas/adult.json``, a link to ``datasets/adult.json``)
keeps the 15 UCI attributes with their UCI names.  Categorical attributes keep
the categories listed in ``adult.names``; ``education-num`` keeps its 16 values
``"1"``..``"16"``; the five numeric attributes are binned with fixed edges
(see ``datasets/README.md``).  The test split's labels ``<=50K.``/``>50K.`` lose
their trailing dot so both splits share the labels ``<=50K``/``>50K``.

References
----------
Ren et al., "LoPub", IEEE TIFS 2018, Sec. VII (Adult: 45,222 records, 15 attributes).
"""
from __future__ import annotations

import os

import pandas as pd

from lopub.data.dataset import Dataset
from lopub.data.domain import Attribute, Domain
from lopub.datasets._fetch import data_path, schema_dict

COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
)
NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
MISSING = "?"
_SPLITS = {"train": ("adult.data",), "test": ("adult.test",), "all": ("adult.data", "adult.test")}


def adult_domain(*, with_missing: bool = False) -> Domain:
    """The packaged Adult domain; ``with_missing`` appends a ``"?"`` category to
    the attributes that have missing values in the UCI files (workclass,
    occupation, native-country)."""
    dom = Domain.from_dict(schema_dict("adult"))
    if not with_missing:
        return dom
    attrs = tuple(
        Attribute(a.name, a.categories + (MISSING,), a.binning)
        if a.name in ("workclass", "occupation", "native-country") else a
        for a in dom.attributes
    )
    return Domain(attrs)


def read_adult_frame(file: str | os.PathLike) -> pd.DataFrame:
    """Parse one original UCI Adult file into a raw DataFrame.

    Comma+space separated, no header, ``?`` = missing (kept as NaN), lines
    starting with ``|`` skipped, numeric columns as integers, trailing ``.`` of
    the income label removed.
    """
    dtypes = {c: ("int64" if c in NUMERIC else "string") for c in COLUMNS}
    try:
        df = pd.read_csv(
            file, header=None, names=list(COLUMNS), sep=",", skipinitialspace=True,
            na_values=[MISSING], keep_default_na=False, comment="|", dtype=dtypes,
            skip_blank_lines=True,
        )
    except (ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"file ({str(file)!r}) is not in the UCI Adult format (15 columns): {exc}") from None
    df["income"] = df["income"].str.rstrip(".")
    return df


def load_adult(
    path: str | os.PathLike | None = None,
    split: str = "all",
    drop_missing: bool = True,
    *,
    download: bool = True,
) -> Dataset:
    """Load UCI Adult as a :class:`~lopub.data.dataset.Dataset` over the packaged schema.

    Parameters
    ----------
    path : path-like, optional
        A folder holding ``adult.data``/``adult.test`` (directly or under
        ``adult/``), or one file (then ``split`` must be ``"train"`` or
        ``"test"``).  Default: ``$LOPUB_DATA_DIR``, the cache, or a download
        (see :func:`lopub.datasets.data_path`).
    split : {"all", "train", "test"}
        ``"train"`` = adult.data, ``"test"`` = adult.test, ``"all"`` = both, train first.
    drop_missing : bool, default True
        Drop every row holding a ``?``.  Gives 30,162 (train) + 15,060 (test)
        = 45,222 records, the paper's figure.  With False the rows are kept and
        ``?`` becomes an extra category of workclass, occupation and
        native-country.
    download : bool, default True
        Allow downloading into the user cache when no local copy exists.

    Returns
    -------
    Dataset
        15 attributes; numeric attributes binned with the schema's edges.
    """
    if split not in _SPLITS:
        raise ValueError(f"split ({split!r}) must be one of {sorted(_SPLITS)}")
    if not isinstance(drop_missing, bool):
        raise TypeError(f"drop_missing ({drop_missing!r}) must be a bool")
    files = _SPLITS[split]
    if path is not None and os.path.isfile(path) and len(files) > 1:
        raise ValueError(
            f"path ({str(path)!r}) is a single file but split is 'all'; pass the folder holding "
            "adult.data and adult.test, or split='train' / split='test'"
        )
    frames = [read_adult_frame(data_path("adult", f, path, download=download)) for f in files]
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if drop_missing:
        df = df.dropna().reset_index(drop=True)
    else:
        df = df.fillna(MISSING)
    return Dataset.from_pandas(df, adult_domain(with_missing=not drop_missing))
