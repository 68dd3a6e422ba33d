"""Retrieval: chunking, the one upsert path, hybrid search, relevance, label suggestion."""
