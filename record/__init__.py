"""The record: how a run is kept and read. One fold of events into a run (`fold`), the
transcript reader (with the one decoder of a line) and writer, the lazy pages of a long
transcript, repair of cut transcripts, the published-record reader and its conversion
into events, the audit and its findings, and the storage policy (data paths, numbered
SQLite migrations, full-text search helpers). Everything that reads a run reads it
through here.
"""
