"""`conductor serve`: conductor behind an OpenAI-compatible HTTP endpoint.

A chat request becomes one conductor run, started through `conductor.session` like any
other, so it is recorded, learned from and listed by `conductor runs list`. The model
name a client asks for chooses the method and the underlying model
(`conductor:meta@demo`); the run's final answer is the reply; its progress streams as
reasoning deltas; the usage is the whole run's.

- `names.py`: the model ids served and what one means.
- `limits.py`: a request's limits, lowered from the configured ones, never raised.
- `conversation.py`: a request's messages as the question of one run.
- `runs.py`: a run in a worker thread, its events handed to the event loop.
- `wire.py`: the OpenAI JSON shapes of replies, chunks and errors.
- `body.py`: a request body as a JSON object, within a depth.
- `guard.py`: whom a server answers (Host, Origin, content type, key, body size), an
  ASGI middleware that `mcp --http` is served behind too.
- `connections.py`: connections capped in number, and a deadline for their headers.
- `app.py`: the HTTP application (starlette); `server.py`: binding it (uvicorn).
"""
