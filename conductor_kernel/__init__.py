"""The kernel: the meta-prompting protocol, the event model, the interfaces, the prompts,
the loop and the fresh-eyes expert call.

It imports no provider, sandbox, store or UI code: the implementations (`experts`,
`sandbox`, `transcripts`, `lessons`) plug in through `conductor_kernel.interfaces`, and
the application (`conductor`, `tui`) wires them together. See docs/architecture.md.
"""
