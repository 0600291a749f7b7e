"""One exception type for every user-facing compiler error."""


class CompileError(Exception):
    """A problem with the user's model, IR or options; the message says what to do.

    The CLI prints it as `error: <message>` and exits non-zero, never a traceback.
    """
