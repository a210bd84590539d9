"""transcripts"""
