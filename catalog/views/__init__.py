"""Catalog screens: products, schemas, uploads (one module each)."""
