"""The setting flags as conductor/config/flags.py makes them, written out: a
command's `--help` builds its flags from this table without importing the
declarations (pydantic, the methods). Generated; after changing a setting run
`python -c 'from conductor.config.flags import write_table; write_table()'`
(tests/conductor/cli/test_help_fast.py checks it matches)."""

# (section, path, flag, kind, metavar, help), one setting a line
# fmt: off
FLAGS: tuple[tuple[str, str, str, str, str | None, str], ...] = (
    ('', 'model', '--model', 'text', 'NAME', 'Meta model: `auto` (by the keys set), `demo`, `anthropic:NAME`, `openai:NAME` (`NAME@URL` for a server of its own). (default: auto)'),
    ('', 'expert_model', '--expert-model', 'text', 'NAME', 'Expert model; empty means the same as the meta model. (default: empty)'),
    ('', 'sandbox', '--sandbox', 'choice', '{auto,docker,bwrap,subprocess}', 'Sandbox backend: `auto` (docker, else bwrap), docker, bwrap, subprocess (unsafe: only by name). (default: auto)'),
    ('', 'sandbox_cells', '--sandbox-cells', 'int', 'N', 'Sandboxes a batch keeps alive at once, shared by its items in flight; 0 sizes the pool to this machine (two per core, within half its memory). (a whole number from 0 to 4096; default: 0)'),
    ('', 'notebook', '--notebook', 'text', 'PATH', 'Notebook database; empty means notebook.db in the data directory. (default: empty)'),
    ('', 'recall', '--recall', 'bool', None, 'Put notes from the notebook into the first meta turn. (default: true)'),
    ('', 'learn', '--learn', 'bool', None, 'Distill each finished run into the notebook. (default: true)'),
    ('', 'model_timeout_s', '--model-timeout', 'float', 'SECONDS', 'Seconds a model call may go without a byte from the server before it is retried. (a number more than 0 and at most 3600; default: 60)'),
    ('', 'method', '--method', 'choice', '{standard,zero-shot-cot,expert-static,expert-dynamic,multipersona,meta-no-python,meta}', "How a run asks the model: `meta` (meta-prompting; with `python` off, `meta-no-python`) or a baseline of the paper's Table 1 (docs/methods.md). (default: meta)"),
    ('run', 'run.max_rounds', '--max-rounds', 'int', 'N', 'Meta-model turns at most; the run ends without an answer past it. (a whole number from 1 to 1000; default: 15)'),
    ('run', 'run.last_round_notice', '--last-round-notice', 'bool', None, 'Tell the meta model, in the round before the limit, that it must answer now. (default: true)'),
    ('run', 'run.last_round_notice_at', '--last-round-notice-at', 'int', 'ROUND', 'Round whose user message carries that notice; unset: the round before the limit. (a whole number, 1 or more, or unset; default: unset)'),
    ('run', 'run.max_tokens', '--max-tokens', 'int', 'N', 'Total tokens (meta and experts, input and output) a run may spend. (a whole number, 1 or more, or unset; default: unset)'),
    ('run', 'run.max_cost_usd', '--max-cost', 'float', 'DOLLARS', 'Dollars a run may spend, by the price table. (a number more than 0, or unset; default: unset)'),
    ('run', 'run.max_wall_s', '--max-wall', 'float', 'SECONDS', 'Seconds a run may take (default 20 minutes: a slow local model cannot run on for hours); `--max-wall none` for no limit. (a number more than 0, or unset; default: 1200)'),
    ('run', 'run.python', '--python', 'bool', None, 'Offer Expert Python and run its code in the sandbox. (default: true)'),
    ('run', 'run.python_timeout_s', '--python-timeout', 'float', 'SECONDS', 'Seconds each sandboxed program may run. (a number more than 0 and at most 3600; default: 10)'),
    ('run', 'run.output_cap_chars', '--output-cap', 'int', 'CHARS', 'Characters of each stream of program output shown to the meta model. (a whole number, 1 or more; default: 4000)'),
    ('run', 'run.expert_reply_cap_chars', '--expert-reply-cap', 'int', 'CHARS', "Characters of an expert's reply shown to the meta model. (a whole number, 1 or more; default: 20000)"),
    ('run', 'run.parallel_experts', '--parallel-experts', 'bool', None, 'Dispatch several calls of one turn concurrently. (default: true)'),
    ('run', 'run.calls_and_answer', '--calls-and-answer', 'choice', '{calls_first,answer}', 'A turn with calls and an answer: `calls_first` runs the calls (as the paper), `answer` takes the answer. (default: calls_first)'),
    ('run', 'run.check_before_answer', '--check-before-answer', 'bool', None, 'Send a final answer given before any expert was consulted back once, asking for one check first (for small models that answer in round 1 alone; measured in docs/methods.md). (default: false)'),
    ('run', 'run.protocol', '--protocol', 'choice', '{auto,text,tools,grammar}', "How the meta model's calls and answer are carried: `text` (`Expert X:` and `>> FINAL ANSWER:`, as the paper), `tools` (native tool calls), `grammar` (the text held to its forms by llama-server's grammar), `auto` (tools where the endpoint takes them, else text; docs/models.md). (default: auto)"),
    ('run', 'run.consult_first', '--consult-first', 'bool', None, 'Round 1 cannot end the run: with tool calls it offers no final-answer tool, with the grammar carrier its grammar allows only expert calls (plain text cannot enforce it); a checked program the notebook handed over counts as consulted. (default: true)'),
    ('run', 'run.ready_call', '--ready-call', 'bool', None, 'An answer given in a round that withholds it (`consult_first`) is not sent back: the conductor makes the ready call the first message showed (the question, to Expert Python or, without Python, to an expert) and the model reads that reply next round. For servers that do not enforce tool_choice. (default: true)'),
    ('run', 'run.answer_once_checked', '--answer-once-checked', 'bool', None, "Once a line a program printed passes the task's own check, the rounds after offer only the answer: with tool calls only final_answer and answer_with_checked_result, with the grammar carrier only the answer form (plain text cannot enforce it). The last round of those carriers offers only the answer either way. (default: true)"),
    ('run', 'run.answer_check', '--answer-check', 'bool', None, "A final answer the task's own check rejects (one that needs no known answer, e.g. Game of 24's arithmetic) goes back to the model once with the reason before it is taken (meta-prompting). (default: true)"),
    ('run', 'run.python_check_retries', '--python-check-retries', 'int', 'N', "Where the task's own check applies, an Expert Python program that fails, or whose printed lines include one the check rejects and none it accepts, goes back to the expert with the reason, and it writes the program again, up to N times per call (0: never). (a whole number from 0 to 5; default: 1)"),
    ('run', 'run.python_retry_temperature', '--python-retry-temperature', 'float', 'T', 'Sampling temperature of the request for a corrected program (a program sent back): at temperature 0 a small model sent the same program back. (a number from 0 to 2; default: 0.7)'),
    ('run', 'run.prompt_cache', '--prompt-cache', 'bool', None, 'Ask the provider to cache the growing meta history. (default: true)'),
    ('run', 'run.expert_max_tokens', '--expert-max-tokens', 'int', 'N', 'Output token cap per expert reply; a reply cut there is marked truncated. (a whole number, 1 or more; default: 4096)'),
    ('run', 'run.meta_max_tokens', '--meta-max-tokens', 'int', 'N', 'Output token cap per meta-model turn; a turn cut there is never acted on. (a whole number, 1 or more; default: 4096)'),
)
# fmt: on
