"""LangGraph workflows. Nodes call domain and service code; only the executor gate writes."""
