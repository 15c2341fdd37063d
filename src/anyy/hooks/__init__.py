"""The user's own hooks (SPEC N6): commands from ``[hooks]`` in the profile's ``config.toml``, run before
and after tool calls, when a session starts, when a submission is taken and when an execution ends.

Not the Gateway's *webhooks* (``anyy.gateway.hooks``: URLs that wake residents): these are programs the
user wrote, run on the Gateway's machine outside the tools' sandbox, and only once the user trusted their
exact content (``anyy hooks trust``).

- :mod:`anyy.hooks.settings`: the ``[hooks]`` tables and how a command becomes an argv.
- :mod:`anyy.hooks.trust`: fingerprints (the command line and the bytes of the files it names) and the
  profile's record of the trusted ones.
- :mod:`anyy.hooks.runner`: one run: JSON on stdin, an answer on stdout or an exit status, a timeout that
  kills the hook's process group; never blocking the event loop.

The runtime's side (which hooks run when, and what their answers do) is ``anyy.runtime.user_hooks``.
"""
