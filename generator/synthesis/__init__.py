"""Talking to the model: prompts, context planning, the LLM client and the run."""
