"""The library's log lines with their fields, in a host's console: a few lines of the host's
logging set-up (the library never configures logging)."""

import logging

import structlog

handler = logging.StreamHandler()
handler.setFormatter(
    structlog.stdlib.ProcessorFormatter(
        # The library's records carry their data as the record's extra fields: add them.
        foreign_pre_chain=[structlog.stdlib.add_log_level, structlog.stdlib.ExtraAdder()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            # Plain tracebacks: a rich one would print each frame's locals (a tool's input).
            structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback),
        ],
    )
)
logging.getLogger("amends_toolkit").addHandler(handler)
logging.getLogger("amends_toolkit").setLevel(logging.INFO)
