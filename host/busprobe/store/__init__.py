"""The results store: a lab's result documents in one database, queried by host and by hop.

One URL names it (:mod:`.url`): ``sqlite:///PATH`` (the default, a file under the user's data
directory) or ``postgresql://...`` for a shared lab database. Each run keeps its result document
byte for byte beside the columns it is queried by (:mod:`.tables`, filled by :mod:`.columns`);
the schema is Alembic's (:mod:`.migrate`), brought up to date when a store is opened.
:class:`~.database.Store` pushes, lists and exports runs; :mod:`.groups` turns stored runs into the
fleet view (one line per controller, root port, chipset, kernel or host).

Needs the ``store`` extra (SQLAlchemy, Alembic, psycopg, platformdirs).
"""

from .database import Store, StoreError, open_store
from .url import default_url, redact

__all__ = ["Store", "StoreError", "open_store", "default_url", "redact"]
