"""The record: how a run is kept and read. One fold of events into a run (`fold`), the
transcript reader and writer, repair of cut transcripts, the published-record reader,
the audit's findings, and the storage policy (data paths, numbered SQLite migrations,
full-text search helpers). Everything that reads a run reads it through here.
"""
