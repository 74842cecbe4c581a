"""A stand-in for the response object of ``urllib.request.urlopen`` in the serve client tests."""


class Reply:
    """``with urlopen(...) as r: r.read()`` giving ``body``."""

    def __init__(self, body):
        self.body = body

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read(self):
        return self.body
