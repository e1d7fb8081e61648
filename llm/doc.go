// Package llm asks an OpenAI-compatible endpoint for the contract revisions the rules cannot decide, with token accounting, retries and a response cache.
package llm
