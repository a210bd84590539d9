"""The notebook's migrations as the code before sqlite-utils declared them wrote them.

Notebooks made then hold exactly this schema (their `_migrations` name these steps), so
tests build one from it to show such a notebook opens and migrates as before, and that
a notebook made now has the same shape. Frozen: never edit.
"""

M001_NOTEBOOK = """CREATE TABLE task_types (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    members INTEGER NOT NULL DEFAULT 0,
    base REAL NOT NULL DEFAULT 0,
    template_questions INTEGER NOT NULL DEFAULT 0,
    suggestions TEXT NOT NULL DEFAULT '[]',
    procedure TEXT NOT NULL DEFAULT '[]',
    inherited_from TEXT,
    experience_version INTEGER NOT NULL DEFAULT 0,
    notes_since_induction INTEGER NOT NULL DEFAULT 0,
    runs INTEGER NOT NULL DEFAULT 0,
    correct INTEGER NOT NULL DEFAULT 0,
    wrong INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    retired INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE type_terms (
    type_id TEXT NOT NULL,
    term TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (type_id, term)
) WITHOUT ROWID;
CREATE INDEX type_terms_by_count ON type_terms (type_id, count);
CREATE INDEX type_terms_by_term ON type_terms (term);
CREATE TABLE type_template (
    term TEXT NOT NULL,
    type_id TEXT NOT NULL,
    frequency REAL NOT NULL,
    delta REAL NOT NULL,
    PRIMARY KEY (term, type_id)
) WITHOUT ROWID;
CREATE INDEX type_template_by_type ON type_template (type_id);
CREATE TABLE term_df (
    term TEXT PRIMARY KEY,
    df INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE notes (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    type_id TEXT,
    kind TEXT NOT NULL,
    key TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL DEFAULT '',
    code TEXT NOT NULL DEFAULT '',
    answer TEXT,
    source_run TEXT,
    source_question TEXT NOT NULL DEFAULT '',
    source_task TEXT NOT NULL DEFAULT '',
    verification TEXT NOT NULL DEFAULT 'none',
    outcome TEXT NOT NULL DEFAULT 'unverified',
    confidence REAL NOT NULL DEFAULT 0.5,
    helpful INTEGER NOT NULL DEFAULT 0,
    harmful INTEGER NOT NULL DEFAULT 0,
    uses INTEGER NOT NULL DEFAULT 0,
    support INTEGER NOT NULL DEFAULT 1,
    content_hash TEXT NOT NULL,
    near_hash TEXT NOT NULL,
    retired INTEGER NOT NULL DEFAULT 0,
    retired_reason TEXT,
    author TEXT NOT NULL DEFAULT 'distill',
    terms TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX notes_by_type ON notes (type_id, retired, kind);
CREATE INDEX notes_by_hash ON notes (content_hash);
CREATE INDEX notes_by_near ON notes (type_id, kind, near_hash);
CREATE INDEX notes_by_run ON notes (source_run);
CREATE INDEX notes_by_trust ON notes (
    type_id, retired, (helpful - harmful) DESC, support DESC, seq DESC
);
CREATE VIRTUAL TABLE notes_fts USING fts5(
    terms, content='notes', content_rowid='seq',
    tokenize="unicode61 remove_diacritics 0 tokenchars '_'"
);
CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN
    INSERT INTO notes_fts (rowid, terms) VALUES (new.seq, new.terms);
END;
CREATE TRIGGER notes_ad AFTER DELETE ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, terms) VALUES ('delete', old.seq, old.terms);
END;
CREATE TRIGGER notes_au AFTER UPDATE OF terms ON notes BEGIN
    INSERT INTO notes_fts (notes_fts, rowid, terms) VALUES ('delete', old.seq, old.terms);
    INSERT INTO notes_fts (rowid, terms) VALUES (new.seq, new.terms);
END;
CREATE TABLE note_history (
    id INTEGER PRIMARY KEY,
    note_id TEXT NOT NULL,
    at REAL NOT NULL,
    action TEXT NOT NULL,
    run_id TEXT,
    detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX note_history_by_note ON note_history (note_id);
CREATE INDEX note_history_by_run ON note_history (run_id);
CREATE TABLE type_history (
    id INTEGER PRIMARY KEY,
    type_id TEXT NOT NULL,
    at REAL NOT NULL,
    action TEXT NOT NULL,
    run_id TEXT,
    detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX type_history_by_type ON type_history (type_id);
CREATE TABLE recalls (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    note_id TEXT NOT NULL,
    rank INTEGER NOT NULL,
    score REAL NOT NULL,
    relevance REAL NOT NULL,
    outcome TEXT,
    at REAL NOT NULL
);
CREATE INDEX recalls_by_note ON recalls (note_id);
CREATE INDEX recalls_by_run ON recalls (run_id);
CREATE TABLE distilled_runs (
    run_id TEXT PRIMARY KEY,
    at REAL NOT NULL,
    question TEXT NOT NULL,
    task TEXT NOT NULL DEFAULT '',
    type_id TEXT,
    status TEXT NOT NULL DEFAULT '',
    answer TEXT,
    target TEXT,
    verification TEXT NOT NULL,
    outcome TEXT NOT NULL,
    notes_written INTEGER NOT NULL DEFAULT 0,
    notes_merged INTEGER NOT NULL DEFAULT 0,
    notes_skipped INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE notebook_meta (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO notebook_meta (key, value) VALUES ('questions', 0);
"""

M002_TOOLS_AND_PROBLEMS = """CREATE TABLE tools (
    note_id TEXT PRIMARY KEY,
    type_id TEXT,
    task TEXT NOT NULL DEFAULT '',
    spec TEXT NOT NULL,
    tests INTEGER NOT NULL DEFAULT 0,
    passes INTEGER NOT NULL DEFAULT 0,
    tested_on TEXT NOT NULL DEFAULT '[]',
    updated_at REAL NOT NULL
);
CREATE INDEX tools_by_type ON tools (type_id);
ALTER TABLE distilled_runs ADD COLUMN question_hash TEXT NOT NULL DEFAULT '';
CREATE INDEX distilled_by_question ON distilled_runs (question_hash);
ALTER TABLE notes ADD COLUMN question_hash TEXT NOT NULL DEFAULT '';
CREATE INDEX notes_by_question ON notes (question_hash);
"""

M003_NOTE_VECTORS = """CREATE TABLE note_vectors (
    note_id TEXT PRIMARY KEY,
    vec BLOB NOT NULL
);
"""
