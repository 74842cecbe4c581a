"""Exceptions raised by lopub, and its warnings about the data.  Each subclasses the built-in a
caller would expect."""


class DomainError(ValueError):
    """A domain or a record does not fit the declared attributes and categories."""


class SpecError(ValueError):
    """A collection spec cannot work (bad f, h, m_j, colliding Bloom filters...)."""


class ReportsFormatError(ValueError):
    """A reports file is truncated, from another spec, or of an unknown version."""


class LIPBudgetError(ValueError):
    """A LIP mechanism cannot meet its privacy budget under the given prior."""


class BudgetError(MemoryError):
    """A requested table is too large for the memory budget."""


class RecordHeaderWarning(UserWarning):
    """The column names of a DataFrame look like a record: a CSV file without a header row read
    as if it had one (``pandas.read_csv(path)`` without ``header=None, names=[...]``), its first
    record lost."""
