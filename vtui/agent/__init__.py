"""Sharing a running app's view with an agent.

``vtui --share TRACE`` (or ``S`` in the app) makes the app listen on a unix socket in a folder only
its user can open (``rundir``); ``vtui mcp --attach [PID]`` is an MCP server on stdio that forwards
each tool call there as one JSON line (``wire``) and returns the app's one-line reply. In the app,
``share`` owns the socket (``server``) and the person's side (status words, the agent's log line,
esc); ``view_tools`` carries each request out through the same actions the keys use.
"""
