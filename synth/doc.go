// Package synth repairs a draft contract until a cold replay passes: it classifies each failure, proposes a minimal delta (rules first, an LLM when asked), rejects any delta that weakens verification, and replays.
package synth
