"""`conductor mcp`: conductor's runs and notebook as Model Context Protocol tools.

- `tools.py`: what each tool does, plain functions over the session, the runs index and
  the notebook (testable without the protocol).
- `server.py`: those functions as tools of an MCP server (the official `mcp` SDK, the
  `mcp` extra), over stdio or streamable HTTP. The read-only tools are marked so.
"""
