"""How the meta model's protocol is carried: as text (`Expert X:` and `>> FINAL ANSWER:`)
or as native tool calls, and which of the two a run uses (`choice`)."""
