"""Research Digest: turn an arXiv query into a browsable, LLM-synthesized static site."""

__version__ = "0.1.0"
