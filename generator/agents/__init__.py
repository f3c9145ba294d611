"""`digest mcp`: the archive served to agents over the Model Context Protocol (the `mcp` extra)."""
