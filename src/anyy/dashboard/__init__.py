"""The Dashboard's static files (index.html, app.js, style.css), served by the Gateway at ``/``.

No build step and no Python code: the page speaks the Gateway's JSON-RPC over its WebSocket, like every
other client (docs/dashboard.md).
"""
