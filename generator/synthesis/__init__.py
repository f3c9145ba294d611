"""The synthesis stage: prompts, context planning, the LLM client and the run."""
