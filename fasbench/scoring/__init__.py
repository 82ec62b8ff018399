"""Layer 3, scoring an episode: rewards, the LLM judge, localization and ContextBench scores, process measures."""
