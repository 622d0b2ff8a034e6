"""The S3-compatible server burrow-object-store's tests run against: moto's server, one request at a time.

Usage: python3 moto_server.py HOST PORT

`cargo xtask setup` starts it in the background (and the tests start private
ones to stop on purpose). It is `python3 -m moto.server -H HOST -p PORT` with
one change: requests are handled one at a time. moto checks a conditional
PUT's If-Match / If-None-Match and then stores the object in two steps that
no lock joins, so two racing conditional puts could in principle both pass
the check; Amazon S3 decides them atomically. Serialising requests makes
moto's checks atomic too, so the tests that race conditional puts test the
backend, not a gap in the server. See docs/adr/0091-s3-test-server.md.
"""

import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app


def serve(host: str, port: int) -> None:
    """Serves moto's backends (whatever they already hold) on HOST:PORT, one request at a time."""
    app = DomainDispatcherApplication(create_backend_app)
    lock = threading.Lock()

    def serialised(environ, start_response):
        with lock:
            # Consume the whole response under the lock: moto builds it eagerly anyway.
            return list(app(environ, start_response))

    run_simple(host, port, serialised, threaded=True)


def main() -> None:
    serve(sys.argv[1], int(sys.argv[2]))


if __name__ == "__main__":
    main()
