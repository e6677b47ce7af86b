"""The memory console (DESIGN §15, docs/console.md): web pages where admins see, search, correct
and review what the bot remembers, and a JSON API under `/admin/api/` the pages share.

    app.py       create_app: routes, static files     security.py  headers, login gate, CSRF
    auth.py      token file, password hash, sessions  state.py     what the handlers share
    views.py     the pages                            api.py       the JSON API
    search.py    recall as a viewer                   settings.py  config and checks, masked
    i18n.py      the console's words, zh and en       serve.py     its own listener, loopback
    templates/   Jinja2, autoescaped                  static/      one CSS and one JS file
    activity.py  Overview, Chats, Dreams and their API  charts.py    bar charts as SVG numbers

Of memory it imports the facade only (`nahida.memory`); it imports no backend: the composition
root and the CLI hand it memory, the config, the data dir and `nahida doctor`'s checks.
"""

from nahida.console.app import create_app
from nahida.console.serve import ConsoleServer, check_settings
from nahida.console.settings import Checks, Checkup

__all__ = ["Checks", "Checkup", "ConsoleServer", "check_settings", "create_app"]
