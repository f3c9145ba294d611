"""Fetching papers: arXiv's API and PDFs, and the text extracted from them."""
