"""LLM providers: protocol translation (openai, anthropic) apart from connection (client)."""
