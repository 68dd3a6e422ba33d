"""Evaluations that run the product's own ingestion and search code on a scratch tenant."""
