"""Checks the rank scripts share."""


def expect_raises(kind, text, call):
    """call() raises `kind` with `text` in its message; AssertionError otherwise."""
    try:
        call()
    except kind as error:
        assert text in str(error), f"{kind.__name__} without {text!r}: {error}"
        return
    raise AssertionError(f"no {kind.__name__} ({text!r})")
